"""Unit tests of abtui.measure.bisect."""
