"""Unit tests of abtui.measure.engine."""
