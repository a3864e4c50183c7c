"""Unit tests of abtui.parse."""
