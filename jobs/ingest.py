"""spark-submit entry point for `probcep ingest`:

    spark-submit jobs/ingest.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["ingest", *sys.argv[1:]])
