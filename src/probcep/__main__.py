"""`python -m probcep`: the `probcep` command."""

import sys

from probcep.cli import main

sys.exit(main())
