"""abtui: live, side-by-side A/B testing of kernels and network settings over SSH."""

__version__ = "0.1.0"
