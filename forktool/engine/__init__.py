"""One module per capability. Engines return result objects; they never print or exit."""
