"""spark-submit entry point for `probcep rerun`:

    spark-submit jobs/rerun.py --from 2026-01-02 --to 2026-01-02 --reason "reader fixed"
"""

import sys

from probcep.cli import entry

if __name__ == "__main__":
    entry(["rerun", *sys.argv[1:]])
