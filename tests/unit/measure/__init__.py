"""Unit tests of abtui.measure."""
