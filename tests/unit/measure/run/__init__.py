"""Unit tests of abtui.measure.run."""
