"""Benchmarks (`make bench`): each bench_*.py module exposes `RECORDS`, a list of callables
(declared with tests.bench.judge.measures) that return one or more records {"name", "value",
"unit", "note"}; the runner (__main__.py) judges each against its budget in
tests.bench.judge.BUDGETS, the table docs/performance.md describes."""
