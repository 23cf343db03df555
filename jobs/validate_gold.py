"""spark-submit entry point for `probcep validate-gold`:

    spark-submit jobs/validate_gold.py --date YYYY-MM-DD [--lake DIR] [--settings FILE]
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["validate-gold", *sys.argv[1:]])
