"""Run a matcher over a whole stream of symbol names and collect what it found."""

from __future__ import annotations

from dataclasses import dataclass

from probcep.engine.approx.bundles import Bundle
from probcep.engine.approx.errors import ErrorAutomaton
from probcep.engine.approx.matcher import ApproxMatcher, Budget, MatchClass, Stats
from probcep.errors import InputError


class MatchLimitError(InputError):
    """A stream holds more matches than the caller's `max_matches`."""

    def __init__(self, message: str, stream_id: str, event: int, tag: int):
        super().__init__(message)
        self.stream_id, self.event, self.tag = stream_id, event, tag


@dataclass
class StreamResult:
    stream_id: str
    matches: list[MatchClass]
    bundles: list[Bundle]
    stats: Stats

    @property
    def n_matches(self) -> int:
        return sum(m.count for m in self.matches)

    def match_keys(self) -> set[tuple[int, int, int]]:
        """(first event, last event, error) of every match class found."""
        return {(m.start, m.position, m.errors) for m in self.matches}


def run_stream(automaton: ErrorAutomaton, window: int, symbols, tags, *,
               budget: Budget | None = None, policy=None, trace: bool = False,
               stream_id: str = "", max_matches: int | None = None) -> StreamResult:
    """Match one stream given as parallel sequences of symbol names and integer tags.

    With `max_matches`, stop with `MatchLimitError` as soon as more matches than that
    are found: their number can grow with the square of the stream's length (and their
    count exponentially), so a caller that would refuse them should not wait for all."""
    if len(symbols) != len(tags):
        raise ValueError(f"{len(symbols)} symbols but {len(tags)} tags")
    index = automaton.index
    matcher = ApproxMatcher(automaton, window, budget=budget, policy=policy, trace=trace,
                            stream_id=stream_id)
    found: list[MatchClass] = []
    total = 0
    for pos, (name, tag) in enumerate(zip(symbols, tags, strict=True)):
        a = index.get(name)
        if a is None:
            raise InputError(f"stream {stream_id!r}: event {pos} (tag {tag}): symbol {name!r} "
                             f"is not in the domain {', '.join(automaton.dfa.domain)}")
        new = matcher.feed(a, int(tag))
        if max_matches is not None and new:
            total += sum(m.count for m in new)
            if total > max_matches:
                raise MatchLimitError(f"stream {stream_id!r}: more than {max_matches} "
                                      f"matches by event {pos} (tag {tag})", stream_id, pos,
                                      int(tag))
        found += new
    return StreamResult(stream_id, found, matcher.finish(), matcher.stats)
