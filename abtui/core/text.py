"""Text that came from elsewhere (a host, a file, a profile), made safe to print.

A host's kernel string, a knob's value, a watch's output, iperf3's error message or an imported
log may hold terminal control sequences (ESC, CSI, OSC: a window title, a cleared screen, a
clipboard write by OSC 52), a BEL, C1 controls (U+009B is a CSI on its own), carriage returns,
line breaks or bidi overrides; shown as they are, a terminal would act on them, and a report
would hide or reorder what was said. `visible` spells every such character out (ESC as \\x1b),
so what is shown is exactly what was said. It is the one function every path uses: the
console's widgets, the commands' lines (`spelled_out`: a command's stdout and stderr), and the
files a person opens (the md, csv, html and text reports, the plots' labels). JSON keeps the
very text for its readers with no control in the file: exports escape every non-ASCII
character (`\\u009b`), the session journal every non-printable one (`visible_json`). Markup
is the display's concern: the console escapes it separately.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, cast

# What every screen and export prints for a figure nobody measured (never 0: a 0 reads as a
# measurement); CSV leaves the cell empty and JSON writes null instead.
UNKNOWN = "—"


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every non-printable character (C0 and C1 controls, DEL, format characters
    such as bidi overrides, line and paragraph separators, lone surrogates) written as a
    \\xNN / \\uNNNN escape, except a tab, shown as one space (Linux separates a sysctl's
    numbers with tabs); printable text is returned as is. With `lines`, the text's line breaks
    (\\n) are kept and each line is spelled out: a report's or a command's output."""
    if lines and "\n" in text:
        return "\n".join(map(visible, text.split("\n")))
    if text.isprintable():
        return text
    text = text.replace("\t", " ")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else
                   f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
                   for c in text)


def visible_json(encoded: str) -> str:
    """JSON text, as an encoder without `ensure_ascii` writes it, with every non-printable
    character (C1 controls, bidi overrides, separators, lone surrogates; the encoder escapes
    C0 itself) written as its \\uXXXX escape: the same data for a reader, no control for a
    terminal that shows the file, printable non-ASCII text kept as it is. Such characters
    are only ever inside the JSON's strings."""
    if encoded.isascii() or encoded.isprintable():
        return encoded
    return "".join(c if c.isprintable() else _json_escape(ord(c)) for c in encoded)


def _json_escape(n: int) -> str:
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000  # beyond the BMP: a surrogate pair, as JSON spells it
    return f"\\u{0xd800 + (n >> 10):04x}\\u{0xdc00 + (n & 0x3ff):04x}"


class SpelledOut:
    """A text stream's stand-in that writes through `visible(lines=True)`: what a command
    prints reaches the terminal, or the file its output is sent to, with no control character
    in it. `own` is the stream itself, for text abtui drew with escapes of its own (the
    coloured chart, whose labels reports/plots.py spells out)."""

    def __init__(self, own: TextIO) -> None:
        self.own = own

    def write(self, text: str) -> int:
        self.own.write(visible(text, lines=True))
        return len(text)

    def writelines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own, name)  # flush, isatty, fileno, encoding: the stream's own


@contextlib.contextmanager
def spelled_out() -> Iterator[None]:
    """sys.stdout and sys.stderr write through `visible` while it lasts: every command but
    the console's (whose widgets spell host text themselves) runs in it."""
    saved = sys.stdout, sys.stderr
    # a stream that is closed (`>&-`) is None, which print() skips: it stays None
    if sys.stdout is not None:
        sys.stdout = cast(TextIO, SpelledOut(sys.stdout))
    if sys.stderr is not None:
        sys.stderr = cast(TextIO, SpelledOut(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def own_stream(stream: TextIO) -> TextIO:
    """The stream under a `SpelledOut` (itself when it is not one): where abtui writes text
    with escapes it made itself."""
    return cast(TextIO, stream.own) if isinstance(stream, SpelledOut) else stream
