"""Driving pairs, in wings: the engine (`engine/`: its front and the parts it owns), one run
of a pair (`run/`), a bisection (`bisect/`) and events without hosts (`replay/`), over what they
share flat here: the ports the engine is built from (`ports`), the event bus, phases, plans,
the alternation, a session's lifecycle and the headless run. Each wing stands on the ones below
it (pyproject.toml's contract), no chain of imports between these modules is longer than four.
"""
