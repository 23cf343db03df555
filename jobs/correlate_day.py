"""spark-submit entry point for `probcep correlate-day`:

    spark-submit jobs/correlate_day.py --date YYYY-MM-DD [--pattern NAME] [--lake DIR]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["correlate-day", *sys.argv[1:]])
