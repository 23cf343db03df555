"""Subcommands of the `probcep` command, one module each with `register(subparsers)`."""
