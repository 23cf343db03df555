"""spark-submit entry point for `probcep publish-alerts`:

    spark-submit jobs/publish_alerts.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["publish-alerts", *sys.argv[1:]])
