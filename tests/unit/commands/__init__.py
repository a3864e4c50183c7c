"""Unit tests of abtui.commands."""
