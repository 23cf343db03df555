"""Approximate complex event matching under a compute budget (docs/semantics.md §7; the
paper "History is a mirror to the future").

- `errors`: the k-error automaton (cost vectors of prefixes, least insertions);
- `matcher`: ACEP (every match with at most k errors in a window, skip-till-any-match)
  and RC-ACEP (the same under a budget of expansions per event);
- `bundles`: match bundles;
- `history`, `policies`: which partial matches to keep when the budget is short.
"""

from probcep.engine.approx.bundles import Bundle, BundleTracker
from probcep.engine.approx.errors import ErrorAutomaton, default_domain, pattern_symbols
from probcep.engine.approx.history import History
from probcep.engine.approx.matcher import ApproxMatcher, Budget, MatchClass, Stats
from probcep.engine.approx.policies import (
    HistoryPolicy,
    OldestFirstShedding,
    RandomShedding,
    make_policy,
)
from probcep.engine.approx.run import MatchLimitError, StreamResult, run_stream

__all__ = ["ApproxMatcher", "Budget", "Bundle", "BundleTracker", "ErrorAutomaton", "History",
           "HistoryPolicy", "MatchClass", "MatchLimitError", "OldestFirstShedding",
           "RandomShedding", "Stats", "StreamResult", "default_domain", "make_policy",
           "pattern_symbols", "run_stream"]
