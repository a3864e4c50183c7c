"""Unit tests of abtui.lab."""
