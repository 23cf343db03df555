"""Convert SPHERE Challenge sequences into probcep landing files and true episodes.

    python examples/sphere/convert.py RAW_DIR OUT_DIR [--start-date 2026-05-01]

RAW_DIR holds sequence folders (00001/, 00002/, ...) of the SPHERE Challenge 2016 release
(N. Twomey et al., arXiv:1603.00797). OUT_DIR receives

- landing/<YYYY-MM-DD>/seq-NNNNN.csv: long-layout readings (stream_id, sensor_id, ts,
  symbol, score) at one-second resolution, one sequence per calendar day, and
- episodes.csv: stream_id, start, end, pattern: the true occurrences of the patterns of
  patterns.yaml beside this file, read off the annotated room stays (location_0.csv).

Per second, the readings of a sequence are: the wearable's posterior over the rooms
(sensor_model.py), for each PIR that is on its P(room | PIR on) (fit_pir_rooms), for each
camera that detects a person its P(room | box) (camera_model.py), all three trained
leave-one-sequence-out, and a faint uniform background. The
pipeline sums them per room and normalizes (aggregation: sum); the weights below set the
mix. See README.md beside this file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import camera_model
import numpy as np
import pandas as pd
import sensor_model

# --- the mix of evidence per second (scores before the pipeline normalizes) ----------
WEARABLE_WEIGHT = 1.0  # the wearable's posterior sums to this over the rooms
PIR_WEIGHT = 0.5  # per PIR on in that second; PIRs lag and fire in neighbouring rooms
CAMERA_WEIGHT = 1.0  # per camera with a detection, spread over rooms by camera_model.py
BACKGROUND_WEIGHT = 0.01  # spread evenly over the rooms in every second of the recording
PIR_OWN_ROOM_SECONDS = 10.0  # pseudo-seconds in its own room added to a PIR's training
SEEN_SHARE = 0.1  # a camera trains on sequences where this share of its frames saw the room

# --- time ------------------------------------------------------------------------------
DEFAULT_START_DATE = "2026-05-01"  # sequence 00001's day; sequence NNNNN lands NNNNN-1 later
DAY_START = dt.time(10, 0, 0)  # second 0 of a sequence is this time (UTC) of its day

# --- truth -----------------------------------------------------------------------------
# pattern name -> (entering room, visited room, leaving room): the registry's `A B+ C`.
# A stay counts when the room it was entered from and the room it was left to are these,
# read off the annotation through FLOOR_PLAN_DOORS (via_room): an annotated change between
# two rooms that do not adjoin crossed the room joining them.
EPISODE_RULES = {
    "toilet_visit": ("stairs", "toilet", "stairs"),
    "kitchen_visit": ("hall", "kitchen", "hall"),
    "bed1_visit": ("stairs", "bed1", "stairs"),
    "bed2_visit": ("stairs", "bed2", "stairs"),
    "bath_visit": ("stairs", "bath", "stairs"),
}
MAX_LABEL_GAP_SECONDS = 2.0  # stays further apart than this do not follow one another

# Which rooms open onto which, from the house's floor plan (supplementary/floorplan.pdf).
# Ground floor: the lounge (`living`), the front room G.02 (presumably `study`; nobody
# enters it here) and the kitchen open onto the hall, and the staircase rises inside the
# hall, its foot at the hall's kitchen end; the kitchen's only other door is the garden's.
# First floor: both bedrooms, the WC (`toilet`) and the bathroom open onto the landing,
# which the annotators label `stairs` like the staircase. No room opens onto another.
# So the annotation's `kitchen` -> `stairs` (the second kitchen stay of every sequence),
# `stairs` -> `living` and `bed1` -> `bath` (00002) each crossed a room it does not name:
# the hall, the hall, and the landing (which the second annotator of 00002 labels there).
FLOOR_PLAN_DOORS = (("hall", "living"), ("hall", "study"), ("hall", "kitchen"),
                    ("hall", "stairs"), ("stairs", "bed1"), ("stairs", "bed2"),
                    ("stairs", "toilet"), ("stairs", "bath"))

# --- the release's metadata, used when its JSON files are not found --------------------
DEFAULT_ROOMS = ("bath", "bed1", "bed2", "hall", "kitchen", "living", "stairs", "study",
                 "toilet")
DEFAULT_APS = ("Kitchen_AP", "Lounge_AP", "Upstairs_AP", "Study_AP")
DEFAULT_CAMERAS = ("hallway", "kitchen", "living_room")
CAMERA_ROOMS = {"hallway": "hall", "living_room": "living"}  # else the camera's own name
REQUIRED_FILES = ("meta.json", "acceleration.csv", "pir.csv")

PIR_TYPES = {"start": float, "end": float, "name": str, "index": np.int64}
READING_COLUMNS = ["stream_id", "sensor_id", "ts", "symbol", "score"]
EPISODE_COLUMNS = ["stream_id", "start", "end", "pattern"]


def warn(message: str) -> None:
    """Problems with one folder are reported and skipped, never fatal for the others."""
    print(f"convert.py: warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class House:
    """The release's metadata: rooms (the domain), access points, PIR and camera rooms."""

    rooms: tuple[str, ...]
    aps: tuple[str, ...]
    pir_rooms: tuple[str, ...]  # pir.csv's `index` -> room
    cameras: dict[str, str]  # video_<name>.csv -> room

    @classmethod
    def load(cls, folder: Path | None) -> House:
        """Read rooms.json etc. from `folder`; fall back to the 2016 release's lists."""
        def read(name, default):
            path = folder / name if folder else None
            return tuple(json.loads(path.read_text())) if path and path.is_file() else default

        if folder is None:
            warn("no rooms.json found beside the sequences: using the 2016 release's lists")
        rooms = read("rooms.json", DEFAULT_ROOMS)
        cameras = {}
        for name in read("video_locations.json", DEFAULT_CAMERAS):
            room = CAMERA_ROOMS.get(name, name)
            if room in rooms:
                cameras[name] = room
            else:
                warn(f"camera {name!r} sees no room of rooms.json: ignored")
        return cls(rooms, read("access_point_names.json", DEFAULT_APS),
                   read("pir_locations.json", rooms), cameras)


@dataclass(frozen=True)
class Recording:
    """One sequence folder, times in seconds since its start."""

    name: str
    n_seconds: int  # seconds 0 .. n_seconds-1 are inside the recording
    packets: pd.DataFrame  # t and one RSSI column per AP (NaN: not heard)
    pir: pd.DataFrame  # start, end, index
    video: dict[str, pd.DataFrame]  # camera -> frames with a detection: t and the box
    stays: pd.DataFrame | None  # location_0.csv: start, end, name
    stays_1: pd.DataFrame | None  # location_1.csv, when a second annotator labelled it

    @property
    def stream_id(self) -> str:
        return f"seq-{self.name}"

    def labels(self, t: np.ndarray | None = None) -> np.ndarray | None:
        """The room at each time t (default: each packet's) for training: where
        location_0 and location_1 agree (the seconds around a room change, where
        annotators differ, teach nothing sure); with one annotator, location_0 alone.
        None for an unlabelled sequence."""
        if self.stays is None:
            return None
        t = self.packets["t"].to_numpy() if t is None else np.asarray(t, dtype=float)
        room = room_at(self.stays, t)
        if self.stays_1 is not None:
            room = np.where(room == room_at(self.stays_1, t), room, None)
        return room


def load_recording(folder: Path, house: House) -> Recording | None:
    """Read a sequence folder, or warn and return None when it lacks a needed file;
    ConvertError naming the file (and row) when a file is damaged: unreadable, a
    needed column missing, a value that is not a number, a row cut short, a room that
    rooms.json does not name."""
    missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
    missing += [f"video_{c}.csv" for c in house.cameras
                if not (folder / f"video_{c}.csv").is_file()]
    if missing:
        warn(f"{folder}: skipped, missing {', '.join(missing)}")
        return None
    meta = _meta(folder / "meta.json")
    # a packet need not be heard by any access point, but its accelerations are there
    packets = read_table(folder / "acceleration.csv", ["t"], optional=house.aps,
                         complete=("x", "y", "z"))
    aps = [ap for ap in house.aps if ap in packets.columns]
    packets = packets[["t", *aps]].sort_values("t", kind="stable").reset_index(drop=True)
    end = meta.get("end", packets["t"].max() if len(packets) else 0.0)
    n_seconds = int(np.ceil(end)) if np.isfinite(end) else 0

    def stays(name):
        path = folder / name
        if not path.is_file():
            return None
        table = read_table(path, ["start", "end"], text=["name"])
        unknown = ~table["name"].isin(house.rooms)
        if unknown.any():
            row = int(np.argmax(unknown.to_numpy()))
            raise ConvertError(f"{path}: row {row + 2}: room {table['name'].iloc[row]!r} is "
                               f"not one of rooms.json ({', '.join(house.rooms)})")
        if table.empty:
            warn(f"{path}: no stay annotated: no true episode, and nothing to train on")
        return table.sort_values("start")

    if not (folder / "location_0.csv").is_file():
        warn(f"{folder}: no location_0.csv: converted without episodes and not trained on")
    pir = read_table(folder / "pir.csv", ["start", "end", "index"], text=["name"])
    fractional = pir["index"] % 1 != 0
    if fractional.any():
        row = int(np.argmax(fractional.to_numpy()))
        raise ConvertError(f"{folder / 'pir.csv'}: row {row + 2}: index "
                           f"{pir['index'].iloc[row]:g} is not a whole number")
    return Recording(
        name=folder.name, n_seconds=n_seconds, packets=packets,
        pir=pir.astype(PIR_TYPES),
        video={c: _frames(folder / f"video_{c}.csv") for c in house.cameras},
        stays=stays("location_0.csv"), stays_1=stays("location_1.csv"))


def _meta(path: Path) -> dict:
    """meta.json: an object whose `end`, when given, is the recording's length (s)."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConvertError(f"{path}: cannot read: {exc}") from exc
    end = meta.get("end") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not (end is None or (
            isinstance(end, int | float) and not isinstance(end, bool) and 0 <= end < 1e7)):
        raise ConvertError(f"{path}: expected an object whose \"end\" is the recording's "
                           f"length in seconds, got {path.read_text()[:60]!r}")
    return meta


def read_table(path: Path, numbers: list[str], text=(), optional=(), complete=()
               ) -> pd.DataFrame:
    """A CSV of the release with its `numbers` columns (finite, in every row) as floats,
    `text` columns in every row, `optional` numeric columns it has as floats (empty:
    NaN) and `complete` columns it has (True: all) in every row; ConvertError naming the file and
    the line (the header is line 1) of the first bad value. An empty file is refused; a
    header alone is a file of no row."""
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # pandas' parser errors too
        raise ConvertError(f"{path}: cannot read: {exc}") from exc
    absent = [c for c in (*numbers, *text) if c not in table.columns]
    if absent:
        raise ConvertError(f"{path}: no column {', '.join(absent)} (columns: "
                           f"{', '.join(table.columns)})")
    complete = table.columns if complete is True else complete
    for column in [*text, *(c for c in complete if c in table.columns)]:
        blank = table[column].str.strip() == ""
        if blank.any():
            row = int(np.argmax(blank.to_numpy()))
            raise ConvertError(f"{path}: row {row + 2}: no {column} (a row cut short?)")
    out = table.copy()
    for column in [*numbers, *(c for c in optional if c in table.columns)]:
        given = table[column].str.strip() != ""
        values = pd.to_numeric(table[column].where(given), errors="coerce")
        bad = (values.isna() & given) | ~np.isfinite(values.fillna(0.0))
        if column in numbers:
            bad |= values.isna()
        if bad.any():
            row = int(np.argmax(bad.to_numpy()))
            raise ConvertError(f"{path}: row {row + 2}: {column} "
                               f"{table[column].iloc[row]!r} is not a number")
        out[column] = values.astype(float)
    return out


def _frames(path: Path) -> pd.DataFrame:
    """A camera file's frames: t and the box features camera_model.py reads. A file whose
    every cell reads as a finite number needs none of `read_table`'s checks cell by cell
    (about 4M cells in the six sequences: a third of the conversion); any other goes
    through them, which name the first bad value."""
    columns = ["t", *camera_model.FEATURES]
    try:
        frames = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (OSError, UnicodeDecodeError, ValueError):
        frames = None
    clean = (frames is not None and len(frames.columns) and set(columns) <= set(frames.columns)
             and all(pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_bool_dtype(d)
                     for d in frames.dtypes)
             and bool(np.isfinite(frames.to_numpy(dtype=float)).all()))
    if not clean:
        frames = read_table(path, columns, complete=True)
    frames = frames[columns].astype(float)
    return frames.sort_values("t", kind="stable").reset_index(drop=True)


def room_at(stays: pd.DataFrame, t: np.ndarray) -> np.ndarray:
    """The annotated room at each time t (None outside every stay); stays do not overlap."""
    if stays.empty:  # an annotation file of no stay
        return np.full(np.shape(t), None, dtype=object)
    i = np.searchsorted(stays["start"].to_numpy(), t, side="right") - 1
    j = np.clip(i, 0, None)
    inside = (i >= 0) & (t < stays["end"].to_numpy()[j])
    return np.where(inside, stays["name"].to_numpy(dtype=object)[j], None)


# --- readings ------------------------------------------------------------------------


def wearable_readings(rec: Recording, model: sensor_model.RssiModel | None,
                      rooms: tuple[str, ...]) -> pd.DataFrame:
    """One reading per room and second with packets: score = the room's posterior."""
    if model is None or rec.packets.empty:
        return _readings([], [], [], [])
    aps = [ap for ap in model.aps if ap in rec.packets.columns]
    post = sensor_model.posterior_per_second(model, rec.packets["t"].to_numpy(),
                                             rec.packets[aps], rooms)
    post = post[(post.index >= 0) & (post.index < rec.n_seconds)]
    long = post.stack()
    return _readings(long.index.get_level_values(0).to_numpy(), "wearable",
                     long.index.get_level_values(1).to_numpy(),
                     WEARABLE_WEIGHT * long.to_numpy())


def pir_seconds(rec: Recording, house: House) -> pd.DataFrame:
    """second, sensor (pir_<name>), room (the PIR's own): one row per second in which a
    PIR is on during any part of it."""
    pir = rec.pir
    lookup = np.asarray([*house.pir_rooms, None], dtype=object)  # [-1]: unknown index
    index = pir["index"].to_numpy()
    room = lookup[np.where((index >= 0) & (index < len(house.pir_rooms)), index, -1)]
    keep = np.isin(room, house.rooms)
    if (~keep).any():
        warn(f"{rec.name}: {int((~keep).sum())} PIR interval(s) of unknown rooms ignored")
    pir, room = pir[keep], room[keep]
    first = np.floor(pir["start"].to_numpy()).astype(np.int64)
    last = np.maximum(np.ceil(pir["end"].to_numpy()).astype(np.int64) - 1, first)
    second = _expand(first, last)
    length = last - first + 1
    frame = pd.DataFrame({"second": second,
                          "sensor": "pir_" + np.repeat(pir["name"].astype(str), length),
                          "room": np.repeat(room, length)})
    frame = frame[(frame["second"] >= 0) & (frame["second"] < rec.n_seconds)]
    return frame.drop_duplicates()  # overlapping intervals of one PIR: one second


def fit_pir_rooms(recordings: list[Recording], house: House) -> pd.DataFrame:
    """P(room | PIR on) per PIR (rows: sensor; columns: rooms), from the seconds each PIR
    is on in the given labelled recordings and the room annotated at their middle (where
    the annotators agree), plus PIR_OWN_ROOM_SECONDS in the PIR's own room: a PIR never
    on in training names its own room, as before. PIRs lag and see through doors (the
    study's PIR fires in 561 seconds, none of them in the study)."""
    seen = []
    for rec in recordings:
        on = pir_seconds(rec, house)
        room = rec.labels(on["second"].to_numpy() + 0.5)
        known = pd.notna(room) & np.isin(room, house.rooms)
        seen.append(pd.DataFrame({"sensor": on["sensor"].to_numpy()[known],
                                  "truth": room[known], "weight": 1.0}))
        own = on[["sensor", "room"]].drop_duplicates().rename(columns={"room": "truth"})
        seen.append(own.assign(weight=0.0))  # every PIR seen, with its own room
    if not seen:
        return pd.DataFrame(columns=list(house.rooms), dtype=float)
    seen = pd.concat(seen, ignore_index=True)
    own = seen[seen["weight"] == 0].drop_duplicates("sensor")
    seen = pd.concat([seen, own.assign(weight=PIR_OWN_ROOM_SECONDS)], ignore_index=True)
    table = seen.pivot_table(index="sensor", columns="truth", values="weight",
                             aggfunc="sum", fill_value=0.0)
    table = table.reindex(columns=list(house.rooms), fill_value=0.0)
    return table.div(table.sum(axis=1), axis=0)


def pir_readings(rec: Recording, house: House,
                 rooms_given_on: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per second in which a PIR is on, PIR_WEIGHT spread over the rooms by P(room | PIR
    on) (fit_pir_rooms, trained on other sequences), one reading per room with a
    positive share; without that table, one reading for the PIR's own room."""
    frame = pir_seconds(rec, house)
    if rooms_given_on is None:
        return _readings(frame["second"].to_numpy(), frame["sensor"].to_numpy(),
                         frame["room"].to_numpy(), PIR_WEIGHT)
    share = rooms_given_on.stack()
    share = share[share > 0].rename("share").reset_index()
    share.columns = ["sensor", "symbol", "share"]
    long = frame.merge(share, on="sensor", how="left")  # a PIR not trained: its own room
    untrained = long["share"].isna()
    long.loc[untrained, "symbol"] = long.loc[untrained, "room"]
    long["share"] = long["share"].fillna(1.0)
    return _readings(long["second"].to_numpy(), long["sensor"].to_numpy(),
                     long["symbol"].to_numpy(), PIR_WEIGHT * long["share"].to_numpy())


def camera_readings(rec: Recording, house: House,
                    models: dict[str, camera_model.CameraModel | None] | None = None
                    ) -> pd.DataFrame:
    """Per camera and second with at least one detected-person frame, CAMERA_WEIGHT
    spread over the rooms by the camera's model (camera_model.py), one reading per room
    it gives a positive probability. A camera without a model (nothing to train on)
    names its own room."""
    parts = [_readings([], [], [], [])]
    for camera, room in house.cameras.items():
        frames = rec.video[camera]
        model = (models or {}).get(camera)
        if model is None:
            second = np.unique(np.floor(frames["t"].to_numpy()).astype(np.int64))
            second = second[(second >= 0) & (second < rec.n_seconds)]
            parts.append(_readings(second, f"video_{camera}", room, CAMERA_WEIGHT))
            continue
        post = camera_model.posterior_per_second(model, frames, house.rooms)
        post = post[(post.index >= 0) & (post.index < rec.n_seconds)]
        long = post.stack()
        long = long[long > 0]
        parts.append(_readings(long.index.get_level_values(0).to_numpy(), f"video_{camera}",
                               long.index.get_level_values(1).to_numpy(),
                               CAMERA_WEIGHT * long.to_numpy()))
    return pd.concat(parts, ignore_index=True)


def background_readings(rec: Recording, rooms: tuple[str, ...]) -> pd.DataFrame:
    """Every room, every second of the recording, BACKGROUND_WEIGHT in all.

    Inside the recording the participant is somewhere in the house: a second no sensor
    covers is "any room" (uniform), not "no reading", which would break every match
    running through it; and no room is ever exactly impossible. Outside the recording
    the pipeline's gap policy (no_reading) applies, so nothing matches there.
    """
    second = np.repeat(np.arange(rec.n_seconds), len(rooms))
    return _readings(second, "background", np.tile(np.asarray(rooms, dtype=object),
                                                   rec.n_seconds),
                     BACKGROUND_WEIGHT / len(rooms))


def _expand(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Every integer in [first[i], last[i]] for each i, concatenated (vectorized)."""
    length = last - first + 1
    offset = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
    return np.repeat(first, length) + offset


def _readings(second, sensor, symbol, score) -> pd.DataFrame:
    frame = pd.DataFrame({"second": second, "sensor_id": sensor, "symbol": symbol,
                          "score": score})
    frame["second"] = frame["second"].astype(np.int64)
    return frame


def all_readings(rec: Recording, house: House, wearable: pd.DataFrame,
                 day_start: dt.datetime,
                 cameras: dict[str, camera_model.CameraModel | None] | None = None,
                 pirs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The sequence's long-layout readings, sorted by time, with ISO timestamps (UTC);
    `wearable` is wearable_readings' (the cameras' training needs it too)."""
    frame = pd.concat([wearable, pir_readings(rec, house, pirs),
                       camera_readings(rec, house, cameras),
                       background_readings(rec, house.rooms)],
                      ignore_index=True).sort_values(["second", "sensor_id", "symbol"],
                                                     kind="stable")
    frame["stream_id"] = rec.stream_id
    frame["ts"] = iso(day_start, frame["second"].to_numpy(dtype=float))
    return frame[READING_COLUMNS]


def iso(day_start: dt.datetime, seconds: np.ndarray) -> np.ndarray:
    """Seconds since the sequence start -> 'YYYY-MM-DDTHH:MM:SS.mmm' (UTC)."""
    stamps = pd.Timestamp(day_start) + pd.to_timedelta(np.round(seconds * 1000), unit="ms")
    return stamps.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3].to_numpy()


# --- episodes ------------------------------------------------------------------------


def merged_stays(stays: pd.DataFrame) -> pd.DataFrame:
    """Consecutive stays of one room (a split annotation) become one stay."""
    gap = stays["start"] - stays["end"].shift()
    new = (stays["name"] != stays["name"].shift()) | (gap > MAX_LABEL_GAP_SECONDS)
    return (stays.assign(stay=new.cumsum())
            .groupby("stay").agg(start=("start", "min"), end=("end", "max"),
                                 name=("name", "first")).reset_index(drop=True))


def via_room(room, annotated):
    """The room that `room` was entered from (or left to) when the annotation has the
    stay `annotated` just before (or after) it: `annotated` itself when the two rooms
    adjoin on the floor plan (FLOOR_PLAN_DOORS); otherwise the walk between them crossed,
    unannotated, the one room that adjoins both, and that room is returned (`kitchen`
    and `stairs`: the hall). When no single room joins them (or there is no stay),
    `annotated` is returned unchanged."""
    neighbours = {}
    for a, b in FLOOR_PLAN_DOORS:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    if annotated in neighbours.get(room, ()):
        return annotated
    joining = neighbours.get(room, set()) & neighbours.get(annotated, set())
    return joining.pop() if len(joining) == 1 else annotated


def episodes(rec: Recording, day_start: dt.datetime) -> pd.DataFrame:
    """True occurrences of EPISODE_RULES: a stay of the visited room, entered from and left
    to the given rooms (stays no more than MAX_LABEL_GAP_SECONDS apart). The room entered
    from is the previous stay's, or the room the walk from it crossed when the two do not
    adjoin (via_room); the same for the room left to.

    An episode runs from the end of the entering stay to the start of the leaving one:
    in timesteps, from the last second in the entering room to the first second in the
    leaving room, the interval the pattern `A B+ C` matches in the annotated world. When
    the leaving room was crossed unannotated, its first second is the first one after the
    visited room's stay (the start of the annotated next stay); likewise for entering.
    """
    if rec.stays is None:
        return pd.DataFrame(columns=EPISODE_COLUMNS)
    s = merged_stays(rec.stays)
    prev, nxt = s.shift(1), s.shift(-1)
    linked = ((s["start"] - prev["end"] <= MAX_LABEL_GAP_SECONDS)
              & (nxt["start"] - s["end"] <= MAX_LABEL_GAP_SECONDS))
    came_from = pd.Series([via_room(r, a) for r, a in zip(s["name"], prev["name"])],
                          index=s.index, dtype=object)
    left_to = pd.Series([via_room(r, a) for r, a in zip(s["name"], nxt["name"])],
                        index=s.index, dtype=object)
    parts = []
    for pattern, (enter, room, leave) in EPISODE_RULES.items():
        hit = linked & (came_from == enter) & (s["name"] == room) & (left_to == leave)
        parts.append(pd.DataFrame({"stream_id": rec.stream_id,
                                   "start": iso(day_start, prev.loc[hit, "end"].to_numpy()),
                                   "end": iso(day_start, nxt.loc[hit, "start"].to_numpy()),
                                   "pattern": pattern}))
    return pd.concat(parts, ignore_index=True).sort_values("start", kind="stable")


# --- the command -----------------------------------------------------------------------


def sequence_folders(raw_dir: Path) -> list[Path]:
    """Sequence folders, by number: the folder name must be digits (00001)."""
    folders, numbers = [], {}
    for path in sorted(p for p in raw_dir.iterdir() if p.is_dir()):
        if path.name.isascii() and path.name.isdigit():
            other = numbers.setdefault(int(path.name), path)
            if other is not path:  # one day, one set of episodes: both would land on it
                raise ConvertError(f"{other} and {path} are the same sequence number "
                                   f"{int(path.name)}: keep one")
            folders.append(path)
        else:
            warn(f"{path}: skipped, not a numbered sequence folder")
    return folders


def metadata_folder(raw_dir: Path) -> Path | None:
    """rooms.json etc. sit beside the train/ folder in the release (or inside it)."""
    for folder in (raw_dir, raw_dir.parent):
        if (folder / "rooms.json").is_file():
            return folder
    return None


def leave_one_out_model(name: str, training: dict[str, tuple[pd.DataFrame, np.ndarray]],
                        house: House) -> sensor_model.RssiModel | None:
    """The wearable model for sequence `name`, fitted on every other labelled sequence."""
    others = [v for k, v in training.items() if k != name]
    if not others:
        warn(f"{name}: no other labelled sequence to train the wearable model: "
             "no wearable readings")
        return None
    model = sensor_model.fit(others, house.rooms, house.aps)
    if not model.rooms:
        warn(f"{name}: no room has {sensor_model.MIN_ROOM_PACKETS} labelled packets in the "
             f"other sequences to train the wearable model: no wearable readings")
        return None
    return model


def leave_one_out_cameras(rec: Recording, recordings: list[Recording], house: House,
                          wearable: pd.DataFrame | None = None
                          ) -> dict[str, camera_model.CameraModel | None]:
    """Per camera, the position model for `rec`, fitted on the frames of other labelled
    sequences (None: no room to learn, the camera names its own room).

    A camera file need not look at the same room in every sequence: in 00007-00010 of the
    release `video_kitchen.csv` sees the living room and `video_living_room.csv` the
    kitchen. So each camera is trained on the sequences in which at least SEEN_SHARE of
    its labelled frames are in the room that `wearable` (rec's wearable readings) puts
    the participant in while rec's camera sees someone, found without rec's labels; on
    every other labelled sequence when there is no such room or sequence."""
    others = [r for r in recordings if r.name != rec.name and r.stays is not None]
    models = {}
    for camera in house.cameras:
        pairs = [(r.video[camera], r.labels(r.video[camera]["t"])) for r in others]
        seen = None if wearable is None else room_seen(rec, camera, wearable)
        alike = [pair for pair in pairs if seen is not None
                 and share_in(pair[1], seen) >= SEEN_SHARE]
        models[camera] = camera_model.fit(alike or pairs, house.rooms)
    return models


def room_seen(rec: Recording, camera: str, wearable: pd.DataFrame) -> str | None:
    """The room with the most wearable probability over the seconds in which `camera`
    sees someone in `rec` (None: the wearable has none of those seconds)."""
    seconds = np.unique(np.floor(rec.video[camera]["t"].to_numpy()).astype(np.int64))
    heard = wearable[wearable["second"].isin(seconds)]
    return None if heard.empty else heard.groupby("symbol")["score"].sum().idxmax()


def share_in(labels, room: str) -> float:
    """The share of the labelled frames (labels not None) that are in `room`."""
    named = pd.Series(np.asarray(labels, dtype=object)).dropna()
    return float((named == room).mean()) if len(named) else 0.0


def leave_one_out_pir_rooms(name: str, recordings: list[Recording],
                            house: House) -> pd.DataFrame:
    """P(room | PIR on) for sequence `name`, from every other labelled sequence."""
    return fit_pir_rooms([r for r in recordings if r.name != name and r.stays is not None],
                         house)


class ConvertError(Exception):
    """Folders the converter cannot use as they are; nothing was written."""


#: The days a sequence may land on: pandas' timestamps (nanoseconds) end in 2262.
FIRST_DAY = (pd.Timestamp.min + pd.Timedelta(days=1)).date()
LAST_DAY = (pd.Timestamp.max - pd.Timedelta(days=1)).date()


def day_of(sequence: str, start_date: dt.date) -> dt.date:
    """The day sequence NNNNN lands on: NNNNN - 1 days after `start_date`;
    ConvertError when that is outside FIRST_DAY .. LAST_DAY."""
    try:
        day = start_date + dt.timedelta(days=int(sequence) - 1)
    except OverflowError:
        day = None
    if day is None or not FIRST_DAY <= day <= LAST_DAY:
        raise ConvertError(f"sequence {sequence} would land "
                           + (f"on {day}" if day else "after the year 9999")
                           + f" ({start_date} + {int(sequence) - 1} days), outside "
                           f"{FIRST_DAY} to {LAST_DAY}: choose another --start-date or "
                           f"rename the folder")
    return day


def check_folders(raw_dir: Path, out_dir: Path, start_date: dt.date) -> list[Path]:
    """The sequence folders to convert, once RAW_DIR is known to hold some and OUT_DIR
    to hold no landing day this conversion would not write (an earlier conversion's day
    kept beside new episodes would score its alerts against no true episode)."""
    for path in (out_dir, *out_dir.parents):
        if path.exists() and not path.is_dir():
            raise ConvertError(f"OUT_DIR {out_dir} is not a folder" if path == out_dir else
                               f"OUT_DIR {out_dir}: {path} is a file, not a folder")
    for name, folder in (("landing", True), ("episodes.csv", False)):
        path = out_dir / name
        if path.exists() and path.is_dir() != folder:
            raise ConvertError(f"{path} is a {'folder' if path.is_dir() else 'file'}: "
                               f"remove it or choose another OUT_DIR")
    folders = sequence_folders(raw_dir)
    if not folders:
        hint = " (it is one: give the folder holding it)" if raw_dir.name.isdigit() else ""
        raise ConvertError(f"RAW_DIR {raw_dir} holds no sequence folder (00001/, 00002/, "
                           f"...){hint}")
    landing = out_dir / "landing"
    stale_days(landing, {day_of(f.name, start_date).isoformat() for f in folders})
    return folders


def stale_days(landing: Path, writes: set[str]) -> None:
    """ConvertError when `landing` holds a day this conversion does not write (an
    earlier conversion's day kept beside new episodes would score its alerts against no
    true episode), or a day's name that is a file."""
    stale = sorted(p.name for p in landing.iterdir() if p.name not in writes
                   or not p.is_dir()) if landing.is_dir() else []
    if stale:
        raise ConvertError(f"{landing} holds day(s) {', '.join(stale)} that these sequences "
                           f"do not write: a run over them would score their alerts "
                           f"against no episode; remove them or choose another OUT_DIR")


def convert(raw_dir: Path, out_dir: Path, start_date: dt.date) -> dict:
    """Convert every sequence folder of raw_dir; return counts for the summary line.
    Everything is read and computed before anything is written, and the files are
    written beside their places and moved into them at the end: a failure leaves OUT_DIR
    as it was."""
    folders = check_folders(raw_dir, out_dir, start_date)
    house = House.load(metadata_folder(raw_dir))
    recordings = [r for f in folders if (r := load_recording(f, house)) is not None]
    if not recordings:
        raise ConvertError(f"RAW_DIR {raw_dir}: no sequence folder holds the files a "
                           f"conversion needs (see the warnings above)")
    # a skipped sequence's earlier landing day would stay without its episodes
    stale_days(out_dir / "landing", {day_of(r.name, start_date).isoformat()
                                     for r in recordings})
    training = {r.name: (r.packets.drop(columns="t"), r.labels())
                for r in recordings if r.stays is not None}
    all_episodes, files, rows = [], {}, {}
    for rec in recordings:
        day = day_of(rec.name, start_date)
        day_start = dt.datetime.combine(day, DAY_START)
        model = leave_one_out_model(rec.name, training, house)
        worn = wearable_readings(rec, model, house.rooms)
        cameras = leave_one_out_cameras(rec, recordings, house, worn)
        pirs = leave_one_out_pir_rooms(rec.name, recordings, house)
        readings = all_readings(rec, house, worn, day_start, cameras, pirs)
        path = out_dir / "landing" / day.isoformat() / f"{rec.stream_id}.csv"
        files[path] = readings.to_csv(index=False, float_format="%.6g")
        rows[day.isoformat()] = rows.get(day.isoformat(), 0) + len(readings)
        all_episodes.append(episodes(rec, day_start))
    table = (pd.concat(all_episodes, ignore_index=True) if all_episodes
             else pd.DataFrame(columns=EPISODE_COLUMNS))
    files[out_dir / "episodes.csv"] = table.to_csv(index=False)
    write_all(files)
    return {"rows_per_day": rows, "episodes": table["pattern"].value_counts().to_dict()}


def write_all(files: dict[Path, str]) -> None:
    """Write every file, or none: each goes to a temporary name beside its place and all
    are renamed once all are written (a landing day's folder made here is left empty
    when a write fails)."""
    written = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f".{path.name}.partial")
            written.append(part)
            part.write_text(text)
    except OSError as exc:
        for part in written:
            part.unlink(missing_ok=True)
        raise ConvertError(f"cannot write {exc.filename}: {exc.strerror}; nothing "
                           f"written") from exc
    for path, part in zip(files, written):
        part.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert SPHERE Challenge sequences into probcep landing files "
                    "(long layout, one day per sequence) and true episodes.")
    parser.add_argument("raw_dir", metavar="RAW_DIR", type=Path,
                        help="folder of sequence folders (00001/, 00002/, ...)")
    parser.add_argument("out_dir", metavar="OUT_DIR", type=Path,
                        help="receives landing/<day>/*.csv and episodes.csv")
    parser.add_argument("--start-date", type=dt.date.fromisoformat,
                        default=dt.date.fromisoformat(DEFAULT_START_DATE),
                        help=f"day of sequence 00001 (default {DEFAULT_START_DATE}); "
                             "sequence N lands N-1 days later")
    args = parser.parse_args(argv)
    if not args.raw_dir.is_dir():
        parser.error(f"RAW_DIR {args.raw_dir} is not a folder")
    began = time.perf_counter()
    try:
        summary = convert(args.raw_dir, args.out_dir, args.start_date)
    except ConvertError as exc:  # the data's fault: one line, no usage (the command
        # line was right)
        print(f"convert.py: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    for day, n in sorted(summary["rows_per_day"].items()):
        print(f"landing/{day}: {n} rows")
    for pattern, n in sorted(summary["episodes"].items()):
        print(f"episodes {pattern}: {n}")
    print(f"converted {len(summary['rows_per_day'])} sequence(s) into {args.out_dir} "
          f"in {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
