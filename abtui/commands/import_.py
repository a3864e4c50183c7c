"""`abtui import FILE... [--json]`: parse saved iperf3 (text, -J, --json-stream) and ping outputs.

Every file is read before anything is printed, so a missing one fails alone (exit 2) and
`--json` never prints half a document. Exit 1 when a file records a failed test.
"""

from __future__ import annotations

import argparse
import json

from abtui.core.errors import EXIT_FAILED, EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from abtui.commands.sessions import add_sessions_dir
    from abtui.sessions import importing

    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="saved iperf3 or ping output ('-' reads stdin)")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON document {"results": [...]} on stdout')
    importing.add_arguments(parser)
    add_sessions_dir(parser)


def run(args: argparse.Namespace) -> int:
    from abtui.core.errors import BadInput
    from abtui.parse.importer import import_text, read_source

    if args.session:
        from abtui.sessions import importing

        return importing.run(
            args, lambda p: import_text(read_source(str(p)), str(p)).to_json())
    if args.pair:
        raise BadInput("--pair needs --session OUT (the session to write)")
    if not args.files:
        raise BadInput("abtui import: give at least one FILE (or --session OUT --pair ...)")
    texts = [(path, read_source(path)) for path in args.files]
    results = [import_text(text, path) for path, text in texts]
    if args.json:
        doc = {"results": [r.to_json() for r in results]}
        print(json.dumps(doc, indent=2, allow_nan=False))
    else:
        from abtui.parse.report import describe

        for r in results:
            print("\n".join(describe(r)))
    return EXIT_FAILED if any(r.error for r in results) else EXIT_OK
