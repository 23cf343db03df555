"""spark-submit entry point for `probcep live` (runs until stopped):

    spark-submit jobs/live.py [--once] [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["live", *sys.argv[1:]])
