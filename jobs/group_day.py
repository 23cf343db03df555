"""spark-submit entry point for `probcep group-day`:

    spark-submit jobs/group_day.py --date YYYY-MM-DD [--pattern NAME] [--lake DIR]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["group-day", *sys.argv[1:]])
