"""Wearable RSSI sensor model: turn a packet's RSSI at each access point into a room.

The SPHERE wrist wearable sends about 20 packets a second; each access point (AP) that
hears a packet records its RSSI in dBm, and an AP that misses it leaves the cell empty.
Alone these numbers name no room, so this module learns, per room and AP:

- `p_hear`: the probability that the AP hears a packet sent from that room, and
- `mean`, `sd`: a Gaussian of the RSSI the AP measures when it does,

from packets whose room is known (annotated stays of *other* sequences: the converter
trains leave-one-sequence-out). A packet's log-likelihood in room r is the naive-Bayes
sum over the APs that are installed: `log p_hear + log N(rssi)` for an AP that heard it,
`log(1 - p_hear)` for one that did not.

Access points come and go between sequences (Study_AP is never on in 00001-00006,
Lounge_AP is off in 00006). An AP that heard nothing in a whole sequence is taken as not
installed there: it neither trains the model on that sequence nor votes when scoring it,
instead of voting "not heard, so far away" in every packet.

Pure numpy/pandas; no I/O, so it can be tested on made-up packets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

MIN_SD_DB = 2.0  # RSSI comes in whole dB: a narrower Gaussian would be overconfident
P_HEAR_RANGE = (0.02, 0.98)  # never certain that an AP hears / misses a packet
MIN_HEARD = 10  # fewer heard packets than this: use the AP's pooled Gaussian instead
MIN_ROOM_PACKETS = 20  # a room with fewer training packets is not modelled (score floor)
POSTERIOR_FLOOR = 1e-4  # no room is ever ruled out by the wearable alone


@dataclass(frozen=True)
class RssiModel:
    """Per-room, per-AP hearing probability and RSSI Gaussian (arrays are rooms x APs)."""

    rooms: tuple[str, ...]  # rooms with enough training packets, in domain order
    aps: tuple[str, ...]  # access points seen installed in at least one training sequence
    p_hear: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    prior: np.ndarray  # over `rooms`, sums to 1

    def describe(self) -> pd.DataFrame:
        """One row per room and AP: what the model learned, for reading and the README."""
        rows = [{"room": r, "ap": a, "p_hear": self.p_hear[i, j], "mean_dbm": self.mean[i, j],
                 "sd_db": self.sd[i, j]}
                for i, r in enumerate(self.rooms) for j, a in enumerate(self.aps)]
        return pd.DataFrame(rows)


def installed_aps(rssi: pd.DataFrame) -> np.ndarray:
    """Which AP columns heard at least one packet: the APs installed in this sequence."""
    return rssi.notna().any(axis=0).to_numpy()


def fit(training: Iterable[tuple[pd.DataFrame, Sequence]], rooms: Sequence[str],
        aps: Sequence[str], prior: str = "visits", power: float = 0.5) -> RssiModel:
    """Learn the model from (rssi, labels) pairs, one per training sequence.

    rssi: one row per packet, one column per AP in `aps` (NaN: not heard). labels: the
    packet's room, or None/NaN where the annotators give none (such packets are left
    out). prior over the modelled rooms, proportional to a count raised to `power`:
    "visits" (each room's training stays, `visits`), "frequency" (its training packets)
    or "uniform". Patterns ask which room follows which, so how often a room is entered
    matters more than how long it is occupied: a time share talks down the short hall and
    stairs stays where patterns begin and end, and a uniform prior gives a room entered a
    few times in all (the study) the weight of the hall, whose RSSI it shares when its own
    AP is off. The square root (power 0.5) tempers it: with the full visit share the
    landing (44 stays) outweighs the toilet (10) in most toilet seconds (README.md).
    """
    aps = list(aps)
    values, heard, active, labels, stays = [], [], [], [], np.zeros(len(rooms))
    for rssi, lab in training:
        stays += visits(lab, rooms)
        rssi = rssi.reindex(columns=aps)
        lab = pd.Series(np.asarray(lab, dtype=object))
        keep = lab.notna().to_numpy()
        x = rssi.to_numpy(dtype=float)[keep]
        values.append(x)
        heard.append(~np.isnan(x))
        active.append(np.broadcast_to(installed_aps(rssi), x.shape))
        labels.append(lab[keep].to_numpy())
    x, h = np.concatenate(values), np.concatenate(heard)
    on, lab = np.concatenate(active), np.concatenate(labels)

    onehot = np.stack([lab == r for r in rooms], axis=1).astype(float)  # packets x rooms
    n_room = onehot.sum(axis=0)
    known = n_room >= MIN_ROOM_PACKETS
    onehot, rooms = onehot[:, known], tuple(r for r, k in zip(rooms, known) if k)
    used = on.any(axis=0)
    x, h, on = x[:, used], h[:, used], on[:, used]
    aps = tuple(a for a, u in zip(aps, used) if u)

    heard_on = h & on
    x0 = np.where(heard_on, x, 0.0)
    n = onehot.T @ on  # packets sent from the room while the AP was installed
    k = onehot.T @ heard_on  # ... of which the AP heard
    s1, s2 = onehot.T @ x0, onehot.T @ (x0 * x0)
    p_hear = np.clip((k + 1.0) / (n + 2.0), *P_HEAR_RANGE)  # Laplace: no 0 or 1

    pooled_mean = x0.sum(axis=0) / np.maximum(heard_on.sum(axis=0), 1)
    pooled_sd = np.sqrt(np.maximum((x0 * x0).sum(axis=0) / np.maximum(heard_on.sum(axis=0), 1)
                                   - pooled_mean**2, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / k
        sd = np.sqrt(np.maximum(s2 / k - mean**2, 0.0))
    few = k < MIN_HEARD
    mean = np.where(few, pooled_mean, mean)
    sd = np.maximum(np.where(few, pooled_sd, sd), MIN_SD_DB)

    if prior == "visits":
        counts = stays[known]
    elif prior == "frequency":
        counts = onehot.sum(axis=0)
    elif prior == "uniform":
        counts = np.ones(len(rooms))
    else:
        raise ValueError(f"prior must be 'visits', 'frequency' or 'uniform', got {prior!r}")
    weights = counts ** power
    return RssiModel(rooms, aps, p_hear, mean, sd, weights / weights.sum())


def visits(labels: Sequence, rooms: Sequence[str]) -> np.ndarray:
    """How many stays of each room `labels` (one sequence's rooms in time order, None
    where unlabelled) holds: runs of one room, unlabelled stretches skipped, so a stay
    the annotators disagree inside of counts once."""
    lab = pd.Series(np.asarray(labels, dtype=object)).dropna().to_numpy()
    starts = lab[np.r_[True, lab[1:] != lab[:-1]]] if len(lab) else lab
    return np.array([(starts == r).sum() for r in rooms], dtype=float)


def packet_log_likelihood(model: RssiModel, rssi: pd.DataFrame,
                          installed: np.ndarray | None = None) -> np.ndarray:
    """log P(packet | room) for every packet (rows) and modelled room (columns).

    Only APs installed in the scored sequence (by default: those that heard anything in
    `rssi`) and known to the model vote.
    """
    frame = rssi.reindex(columns=list(model.aps))
    if installed is None:
        installed = installed_aps(frame)
    x = frame.to_numpy(dtype=float)[:, None, :]  # packets x 1 x APs
    h = ~np.isnan(x)
    log_gauss = (-0.5 * ((x - model.mean) / model.sd) ** 2
                 - np.log(model.sd * np.sqrt(2 * np.pi)))
    ll = np.where(h, np.log(model.p_hear) + np.nan_to_num(log_gauss),
                  np.log1p(-model.p_hear))
    return (ll * np.asarray(installed, dtype=float)).sum(axis=2)


def posterior_per_second(model: RssiModel, t: np.ndarray, rssi: pd.DataFrame,
                         domain: Sequence[str]) -> pd.DataFrame:
    """P(room | the packets of one second), one row per second that has packets.

    t: each packet's time in seconds; a packet belongs to second floor(t). The second's
    evidence is the *mean* of its packets' log-likelihoods, i.e. one packet's worth:
    the ~20 packets of a second are far from independent (same wrist, same spot), and
    summing them would make every second near-certain, right or wrong. Columns follow
    `domain`; rooms the model does not know get the floor. Probabilities are floored at
    POSTERIOR_FLOOR and renormalized, so every score is positive and finite.
    """
    second = np.floor(np.asarray(t, dtype=float)).astype(np.int64)
    ll = pd.DataFrame(packet_log_likelihood(model, rssi), columns=list(model.rooms))
    mean_ll = ll.groupby(second).mean()
    logit = mean_ll.to_numpy() + np.log(model.prior)
    logit -= logit.max(axis=1, keepdims=True)
    p = np.exp(logit)
    p /= p.sum(axis=1, keepdims=True)
    post = pd.DataFrame(p, index=mean_ll.index, columns=list(model.rooms))
    post = post.reindex(columns=list(domain), fill_value=0.0).clip(lower=POSTERIOR_FLOOR)
    post = post.div(post.sum(axis=1), axis=0)
    post.index.name = "second"
    return post
