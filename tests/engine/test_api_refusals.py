"""The Python API refuses what it cannot take with a `ProbcepError` naming it, never a
raw TypeError, a Numba typing error or a silent wrap-around (QA, 2026-11-26)."""

from __future__ import annotations

import numpy as np
import pytest

from probcep.engine import Query, StreamMatcher
from probcep.engine.grouping import QueryError
from probcep.engine.pattern import PatternError
from probcep.errors import InputError

ROWS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])


@pytest.mark.parametrize("options", [
    {"window": True}, {"window": 2.5}, {"window": float("inf")}, {"window": float("nan")},
    {"window": "3"}, {"threshold": None}, {"threshold": "0.5"}, {"threshold": True}])
def test_bad_query_options_are_query_errors(options):
    with pytest.raises(QueryError):
        Query.build("a b", ["a", "b"], **options)


def test_numpy_integers_are_options_and_times():
    query = Query.build("a b", ["a", "b"], window=np.int64(2), threshold=np.float64(0.5))
    matcher = StreamMatcher(query)
    groups = matcher.feed(np.int64(5), ROWS) + matcher.finish()
    assert [(g.t_start, g.t_end) for g in groups] == [(5, 6)]


@pytest.mark.parametrize("domain", [[1, 2], ["", "a"]])
def test_a_domain_of_empty_or_non_text_symbols_is_refused(domain):
    with pytest.raises(InputError, match="non-empty strings"):
        Query.build(".", domain)


@pytest.mark.parametrize("policy", ["single", "complete"])
@pytest.mark.parametrize("method", ["transducer", "naive"])
@pytest.mark.parametrize("fed", [None, 0])
def test_a_stream_without_rows_finishes_with_no_groups(policy, method, fed):
    matcher = StreamMatcher(Query.build("a b", ["a", "b"], policy=policy, method=method))
    if fed is not None:
        assert matcher.feed(fed, np.zeros((0, 2))) == []
    assert matcher.finish() == []


@pytest.mark.parametrize("policy", ["single", "complete"])
@pytest.mark.parametrize("t0", [2 ** 63 - 2, 2 ** 64, -(2 ** 63) - 1])
def test_a_block_past_the_64_bit_timesteps_is_refused(policy, t0):
    matcher = StreamMatcher(Query.build("a b", ["a", "b"], policy=policy, window=3))
    with pytest.raises(InputError, match="64-bit"):
        matcher.feed(t0, ROWS)


def test_the_last_64_bit_timesteps_are_taken():
    matcher = StreamMatcher(Query.build("a b", ["a", "b"], policy="complete", window=3))
    groups = matcher.feed(2 ** 63 - 3, ROWS) + matcher.finish()
    assert [(g.t_start, g.t_end) for g in groups] == [(2 ** 63 - 3, 2 ** 63 - 2)]


def test_a_float_time_is_refused():
    with pytest.raises(InputError, match="integer timestep"):
        StreamMatcher(Query.build("a b", ["a", "b"])).feed(1.5, ROWS)


@pytest.mark.parametrize("bound", ["\u0663", "\uff12"])  # ARABIC-INDIC 3, FULLWIDTH 2
def test_repetition_bounds_are_ascii_digits(bound):
    with pytest.raises(PatternError):
        Query.build(f"a{{{bound}}}", ["a"])


@pytest.mark.parametrize("pattern", ["b\t\t& b", "b\n&\nb"])
def test_the_caret_points_at_the_position_whatever_the_spaces(pattern):
    with pytest.raises(PatternError) as refused:
        Query.build(pattern, ["b"])
    _, shown, pointer = str(refused.value).split("\n")
    assert "\t" not in shown and shown[pointer.index("^")] == "&"
