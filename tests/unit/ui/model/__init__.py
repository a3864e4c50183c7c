"""Unit tests of abtui.ui.model."""
