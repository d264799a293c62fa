"""Upstream: reaching it (fetch), pending PRs (resolve), forecast, poll."""
