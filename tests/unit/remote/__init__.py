"""Unit tests of abtui.remote."""
