"""Drop the bundled sample into a landing folder a piece at a time, to watch live mode:

    python examples/live_drip.py /tmp/live-landing --hours 1 --every 60

Each day's readings are cut into pieces of `--hours` hours (by timestamp) and one piece
is written every `--every` seconds into `<landing>/YYYY-MM-DD/`, in time order, so a
`probcep live` pointed at that folder (`PROBCEP_LANDING_DIR`) sees files arrive as a
sensor gateway would write them. Pieces are written under a temporary name and renamed,
so the streaming query never lists a half-written file.
"""

from __future__ import annotations

import argparse
import time
from importlib.resources import files
from pathlib import Path

import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("landing", type=Path)
    ap.add_argument("--hours", type=int, default=1, help="hours of readings per file")
    ap.add_argument("--every", type=float, default=60.0, help="seconds between files")
    args = ap.parse_args()
    sample = Path(str(files("probcep.demo") / "landing"))
    for day in sorted(p for p in sample.iterdir() if p.is_dir()):
        rows = pd.read_csv(day / "readings.csv", dtype=str)
        # the sample's malformed timestamps (for live mode to quarantine) go with the
        # first piece; a row dropped here would never reach the landing folder
        stamp = pd.to_datetime(rows["ts"], utc=True, errors="coerce", format="ISO8601")
        hour = stamp.dt.hour.fillna(0).astype(int) // args.hours
        for piece, part in rows.groupby(hour, sort=True):
            folder = args.landing / day.name
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"readings-{piece * args.hours:02d}h.csv"
            part.to_csv(folder / f".{target.name}.tmp", index=False)
            (folder / f".{target.name}.tmp").rename(target)
            print(f"dropped {target} ({len(part)} readings)", flush=True)
            time.sleep(args.every)


if __name__ == "__main__":
    main()
