"""The release procedure: sync, the pin and its sites, alignment, the CI gate."""
