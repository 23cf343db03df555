"""spark-submit entry point for `probcep publish-alerts`:

    spark-submit jobs/publish_alerts.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import main

if __name__ == "__main__":
    sys.exit(main(["publish-alerts", *sys.argv[1:]]))
