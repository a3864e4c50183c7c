"""Unit tests of abtui.reports."""
