"""Unit tests of abtui.ui.flow."""
