"""The history structure H of the approximate-matching paper (its Definition 4), learned
by reinforcement.

Vertices are *match vectors* and *match bundles*. A match vector describes a match node
at a moment: `(cost vector id, remaining-window bucket, time-since-last bucket)` — the
paper's `(state, remaining w, err, time since last)`, where our cost vector stands for
both state and error (see `errors.py`). The remaining window is taken when the node
last grew (so it never changes while the node waits), the time since then when the node
is looked at; both are cut into `n_buckets` equal slices of the window. Each match
vector keeps

- `visits`: how often a node with this vector was expanded;
- `edges`: the match vectors its expansions led to, with counts (visit sequences);
- `links`: the bundles its expansions completed a match in (ids unique per History);
- a *match map*: the set of bundles reachable from the vector through `edges` and
  `links`, as a bitmap (a Python int), recomputed every `refresh` updates so lookups
  are one dictionary access. Only the latest `max_bundles` bundles are kept in the
  maps, which bounds their size on a long stream.

and `value` estimates, per (cost vector, remaining-window bucket) — the part of the
match vector that a node's creator already knows — the chance that expanding such a
node leads to a match. It is learned by temporal-difference learning, TD(0): after an
expansion the estimate moves towards 1 if the expansion completed a match, else towards
`gamma` times the value of the node it produced. The step size is `1 / visits`, floored
at `alpha_min`: a running average while history is short, tracking drift afterwards.
This is the paper's online, low-overhead update of H by reinforcement learning (its
Section 5): one update per expansion, during the budgeted run too.

A History's keys use the vector ids of the ErrorAutomaton it is bound to (`bind`).
Ids are numbered in the order an automaton first meets each cost vector, so two
automata of one pattern number them differently; a pickled History keeps the cost
vector of each id (its basis), and binding it to another automaton renumbers its keys
by those vectors.
"""

from __future__ import annotations

import copy

Key = tuple[int, int, int]


class History:
    def __init__(self, window: int, *, n_buckets: int = 4, gamma: float = 0.9,
                 alpha_min: float = 0.02, prior: float = 0.0, refresh: int = 5000,
                 max_bundles: int = 1024):
        if window < 1 or n_buckets < 1 or not 0 < gamma <= 1:
            raise ValueError("History needs window >= 1, n_buckets >= 1, 0 < gamma <= 1")
        self.window = window
        self.n_buckets = n_buckets
        self.gamma = gamma
        self.alpha_min = alpha_min
        self.prior = prior
        self.refresh = refresh
        self.max_bundles = max_bundles
        self.visits: dict[Key, int] = {}
        self.value: dict[tuple[int, int], float] = {}
        self.value_visits: dict[tuple[int, int], int] = {}
        self.edges: dict[Key, dict[Key, int]] = {}
        self.links: dict[Key, set[int]] = {}
        self.n_bundles = 0
        self.events = 0
        self.candidates = 0
        self.tag_span = 0
        self._prev_tag: int | None = None
        self._maps: dict[Key, int] = {}
        self._since_refresh = 0
        self._automaton = None  # whose vector ids the keys use (None: none yet)
        self._basis: list[bytes] | None = None  # the cost vector of each id, once pickled

    # --- the automaton its keys are of ------------------------------------------------

    def bind(self, automaton) -> None:
        """Key this history by `automaton`'s vector ids: a history learned with another
        automaton of the same pattern is renumbered by the cost vectors of its ids."""
        if automaton is self._automaton:
            return
        if self.ids_lost:
            raise ValueError("this History was pickled before its ids' cost vectors were "
                             "(probcep before 2026-11-26): its keys cannot be mapped")
        if self._basis is not None:
            new = [automaton.vector_id(vector) for vector in self._basis]
            self._renumber(lambda vid: new[vid])
        elif self._automaton is not None:
            old = self._automaton
            self._renumber(lambda vid: automaton.vector_id(old.vector(vid)))
        self._automaton, self._basis = automaton, None

    def _renumber(self, to) -> None:
        def key(k):
            return (to(k[0]), *k[1:])

        self.visits = {key(k): n for k, n in self.visits.items()}
        self.value = {key(k): v for k, v in self.value.items()}
        self.value_visits = {key(k): n for k, n in self.value_visits.items()}
        self.edges = {key(k): {key(c): n for c, n in succ.items()}
                      for k, succ in self.edges.items()}
        self.links = {key(k): set(bs) for k, bs in self.links.items()}
        self._maps = {key(k): m for k, m in self._maps.items()}

    def __getstate__(self):
        """Keyed by the cost vectors' sorted order, not the automaton's ids, so the same
        history pickles to the same bytes whichever automaton learned it (QA: a night
        run again in another process committed its unchanged history anew)."""
        automaton = self._automaton
        if automaton is None:
            state = dict(self.__dict__)
            del state["_automaton"]
            return state
        basis = automaton.basis()
        order = sorted(range(len(basis)), key=basis.__getitem__)
        rank = [0] * len(basis)
        for r, vid in enumerate(order):
            rank[vid] = r
        canonical = object.__new__(History)  # `_renumber` makes new dicts: self stays
        canonical.__dict__.update(self.__dict__)
        canonical._renumber(rank.__getitem__)
        state = dict(canonical.__dict__)
        del state["_automaton"]
        state["_basis"] = [basis[vid] for vid in order]  # the ids' vectors go with it
        return state

    #: Pickled without its ids' vectors (probcep before 2026-11-26), after learning: its
    #: keys are the ids of an automaton that is gone, which no automaton can map.
    ids_lost = False

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._automaton = None
        if "_basis" not in state:
            self._basis = None
            self.ids_lost = bool(self.visits)

    # --- match vectors ---------------------------------------------------------------

    def key(self, vid: int, start_tag: int, last_tag: int, now: int) -> Key:
        """The match vector of a node with cost vector `vid` at tag `now`."""
        w, nb = self.window, self.n_buckets
        remaining = max(1, w - (last_tag - start_tag))
        since = now - last_tag
        return (vid, min(nb - 1, (remaining - 1) * nb // w), min(nb - 1, since * nb // w))

    def value_of(self, key: Key) -> float:
        return self.value.get(key[:2], self.prior)

    def match_map(self, key: Key) -> int:
        return self._maps.get(key, 0)

    # --- learning --------------------------------------------------------------------

    def new_bundle(self) -> int:
        """A fresh bundle id for the match map bits."""
        self.n_bundles += 1
        return self.n_bundles - 1

    def update(self, key: Key, child: Key, bundle: int | None) -> None:
        """One expansion: a node at `key` produced `child`; `bundle` id if it matched."""
        self.visits[key] = self.visits.get(key, 0) + 1
        succ = self.edges.setdefault(key, {})
        succ[child] = succ.get(child, 0) + 1
        if bundle is not None:
            self.links.setdefault(key, set()).add(bundle)
            target = 1.0
        else:
            target = self.gamma * self.value_of(child)
        vkey = key[:2]
        n = self.value_visits[vkey] = self.value_visits.get(vkey, 0) + 1
        old = self.value.get(vkey, self.prior)
        self.value[vkey] = old + max(1.0 / n, self.alpha_min) * (target - old)
        self._since_refresh += 1
        if self._since_refresh >= self.refresh:
            self.refresh_maps()

    def observe_event(self, n_candidates: int, tag: int, new_stream: bool) -> None:
        """Count one event: its candidates and how far its tag moved on."""
        self.events += 1
        self.candidates += n_candidates
        if self._prev_tag is not None and not new_stream:
            self.tag_span += max(0, tag - self._prev_tag)
        self._prev_tag = tag

    def events_per_tag(self) -> float | None:
        """Events per unit of tag seen so far (None before a tag has moved on)."""
        return self.events / self.tag_span if self.tag_span else None

    def refresh_maps(self) -> None:
        """Recompute every match map: bundles reachable along edges, to a fixpoint."""
        self._since_refresh = 0
        oldest = max(0, self.n_bundles - self.max_bundles)
        # a bundle older than the latest max_bundles is in no map now or later (oldest
        # only grows): its links go, or a history pickled night after night kept every
        # bundle it ever completed (80 KiB after 50 nights of six streams, 3 KiB after
        # one: QA longevity, 2026-11-28)
        self.links = {k: {b for b in bs if b >= oldest} for k, bs in self.links.items()}
        maps = {k: sum(1 << b for b in bs) for k, bs in self.links.items()}
        changed = True
        while changed:
            changed = False
            for k, succ in self.edges.items():
                m = maps.get(k, 0)
                new = m
                for s in succ:
                    new |= maps.get(s, 0)
                if new != m:
                    maps[k] = new
                    changed = True
        self._maps = maps

    def copy(self) -> History:
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return (f"History({len(self.visits)} match vectors, {self.n_bundles} bundles, "
                f"{sum(self.visits.values())} expansions)")
