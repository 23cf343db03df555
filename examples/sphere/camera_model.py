"""Camera sensor model: where in the picture a person is -> which room they are in.

A SPHERE camera reports, per frame with a detected person, the person's bounding box in
the image (and a 3D estimate). The kitchen and living-room cameras see only their room,
but the hallway camera also sees the foot of the staircase, the open kitchen and
living-room doors, and the annotators call a person at the foot of the stairs `stairs`,
not `hall`. So a hallway detection does not mean "hall"; where in the picture it is
says more. This module learns P(room | box) per camera from frames whose room is known
(annotated stays of *other* sequences: the converter trains leave-one-sequence-out):

- features: the 2D box centre and its corners (pixels), standardized over the training
  frames (of the 3D centre, 2D centre, 2D box and their combinations this scored best,
  leave-one-sequence-out, see README.md);
- a frame's posterior: the rooms of its K nearest training frames, smoothed towards the
  training share of the rooms (ALPHA pseudo-frames), so a frame in a region no room owns
  gets the camera's overall mix, not a guess;
- a second's posterior: the normalized geometric mean of its frames' posteriors (the
  frames of one second are one position, not independent evidence, as for the wearable).

A camera whose training frames name only one room (the kitchen and living-room cameras
here) learns just that room: its reading is that room, as before. numpy, pandas and
SciPy's k-d tree for the nearest frames; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

FEATURES = ("centre_2d_x", "centre_2d_y", "bb_2d_br_x", "bb_2d_br_y", "bb_2d_tl_x",
            "bb_2d_tl_y")
K = 50  # nearest training frames that vote for a frame's room
ALPHA = 2.0  # pseudo-frames of the training room shares added to the K votes
MIN_ROOM_FRAMES = 20  # a room with fewer training frames is not learned for this camera
MAX_TRAINING_FRAMES = 6000  # evenly thinned beyond this (the kitchen camera has 30,000)


@dataclass(frozen=True)
class CameraModel:
    """One camera's training frames (standardized features) and their rooms."""

    rooms: tuple[str, ...]  # rooms with enough training frames, in domain order
    centre: np.ndarray  # feature means and standard deviations over the training frames
    scale: np.ndarray
    points: np.ndarray  # training frames x features, standardized
    room_index: np.ndarray  # each training frame's room, an index into `rooms`
    share: np.ndarray  # training share of each room, sums to 1

    def describe(self) -> pd.DataFrame:
        """Per room: training frames and mean box centre, for reading and the README."""
        xy = self.points[:, :2] * self.scale[:2] + self.centre[:2]
        return pd.DataFrame([{"room": r, "frames": int((self.room_index == i).sum()),
                              "centre_x": xy[self.room_index == i, 0].mean(),
                              "centre_y": xy[self.room_index == i, 1].mean()}
                             for i, r in enumerate(self.rooms)])


def features(frames: pd.DataFrame) -> np.ndarray:
    """The model's features of each frame (rows) as floats."""
    return frames.reindex(columns=list(FEATURES)).to_numpy(dtype=float)


def fit(training: Iterable[tuple[pd.DataFrame, Sequence]],
        rooms: Sequence[str]) -> CameraModel | None:
    """Learn from (frames, labels) pairs, one per training sequence; labels are each
    frame's room or None where the annotators give none (left out). None when no room
    has MIN_ROOM_FRAMES training frames."""
    xs, labs = [], []
    for frames, lab in training:
        x = features(frames)
        lab = np.asarray(lab, dtype=object)
        keep = pd.notna(lab) & np.isin(lab, list(rooms)) & ~np.isnan(x).any(axis=1)
        xs.append(x[keep])
        labs.append(lab[keep])
    if not xs:
        return None
    x, lab = np.concatenate(xs), np.concatenate(labs)
    counts = np.array([(lab == r).sum() for r in rooms])
    known = tuple(r for r, n in zip(rooms, counts) if n >= MIN_ROOM_FRAMES)
    if not known:
        return None
    keep = np.isin(lab, known)
    x, lab = x[keep], lab[keep]
    if len(x) > MAX_TRAINING_FRAMES:  # even thinning, deterministic
        pick = np.linspace(0, len(x) - 1, MAX_TRAINING_FRAMES).round().astype(int)
        x, lab = x[pick], lab[pick]
    centre, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    index = np.array([known.index(r) for r in lab])
    share = np.bincount(index, minlength=len(known)) / len(index)
    return CameraModel(known, centre, scale, (x - centre) / scale, index, share)


def frame_posterior(model: CameraModel, frames: pd.DataFrame) -> np.ndarray:
    """P(room | box) for every frame (rows) and room of the model (columns). A frame
    without features gets the training shares."""
    x = (features(frames) - model.centre) / model.scale
    out = np.tile(model.share, (len(x), 1))
    if len(model.rooms) == 1:  # a one-room camera: nothing to tell apart
        return out
    ok = ~np.isnan(x).any(axis=1)
    if not ok.any():
        return out
    k = min(K, len(model.points))
    # a k-d tree, not all distances: the kitchen camera of the ten-sequence release scores
    # 22,000 frames against 6,000 (3 s by brute force, 0.16 s so, the same neighbours)
    _, near = cKDTree(model.points).query(x[ok], k=k)
    near = near.reshape(int(ok.sum()), k)
    votes = np.stack([(model.room_index[near] == i).sum(axis=1)
                      for i in range(len(model.rooms))], axis=1)
    out[ok] = (votes + ALPHA * model.share) / (k + ALPHA)
    return out


def posterior_per_second(model: CameraModel, frames: pd.DataFrame,
                         domain: Sequence[str]) -> pd.DataFrame:
    """P(room | the frames of one second), one row per second with a detection; columns
    follow `domain` (rooms the model does not know get 0). The frames' posteriors are
    combined by their normalized geometric mean."""
    second = np.floor(frames["t"].to_numpy(dtype=float)).astype(np.int64)
    logp = pd.DataFrame(np.log(frame_posterior(model, frames)), columns=list(model.rooms))
    mean = logp.groupby(second).mean()
    z = mean.to_numpy() - mean.to_numpy().max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    post = pd.DataFrame(p, index=mean.index, columns=list(model.rooms))
    post = post.reindex(columns=list(domain), fill_value=0.0)
    post.index.name = "second"
    return post
