"""Unit tests of abtui.profile."""
