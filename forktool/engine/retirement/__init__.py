"""Retirement: is a patch's fix in a release (absorbed), reverts, release order, retire."""
