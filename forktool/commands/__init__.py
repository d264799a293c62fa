"""One module per subcommand, each exposing a click ``command``; cli.py only wires them."""
