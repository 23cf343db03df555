"""spark-submit entry point for `probcep run`:

    spark-submit jobs/run.py --date YYYY-MM-DD [--pattern NAME] [--lake DIR]
    spark-submit jobs/run.py --from 2026-01-01 --to 2026-01-10      # a backfill
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["run", *sys.argv[1:]])
