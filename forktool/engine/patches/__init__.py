"""Patch files: canonical form, fmt, export, import, refresh, the history contract, the map."""
