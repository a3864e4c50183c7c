"""Unit tests of abtui.sessions."""
