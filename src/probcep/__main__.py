"""`python -m probcep`: the `probcep` command."""

from probcep.cli import entry

entry()
