"""spark-submit entry point for `probcep ingest`:

    spark-submit jobs/ingest.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import main

if __name__ == "__main__":
    sys.exit(main(["ingest", *sys.argv[1:]]))
