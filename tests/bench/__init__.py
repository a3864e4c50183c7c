"""Benchmarks (`make bench`): each module here exposes `RECORDS`, a list of callables that
return one or more records {"name", "value", "unit", "budget", "note"} (DESIGN.md §5)."""
