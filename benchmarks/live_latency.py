"""Live mode's end-to-end latency (issue 15): a generator writes one landing file per
second, `--streams` streams with one reading each, while `probcep live` runs (a separate
process, `local[2]`, trigger `--trigger` seconds); afterwards the lake says when each
file's readings were matched and each alert was written.

    .venv/bin/python benchmarks/live_latency.py [--streams 10000] [--minutes 10]
        [--trigger 10] [--lateness 2] [--warmup 60] [--correlation [--lookback 1h]] [--keep DIR]

Per file: its write (the rename into the landing folder) to the commit of the first
micro-batch whose `complete_until` passes the file's second (its readings are in silver
and every pattern has advanced over them; what became final is written): **file
latency**. Per alert: the write of the file holding its group's last timestep to the
commit of its micro-batch's status row (the alert's own commit comes just before it, so
this bounds when it is readable in gold/alerts): **alert latency**. Both include the
allowed lateness (a second is complete only once a file `--lateness` seconds later has
arrived). The run is *sustained* when the files of its last third wait no longer than
those of its first third (the backlog does not grow) and every file written more than
two trigger intervals before the end was matched.

One exact pattern ("Door Room+ Door", complete, θ 0.01, window 12, alert ≥ 0.2); a
share `--matching` of the streams walks Door, Room x6, Door, the others read Hallway.
With `--correlation` a correlation is registered too ("Room Door" in the archive of the
hour, or `--lookback`, before each visit, docs/semantics.md §8), and the time each
micro-batch spent on it (the `correlate` phase of its log line) is reported. Prints the
figures with the machine's load (`uptime`) before and after. The files of the first
`--warmup` seconds are written and processed but left out of the figures (their
latencies are printed apart): a live process's first micro-batches compile Spark's and
the engine's code, a cost it pays once, not every day it runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = """
patterns:
  room_visit: {pattern: "Door Room+ Door", policy: complete, threshold: 0.01, window: 12,
               alert_threshold: 0.2}
"""
CORRELATION = """
correlations:
  door_before_visit: {live: room_visit, archive_pattern: "Room Door", archive_window: 2,
                      lookback: LOOKBACK, gap: 2, min_probability: 0.05, alert_threshold: 0.05}
"""


def settings(folder: Path, args) -> Path:
    (folder / "patterns.yaml").write_text(
        REGISTRY + (CORRELATION.replace("LOOKBACK", args.lookback) if args.correlation else ""))
    path = folder / "probcep.yaml"
    path.write_text(
        f"lake_root: {folder / 'lake'}\nlanding_dir: {folder / 'landing'}\n"
        f"timestep_seconds: 1\nepoch: '2026-01-01T00:00:00'\n"
        f"domain: [Hallway, Door, Room]\nregistry: patterns.yaml\n"
        f"allowed_lateness_seconds: {args.lateness}\nlive_trigger_seconds: {args.trigger}\n"
        f"live_max_files_per_trigger: 1000\nlive_cache_streams: {args.cache}\n"
        f"max_quarantine_fraction: 0.5\n")
    return path


def generate(landing: Path, args, stop: threading.Event, written: dict) -> None:
    """One file a second, at the second's end: every stream's reading of that second."""
    rng = np.random.default_rng(args.seed)
    ids = np.array([f"s{i:05d}" for i in range(args.streams)])
    matching = rng.random(args.streams) < args.matching
    phase = rng.integers(0, 8, args.streams)
    names = np.array(["Hallway", "Door", "Room"])
    start = int(time.time()) + 1
    k = 0
    while not stop.is_set():
        second = start + k
        time.sleep(max(0.0, second + 1 - time.time()))
        step = phase % 8
        main = np.where(matching, np.where((step == 0) | (step == 7), 1, 2), 0)
        phase += 1
        when = dt.datetime.fromtimestamp(second, dt.UTC).replace(tzinfo=None)
        folder = landing / when.date().isoformat()
        folder.mkdir(parents=True, exist_ok=True)
        frame = pd.DataFrame({"stream_id": ids, "sensor_id": "r1",
                              "ts": when.isoformat(), "symbol": names[main],
                              "score": np.round(0.8 + 0.2 * rng.random(args.streams), 3)})
        target = folder / f"r-{second}.csv"
        frame.to_csv(folder / f".{target.name}.tmp", index=False)
        os.replace(folder / f".{target.name}.tmp", target)
        written[second] = time.time()
        k += 1


def seconds_of(column) -> np.ndarray:
    """Timestamps (naive: UTC) as epoch seconds, whatever their unit."""
    when = pd.to_datetime(column, utc=True)
    return (when - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()


def percentile(values, q):
    return float(np.percentile(values, q)) if len(values) else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=10_000)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--trigger", type=int, default=10)
    ap.add_argument("--lateness", type=int, default=2)
    ap.add_argument("--cache", type=int, default=100_000, help="live_cache_streams")
    ap.add_argument("--matching", type=float, default=0.1)
    ap.add_argument("--warmup", type=float, default=60.0,
                    help="seconds of files left out of the figures")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--correlation", action="store_true",
                    help="register a correlation and time its phase")
    ap.add_argument("--lookback", default="1h", help="the correlation's lookback (e.g. 1h, 5min)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (else a "
                    "temporary one, removed after the report, kept if it failed)")
    ap.add_argument("--report", type=Path, help="only report on this kept folder's run")
    args = ap.parse_args()
    if args.report:
        saved = json.loads((args.report / "written.json").read_text())
        written = {int(k): v for k, v in saved["written"].items()}
        args.warmup = saved.get("warmup", 0.0)
        report(args.report, args, written, *saved["load"])
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="probcep-live-latency-"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "landing").mkdir(exist_ok=True)
    config = settings(folder, args)
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    log = open(folder / "live.log", "w")
    live = subprocess.Popen([sys.executable, "-m", "probcep", "live", "--settings",
                             str(config), "--master", args.master], cwd=folder, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    time.sleep(20)  # Spark's start, so that the first files do not wait for it
    written: dict[int, float] = {}
    stop = threading.Event()
    gen = threading.Thread(target=generate, args=(folder / "landing", args, stop, written))
    gen.start()
    time.sleep(args.warmup + args.minutes * 60)
    stop.set()
    gen.join()
    time.sleep(2 * args.trigger + args.lateness + 5)  # let the last batches finish
    live.send_signal(signal.SIGTERM)
    try:
        live.wait(60)
    except subprocess.TimeoutExpired:
        live.kill()
    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    (folder / "written.json").write_text(json.dumps(
        {"written": written, "load": [load_before, load_after], "warmup": args.warmup}))
    report(folder, args, written, load_before, load_after)
    if not args.keep:  # kept when the report failed (it exits first): live.log says why
        shutil.rmtree(folder, ignore_errors=True)


def report(folder: Path, args, written: dict, load_before: str, load_after: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from probcep.lake.tables import ALERTS, CORRELATIONS, LIVE_STATUS

    lake = folder / "lake"
    status = LIVE_STATUS.read(lake).to_pandas().sort_values("batch_id")
    if status.empty:
        sys.exit(f"no micro-batch finished: see {folder / 'live.log'}")
    done = status.dropna(subset=["complete_until"])
    seconds = np.array(sorted(written))
    wrote = np.array([written[s] for s in seconds])
    warm = wrote < wrote.min() + args.warmup if len(wrote) else wrote.astype(bool)
    # the first status row whose complete_until passes the second
    until = seconds_of(done["complete_until"])
    finished = seconds_of(done["finished"])
    reach = np.maximum.accumulate(until) if len(until) else until
    idx = np.searchsorted(reach, seconds + 1, side="left")
    matched = idx < len(reach)
    file_lat = finished[idx[matched & ~warm]] - wrote[matched & ~warm]
    warm_lat = finished[idx[matched & warm]] - wrote[matched & warm]
    alerts = ALERTS.read(lake).to_pandas()
    by_run = dict(zip(status["run_id"], seconds_of(status["finished"])))
    ends = seconds_of(alerts["ts_end"]).astype(np.int64) if len(alerts) else \
        np.zeros(0, np.int64)
    measured = set(seconds[~warm].tolist())
    alert_lat = np.array([by_run[r] - written[e] for r, e in zip(alerts["run_id"], ends)
                          if e in measured and r in by_run])
    n = len(file_lat)
    third = max(1, n // 3)
    first, last = file_lat[:third], file_lat[-third:]
    horizon = wrote.max() - 2 * args.trigger if len(wrote) else 0
    unmatched = int(np.sum(~matched & (wrote < horizon)))
    sustained = unmatched == 0 and percentile(last, 50) <= percentile(first, 50) + args.trigger
    rows = status["rows"].to_numpy()
    took = seconds_of(status["finished"]) - seconds_of(status["started"])
    print(f"{args.streams} streams x 1 reading/s, {args.minutes:g} min, trigger "
          f"{args.trigger} s, lateness {args.lateness} s, cache {args.cache} streams, "
          f"{args.master}; work folder {folder}")
    print(f"load before: {load_before}\nload after:  {load_after}")
    print(f"files written {len(seconds)}, matched {int(matched.sum())}, not matched "
          f"(written > 2 triggers before the end) {unmatched}; the {int(warm.sum())} of "
          f"the first {args.warmup:g} s (warm-up, left out below): latency p50 "
          f"{percentile(warm_lat, 50):.1f} s, max {percentile(warm_lat, 100):.1f} s")
    print(f"micro-batches {len(status)}, rows per batch median {np.median(rows):.0f}, "
          f"batch time median {np.median(took):.1f} s, max {took.max():.1f} s, "
          f"cache misses {int(status['cache_misses'].fillna(0).sum())}")
    print(f"file latency (write -> its second matched): p50 {percentile(file_lat, 50):.1f} s, "
          f"p99 {percentile(file_lat, 99):.1f} s, max {percentile(file_lat, 100):.1f} s; "
          f"first third p50 {percentile(first, 50):.1f} s, last third p50 "
          f"{percentile(last, 50):.1f} s")
    print(f"alert latency (write of its last second -> batch committed), {len(alert_lat)} "
          f"alerts: p50 {percentile(alert_lat, 50):.1f} s, p99 {percentile(alert_lat, 99):.1f} s")
    spent = [float(m) for m in re.findall(r"correlate ([0-9.]+)",
                                          (folder / "live.log").read_text())]
    if spent:
        print(f"correlate phase, {len(spent)} micro-batches with final groups: median "
              f"{np.median(spent):.2f} s, p99 {percentile(spent, 99):.2f} s, max "
              f"{max(spent):.2f} s; correlation rows {CORRELATIONS.read(lake).num_rows}")
    target50, target99 = args.trigger + 5, 2 * args.trigger
    print(f"targets: p50 <= {target50} s: {percentile(alert_lat, 50) <= target50}; p99 <= "
          f"{target99} s: {percentile(alert_lat, 99) <= target99}; sustained: {sustained}")


if __name__ == "__main__":
    main()
