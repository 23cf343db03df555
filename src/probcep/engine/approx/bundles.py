"""Match bundles (the approximate-matching paper's Definition 3; docs/semantics.md §7).

A bundle is a maximal run of match points in which consecutive points are at most `w`
apart. Match points arrive in non-decreasing order, so a bundle is closed as soon as a
point (or the stream's end) lies more than `w` after its last point.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Bundle:
    """One bundle of one stream; `n_matches` counts distinct critical subsequences."""

    bundle_id: int
    first_point: int
    last_point: int
    n_matches: int = 0
    min_errors: int = 0
    #: The id a History gave this bundle (match map bit), if one has seen it.
    history_id: int | None = None

    def as_dict(self) -> dict:
        return {"bundle": self.bundle_id, "first_match_point": self.first_point,
                "last_match_point": self.last_point, "n_matches": self.n_matches,
                "min_errors": self.min_errors}


class BundleTracker:
    """Chains match points of one stream into bundles, in stream order."""

    def __init__(self, window: int):
        self.window = window
        self.closed: list[Bundle] = []
        self.open: Bundle | None = None

    def add(self, point: int, n_matches: int, errors: int) -> Bundle:
        """Record `n_matches` matches of `errors` errors at match point `point`."""
        b = self.open
        if b is not None and point < b.last_point:
            raise ValueError(f"match point {point} arrives after {b.last_point}")
        if b is None or point - b.last_point > self.window:
            if b is not None:
                self.closed.append(b)
            next_id = len(self.closed)
            b = self.open = Bundle(next_id, point, point, 0, errors)
        b.last_point = point
        b.n_matches += n_matches
        b.min_errors = min(b.min_errors, errors)
        return b

    def finish(self) -> list[Bundle]:
        """Close the open bundle; return every bundle of the stream."""
        if self.open is not None:
            self.closed.append(self.open)
            self.open = None
        return self.closed
