"""The console's model: what it shows, folded from events (state, each pair's record, the
phase table's rows), the one scheduler of its repaints (pacing) and its bench probe. Plain
Python: nothing here imports Textual (a lint-imports contract keeps it so)."""
