"""Unit tests of abtui.ui."""
