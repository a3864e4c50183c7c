"""What every command's `--help` ends with: one worked example and its exit codes.

Kept as plain text apart from the commands' modules so `abtui COMMAND --help` shows it without
importing anything else, and so a test walks them all (tests/unit/commands/test_help.py)."""

from __future__ import annotations

from typing import Any

# exit codes shared by most commands (abtui.core.errors)
_BAD = "  2  bad input (profile, arguments, files): one line says what and where"

EPILOGS: dict[str, str] = {
    "tui": """\
example:
  abtui tui profiles/example.toml     # the console on the profile's hosts
  abtui tui --replay               # a synthetic session, no hosts needed

exit codes:
  0  the console closed, every host set back
  1  a host could not be set back: `abtui recover` says what is left
""" + _BAD,
    "demo": """\
example:
  abtui demo --pairs 2             # two lab pairs and the console on them

exit codes:
  0  the console closed, every host set back
  1  the lab could not come up, or a host could not be set back
""" + _BAD,
    "lab": """\
example:
  abtui lab up --pairs 2 && abtui lab status --json

exit codes:
  0  done (status: every host up)
  1  status: a host is down (its line says why)
""" + _BAD,
    "check": """\
example:
  abtui check profiles/example.toml  # one line per finding

exit codes:
  0  every host, program, knob and tunnel is usable
  1  a finding failed (its line says what to do)
""" + _BAD,
    "run": """\
example:
  abtui run profiles/example.toml --headless --lab --duration 10

exit codes:
  0  the plan ran (an alternation: it reached its verdict)
  1  a run failed, or the hosts could not be set back
""" + _BAD,
    "recover": """\
example:
  abtui recover --dry-run          # what is left on hosts, changed nowhere

exit codes:
  0  everything set back or forgotten (or nothing was pending)
  1  something could not be set back (the journal keeps it: run again
     later), or an entry could not be used (said and skipped)
""" + _BAD,
    "import": """\
example:
  abtui import run1.txt ping1.txt --json > results.json

exit codes:
  0  every file parsed
  1  a file records a failed test (its "error" says iperf3's message)
""" + _BAD,
    "sessions": """\
example:
  abtui sessions --json            # name, profile, date, pairs, duration

exit codes:
  0  listed (unreadable or cut-short files are listed after, with why)
""" + _BAD,
    "export": """\
example:
  abtui export lab-2026-12-07 --format text > mail.txt   # a report for a mail

exit codes:
  0  written
""" + _BAD,
    "compare": """\
example:
  abtui compare before after --format md > compare.md

exit codes:
  0  compared (with --fail-on-regression: see `abtui gate --help`)
  1  with --fail-on-regression: a regression
""" + _BAD + """
  3  with --fail-on-regression: inconclusive, or nothing could be tested""",
    "gate": """\
example:
  abtui gate before after --threshold 5%  # exit 1 when `after` lost over 5 %

exit codes:
  0  every configuration tested passed (its interval lies above -PCT)
  1  a regression beyond -PCT (false discovery rate controlled)
""" + _BAD + """
  3  inconclusive: a case had too few runs or its interval straddles -PCT,
     or nothing could be tested (--allow-inconclusive: 0 when nothing regressed)""",
    "view": """\
example:
  abtui view --follow ~/.local/state/abtui/sessions/NAME.abtui.jsonl
  (another abtui records it; this console only shows it: knob keys are refused)

exit codes:
  0  the console closed (nothing on any host was changed)
""" + _BAD,
    "serve": """\
example:
  abtui serve NAME.abtui.jsonl --port 8049   # then open http://127.0.0.1:8049
  (loopback only; ssh -L 8049:127.0.0.1:8049 HOST lets a reviewer elsewhere in)

exit codes:
  0  stopped (ctrl+c or SIGTERM)
""" + _BAD + """
     (an address or port it cannot listen on, too)""",
    "bisect": """\
example:
  abtui bisect mine.toml --knob kernel --good 6.1.170 --bad 6.1.192 --headless

exit codes:
  0  the bisection named the candidate that made it worse
  1  a run failed, or the hosts could not be set back
""" + _BAD + """
  3  undecided: the steps could not tell within --max-blocks""",
}

# `abtui lab ACTION --help`
EPILOGS.update({
    "lab up": """\
example:
  abtui lab up --pairs 2           # 4 namespace hosts, each with its own sshd
  # pair A's sender a 32-bit ARM guest booting two builds, its IPsec peer x86:
  abtui lab up --pairs 1 --kernel A=linux-image-6.1.0-57-amd64 --clock icount \\
      --arm-build before=BUILD_FOLDER --arm-build after=BUILD_FOLDER \\
      --arm-crypto-priority 'cryptd(ghash-ce-sync)=200'  # gcm on ghash-ce

exit codes:
  0  the lab is up (again: idempotent)
  1  a host could not be brought up (the line says which and why)
""" + _BAD,
    "lab down": """\
example:
  abtui lab down                   # refused while another command uses the lab

exit codes:
  0  everything the lab made is gone
  1  something could not be removed, or the lab is in use
""" + _BAD,
    "lab status": """\
example:
  abtui lab status --json | jq '.hosts[] | select(.ok | not)'

exit codes:
  0  every host is up
  1  a host is down: its line says why
""" + _BAD,
    "lab boot": """\
example:
  abtui lab boot vm-a1 vm-a2 linux-image-6.1.0-57-amd64 --method kexec
  abtui lab boot lab-a-snd after   # the ARM host, power-cycled onto its build

exit codes:
  0  the hosts run KERNEL
  1  the switch failed (the hosts are back on their build)
""" + _BAD,
})


def sub_help(name: str) -> dict[str, Any]:
    """A subcommand's parser keywords: its epilog, laid out as written."""
    import argparse

    return {"epilog": EPILOGS.get(name), "formatter_class": argparse.RawDescriptionHelpFormatter}
