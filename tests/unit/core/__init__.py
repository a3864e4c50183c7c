"""Unit tests of abtui.core."""
