"""`abtui export SESSION --format md|text|csv|json|plot [--out FILE]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from abtui.commands.sessions import add_sessions_dir

if TYPE_CHECKING:
    from abtui.sessions.session import Session


def add_units(parser: argparse.ArgumentParser, default: str | None = "bits") -> None:
    """--units, as `abtui export` and `abtui compare` take it (the Markdown tables' rates);
    export's default (None) leaves a procedure's first table in its community's unit."""
    own = "" if default else (" (default: bits, except a procedure's first table, which "
                              "keeps the unit its posts use: softirq-crypto's MB/s)")
    parser.add_argument("--units", choices=("bits", "bytes"), default=default,
                        help="md: rates in bits per second (Gbit/s, Mbit/s: iperf3's) or "
                             "bytes (MB/s: 10^6 bytes per second); each table picks the unit "
                             f"that keeps 3 significant digits{own}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION", help="a session file, or a session name")
    parser.add_argument("--format", choices=("md", "text", "html", "csv", "json", "plot"),
                        default="md",
                        help="md: the review report (default); text: the same for a "
                             "plain-text mail, 78 columns, the answer first; html: the same "
                             "as one page, with the differential flame graphs of a profiled "
                             "alternation; csv, json: the data; plot: the throughput chart")
    parser.add_argument("--out", metavar="FILE",
                        help="write here instead of stdout (plot: .png or .svg for an image, "
                             ".html or .txt for the text chart)")
    parser.add_argument("--table", choices=("intervals", "verdicts", "bisect", "why"),
                        default="intervals",
                        help="csv: one row per interval (default), the alternation's "
                             "verdict table (pair, values compared, Δ with its interval, "
                             "verdict, blocks, seed), or a bisection's steps (candidate, "
                             "verdict, Δ with its interval, blocks, boots), or what a "
                             "profiled alternation found moved (pair, host, frame, kind, Δ "
                             "in points with its interval)")
    add_units(parser, default=None)
    parser.add_argument("--base-pair", metavar="LABEL",
                        help="pair the deltas are taken against (default: the profile's "
                             "base_pair, else the first)")
    parser.add_argument("--base-config", metavar="CONFIG",
                        help="configuration other configurations are compared with, as "
                             "printed, e.g. 'tcp_wmem=4096 16384 65536' (default: the first)")
    add_sessions_dir(parser)


def run(args: argparse.Namespace) -> int:
    from abtui.core.errors import BadInput
    from abtui.sessions import paths
    from abtui.sessions.session import Session

    session = Session.load(paths.find_session(args.session, args.sessions_dir))
    if args.base_pair and args.base_pair not in session.pairs:
        raise BadInput(f"--base-pair {args.base_pair!r}: the session's pairs are "
                       f"{', '.join(session.pairs) or 'none'}")
    if args.table != "intervals" and args.format != "csv":
        raise BadInput(f"--table {args.table} goes with --format csv (md, text and json lead "
                       "with the alternation's and the bisection's tables already)")
    out = Path(args.out) if args.out else None
    if args.format == "plot":
        from abtui.reports.plots import save_chart, throughput_chart

        if out is not None:
            save_chart(session, out)
        else:
            from abtui.core.text import own_stream

            # on a terminal, in colour: escapes of abtui's own, its labels spelled out
            color = sys.stdout.isatty()
            print(throughput_chart(session, color=color) or "(no intervals)",
                  file=own_stream(sys.stdout) if color else sys.stdout)
        return 0
    from abtui.reports.exports import render

    text = render(session, args.format, base=args.base_pair, base_config=args.base_config,
                  units=args.units) if args.table == "intervals" else _verdicts(session) \
        if args.table == "verdicts" else _why(session) if args.table == "why" \
        else _bisect(session)
    if out is None:
        sys.stdout.write(text)
    else:
        from abtui.core.files import write_atomic
        from abtui.reports.exports import as_file

        write_atomic(out, as_file(text, args.format))
    return 0


def _verdicts(session: Session) -> str:
    """`--table verdicts`: the alternation's verdict table as CSV."""
    from abtui.reports.alternation import to_csv

    return to_csv(session)


def _why(session: Session) -> str:
    """`--table why`: the profiles' rows as CSV."""
    import csv
    import io

    from abtui.reports.why_report import csv_rows

    head, rows = csv_rows(session)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(head)
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return buf.getvalue()


def _bisect(session: Session) -> str:
    """`--table bisect`: a bisection's steps as CSV."""
    from abtui.reports.bisection import to_csv

    return to_csv(session)
