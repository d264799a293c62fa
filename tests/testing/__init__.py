"""What every test imports: fixture forks, the CLI runner, shared cases."""
