"""Unit tests of abtui.hosts."""
