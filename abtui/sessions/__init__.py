"""Recorded sessions: the crash-safe journal, the session rebuilt from it, imported logs."""
