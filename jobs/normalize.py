"""spark-submit entry point for `probcep normalize`:

    spark-submit jobs/normalize.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import main

if __name__ == "__main__":
    sys.exit(main(["normalize", *sys.argv[1:]]))
