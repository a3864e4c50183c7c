"""Folded stacks (FlameGraph's format: `thread;root;…;leaf` with a sample count) as the
session keeps them: the lines zlib-compressed and base64-encoded into one JSON string, a
window's few kilobytes of text in a fifth of the space. Reading never raises: a damaged or
hostile string reads as no stacks, and no string inflates past MAX_TEXT."""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterable, Mapping

Stacks = dict[str, int]
MAX_TEXT = 16 * 1024 * 1024  # bytes of folded text one packed string may inflate to


def pack(stacks: Mapping[str, int]) -> str:
    text = "\n".join(f"{count} {stack}" for stack, count in sorted(stacks.items()) if count > 0)
    return base64.b64encode(zlib.compress(text.encode(), 6)).decode("ascii")


def unpack(packed: object) -> Stacks:
    if not isinstance(packed, str) or not packed:
        return {}
    try:
        raw = base64.b64decode(packed.encode("ascii"), validate=True)
        inflater = zlib.decompressobj()
        text = inflater.decompress(raw, MAX_TEXT)
        if inflater.unconsumed_tail:
            return {}  # larger than any window or stretch abtui writes: not trusted
    except (binascii.Error, zlib.error, UnicodeEncodeError, ValueError):
        return {}
    out: Stacks = {}
    for line in text.decode("utf-8", "replace").splitlines():
        count, _, stack = line.partition(" ")
        if count.isdigit() and stack:
            out[stack] = out.get(stack, 0) + int(count)
    return out


def merge(into: Stacks, more: Mapping[str, int]) -> Stacks:
    for stack, count in more.items():
        into[stack] = into.get(stack, 0) + count
    return into


def merged(parts: Iterable[Mapping[str, int]]) -> Stacks:
    out: Stacks = {}
    for part in parts:
        merge(out, part)
    return out
