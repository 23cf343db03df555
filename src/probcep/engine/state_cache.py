"""A bounded cache of per-stream engine states, the rest spilled (the paper's §5).

Live mode keeps one `StreamMatcher` per pattern and stream between micro-batches; with
many streams they do not all fit in memory. `StateCache` holds at most `capacity` of
them and spills the others through `spill(key, matcher)`, reading them back with
`load(key)` when their stream has readings again; such a read is a *miss*. Which state
leaves when room is needed is the eviction policy:

- `creation` (the paper's TPM): the state cached longest ago, whatever happened since;
- `priority` (its STPM): the state expected to be needed last, after the paper's
  formula (5), W = e.t + Δt × p: its last use plus its stream's usual gap between two
  uses (measured per stream as the cache runs, in its clock of gets and puts), that gap
  shortened by up to half by p, how likely the stream's next reading extends an open
  run (the probability its live runs carry, 1 with an open group, 0 when nothing is
  open; in live mode an open state is also needed by every micro-batch, which steps it
  over silence). The state just put may be the one spilled: a stream seldom read does
  not push out the states of streams read often (a scan through more streams than the
  cache holds empties a `creation` or `lru` cache before any state is used again);
- `lru`: the state least recently used.

A policy changes which reads miss, never a matcher's state, so never a group
(tests/engine/test_state_cache.py).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from probcep.engine.grouping import StreamMatcher

POLICIES = ("creation", "priority", "lru")
#: How many keys' use history (last use, reuse distance: `priority`'s measure) the cache
#: keeps, in multiples of its capacity; beyond it the least recently used key's is
#: forgotten (its next gap counts as the mean), so the history grows with the capacity,
#: not with the number of streams ever seen.
HISTORY = 16


@dataclass
class _Entry:
    matcher: StreamMatcher
    created: int
    used: int


def open_mass(matcher: StreamMatcher) -> float:
    """How likely the stream's next reading extends an open run: the probability carried
    by its live runs (0 when nothing is open)."""
    n = matcher.runs.n
    return float(np.sum(matcher.runs.m[:n])) + (1.0 if matcher.n_open else 0.0)


@dataclass
class StateCache:
    capacity: int
    policy: str
    load: Callable[[Hashable], StreamMatcher | None]
    spill: Callable[[Hashable, StreamMatcher], None]
    misses: int = 0
    _entries: dict = field(default_factory=dict)
    _clock: int = 0
    _gap: float = 0.0  # mean reuse distance (exponentially weighted), for `priority`
    #: key -> clock of its last use, cached or not; least recent first, at most HISTORY x
    #: capacity keys
    _last: OrderedDict = field(default_factory=OrderedDict)
    _gaps: dict = field(default_factory=dict)  # key -> its mean reuse distance

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"eviction policy must be one of {POLICIES}, got {self.policy!r}")
        if self.capacity < 1:
            raise ValueError(f"cache capacity must be >= 1, got {self.capacity}")
        self._gap = float(self.capacity)  # until measured: about a cache's worth

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> StreamMatcher | None:
        """The stream's matcher: cached, or loaded from the spill (a miss), or None when
        the stream has no saved state (not a miss: nothing was evicted)."""
        self._clock += 1
        entry = self._entries.get(key)
        if key in self._last:
            d = self._clock - self._last[key]
            self._gap += (d - self._gap) / 64.0
            self._gaps[key] = 0.5 * (self._gaps.get(key, d) + d)
        if key in self._last:
            self._last.move_to_end(key)  # its order is the order of use
        self._last[key] = self._clock
        self._forget()
        if entry is not None:
            entry.used = self._clock
            return entry.matcher
        matcher = self.load(key)
        if matcher is not None:
            self.misses += 1
            self.put(key, matcher)
        return matcher

    def put(self, key: Hashable, matcher: StreamMatcher) -> None:
        """Cache the stream's (new) matcher; over capacity, spill the lowest ranked
        down to 15/16 of it (ranking is a pass over the cache, so it is done once for a
        sixteenth of the capacity's puts, not on every put)."""
        self._clock += 1
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = _Entry(matcher, self._clock, self._clock)
        else:
            entry.matcher, entry.used = matcher, self._clock
        if key not in self._last:
            self._last[key] = self._clock
            self._forget()
        if len(self._entries) > self.capacity:
            # ranking is a pass over the cache: make room for a sixteenth of it at once
            keep = self.capacity - self.capacity // 16
            out = len(self._entries) - keep
            candidates = [k for k in self._entries if k != key or self.policy == "priority"]
            for victim in heapq.nsmallest(out, candidates, key=self._rank):
                self.spill(victim, self._entries.pop(victim).matcher)

    def drop(self, key: Hashable) -> None:
        """Forget the stream's state (it became quiet: nothing to keep)."""
        self._entries.pop(key, None)
        self._last.pop(key, None)
        self._gaps.pop(key, None)

    def _forget(self) -> None:
        if len(self._last) > HISTORY * self.capacity:
            oldest, _ = self._last.popitem(last=False)
            self._gaps.pop(oldest, None)

    def flush(self) -> None:
        """Spill every cached state (at a checkpoint); they stay cached."""
        for key, entry in self._entries.items():
            self.spill(key, entry.matcher)

    def _rank(self, key):
        entry = self._entries[key]
        if self.policy == "creation":
            return entry.created
        if self.policy == "lru":
            return entry.used
        gap = self._gaps.get(key, self._gap)
        return -(entry.used + gap * (1.0 - 0.5 * min(1.0, open_mass(entry.matcher))))
