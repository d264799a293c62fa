"""The fork's files as data: pure parsers and formatters, no git, no subprocess."""
