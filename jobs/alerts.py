"""spark-submit entry point for `probcep alerts`:

    spark-submit jobs/alerts.py --date YYYY-MM-DD
"""

import sys

from probcep.cli import main

if __name__ == "__main__":
    sys.exit(main(["alerts", *sys.argv[1:]]))
