"""spark-submit entry point for `probcep normalize`:

    spark-submit jobs/normalize.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["normalize", *sys.argv[1:]])
