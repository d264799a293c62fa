"""Applying a series: one patch tried, the appliers, verify, apply --target, arms."""
