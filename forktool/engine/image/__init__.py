"""Images: candidate build and gate, promotion by digest, freeze."""
