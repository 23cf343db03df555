"""How good is the evidence per second? A check without the pipeline.

    python examples/sphere/accuracy.py RAW_DIR

For every labelled sequence, with the wearable model trained on the other sequences
(leave-one-sequence-out, as convert.py does), compares each second's most likely room
with the annotated room (location_0.csv, at the middle of the second):

- wearable: the wearable posterior alone, over the seconds that have packets;
- mixed: all readings convert.py emits, summed per room and normalized as the pipeline
  does (aggregation: sum), over every labelled second;
- p_true: the mixed distribution's mean probability of the annotated room.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import convert
import pandas as pd


def mixed_distribution(readings: pd.DataFrame, rooms: tuple[str, ...]) -> pd.DataFrame:
    """Sum the scores per second and room, then normalize: the pipeline's silver row."""
    table = readings.pivot_table(index="second", columns="symbol", values="score",
                                 aggfunc="sum", fill_value=0.0)
    table = table.reindex(columns=list(rooms), fill_value=0.0)
    return table.div(table.sum(axis=1), axis=0)


def sequence_scores(rec: convert.Recording, house: convert.House, training: dict,
                    recordings: list[convert.Recording], fixed_cameras: bool = False,
                    fixed_pirs: bool = False,
                    per_second: list | None = None) -> dict:
    """Per-second argmax accuracy of the wearable alone and of the mix, for one sequence.
    fixed_cameras: every camera names its own room (no camera_model.py); fixed_pirs: every
    PIR names its own room (no P(room | PIR on)). per_second, when
    given, receives (truth, mixed argmax) per labelled second."""
    model = convert.leave_one_out_model(rec.name, training, house)
    worn = convert.wearable_readings(rec, model, house.rooms)
    cameras = (None if fixed_cameras
               else convert.leave_one_out_cameras(rec, recordings, house, worn))
    pirs = None if fixed_pirs else convert.leave_one_out_pir_rooms(rec.name, recordings, house)
    parts = [worn, convert.pir_readings(rec, house, pirs),
             convert.camera_readings(rec, house, cameras),
             convert.background_readings(rec, house.rooms)]
    wear = mixed_distribution(parts[0], house.rooms)
    mix = mixed_distribution(pd.concat(parts, ignore_index=True), house.rooms)
    truth_w = convert.room_at(rec.stays, wear.index.to_numpy() + 0.5)
    truth_m = convert.room_at(rec.stays, mix.index.to_numpy() + 0.5)
    lw, lm = truth_w != None, truth_m != None  # noqa: E711 (object arrays)
    cols = {r: i for i, r in enumerate(house.rooms)}
    p_true = mix.to_numpy()[lm, [cols[r] for r in truth_m[lm]]]
    if per_second is not None:
        per_second.append(pd.DataFrame({"truth": truth_m[lm],
                                        "top": mix.idxmax(axis=1).to_numpy()[lm]}))
    return {"sequence": rec.name,
            "wearable_seconds": int(lw.sum()),
            "wearable": float((wear.idxmax(axis=1).to_numpy()[lw] == truth_w[lw]).mean()),
            "mixed_seconds": int(lm.sum()),
            "mixed": float((mix.idxmax(axis=1).to_numpy()[lm] == truth_m[lm]).mean()),
            "p_true": float(p_true.mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw_dir", metavar="RAW_DIR", type=Path)
    parser.add_argument("--fixed-cameras", action="store_true",
                        help="every camera names its own room (no camera model), as "
                             "convert.py did before camera_model.py")
    parser.add_argument("--fixed-pirs", action="store_true",
                        help="every PIR names its own room (no P(room | PIR on)), as "
                             "convert.py did before")
    args = parser.parse_args(argv)
    house = convert.House.load(convert.metadata_folder(args.raw_dir))
    recordings = [r for f in convert.sequence_folders(args.raw_dir)
                  if (r := convert.load_recording(f, house)) is not None]
    training = {r.name: (r.packets.drop(columns="t"), r.labels())
                for r in recordings if r.stays is not None}
    seconds: list[pd.DataFrame] = []
    rows = [sequence_scores(r, house, training, recordings, args.fixed_cameras,
                            args.fixed_pirs, seconds)
            for r in recordings if r.stays is not None and len(training) > 1]
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if len(table):
        print(f"mean: wearable {table.wearable.mean():.3f}, mixed {table.mixed.mean():.3f}, "
              f"p_true {table.p_true.mean():.3f}")
        both = pd.concat(seconds, ignore_index=True)
        by_room = (both.top == both.truth).groupby(both.truth).agg(["mean", "size"])
        print("mixed by room (all sequences): " + ", ".join(
            f"{room} {row['mean']:.2f} ({int(row['size'])} s)"
            for room, row in by_room.iterrows()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
