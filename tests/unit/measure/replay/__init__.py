"""Unit tests of abtui.measure.replay."""
