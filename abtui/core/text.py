"""Text that came from elsewhere (a host, a file, a profile), made safe to print on one line.

A host's kernel string, a knob's value, a watch's output or an error message may hold terminal
escape sequences, line breaks or bidi overrides; shown as they are, a terminal would act on
them. `visible` spells every such character out (ESC as \\x1b), so what is shown is exactly what
was said, on one line. Markup is the display's concern: the console escapes it separately.
"""

from __future__ import annotations

# What every screen and export prints for a figure nobody measured (never 0: a 0 reads as a
# measurement); CSV leaves the cell empty and JSON writes null instead.
UNKNOWN = "—"


def visible(text: str) -> str:
    """`text` with every non-printable character (controls, format characters, line
    separators) written as a \\xNN / \\uNNNN escape, except a tab, shown as one space (Linux
    separates a sysctl's numbers with tabs); printable text is returned as is."""
    if text.isprintable():
        return text
    text = text.replace("\t", " ")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else
                   f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
                   for c in text)
