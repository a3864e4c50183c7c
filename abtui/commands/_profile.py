"""Loading a profile for the remote commands.

Uses `abtui.profile.load_profile` when it exists (the profile module, built in parallel);
until then a minimal loader for the lab.toml format stands in. Swap: delete `_minimal`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from abtui.errors import BadInput
from abtui.model import Knob, KnobKind, Pair, Profile, Scope


def load_profile(path: str | Path) -> Profile:
    try:
        from abtui.profile import load_profile as real
    except (ImportError, AttributeError):
        return _minimal(Path(path))
    return real(path)


def _minimal(path: Path) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
        doc = tomllib.loads(text)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the profile ({exc.strerror or exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not valid TOML ({exc})") from exc
    try:
        head: dict[str, Any] = doc.get("profile", {})
        pairs = [Pair(label=str(p["label"]), sender=str(p["sender"]),
                      receiver=str(p["receiver"]), target=str(p["target"]),
                      sender_device=p.get("sender_device"),
                      receiver_device=p.get("receiver_device"))
                 for p in doc.get("pairs", [])]
        knobs = [Knob(name=str(k["name"]), kind=KnobKind(k["kind"]),
                      values=tuple(str(v) for v in k.get("values", ())),
                      key=str(k.get("key", "")), device=k.get("device"),
                      scope=Scope(k.get("scope", "both")),
                      pairs=tuple(k.get("pairs", ())), binding=k.get("binding"),
                      os_keys=dict(k.get("os_keys", {})))
                 for k in doc.get("knobs", [])]
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise BadInput(f"{path}: bad profile ({type(exc).__name__}: {exc})") from exc
    if not pairs:
        raise BadInput(f"{path}: no [[pairs]] in the profile")
    return Profile(name=str(head.get("name", path.stem)), pairs=pairs, knobs=knobs,
                   ssh_config=head.get("ssh_config"), known_hosts=head.get("known_hosts"),
                   accept_new_host_keys=bool(head.get("accept_new_host_keys", False)),
                   sudo=bool(head.get("sudo", False)), source_path=str(path),
                   source_text=text)
