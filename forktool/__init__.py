"""forktool: keep a patch-series fork of an upstream project honest."""

__version__ = "0.1.0"
