"""spark-submit entry point for the nightly gold work (`probcep run`).

    spark-submit jobs/run_day.py --date 2026-01-02 [--pattern room_visit] [--lake DIR]
    spark-submit jobs/run_day.py --from 2026-01-01 --to 2026-01-10      # a backfill
"""

import sys

from probcep.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
