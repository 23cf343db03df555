"""The pattern language table (docs/semantics.md §2) and engine objects' contracts."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from probcep.engine import PatternError, Query, StreamMatcher, compile_pattern

DOMAIN = ("Door", "Room", "Hall", "x")


@pytest.mark.parametrize("pattern,accepted,rejected", [
    ("Door", ["Door"], ["Room", "Door Door"]),
    ("Door Room", ["Door Room"], ["Door", "Room Door"]),
    ("Door | Room", ["Door", "Room"], ["Hall", "Door Room"]),
    ("( Door | Room ) Hall", ["Door Hall", "Room Hall"], ["Hall", "Door Room Hall"]),
    ("Door Room+ Door", ["Door Room Door", "Door Room Room Room Door"], ["Door Door"]),
    ("Door Room* Door", ["Door Door", "Door Room Door"], ["Door Room"]),
    ("Door Room? Door", ["Door Door", "Door Room Door"], ["Door Room Room Door"]),
    ("Room{3}", ["Room Room Room"], ["Room Room", "Room Room Room Room"]),
    ("Room{2,}", ["Room Room", "Room Room Room Room"], ["Room"]),
    ("Room{1,2} Door", ["Room Door", "Room Room Door"], ["Door", "Room Room Room Door"]),
    (". Door", ["Hall Door", "x Door", "Door Door"], ["Door", "Door Hall"]),
    ("[Door Room]+", ["Door", "Room Door Room"], ["Hall", "Door Hall"]),
    ("[^Door Room] x", ["Hall x", "x x"], ["Door x", "Room x"]),
    ("Door{0} Room", ["Room"], ["Door Room"]),
])
def test_language(pattern, accepted, rejected):
    dfa = compile_pattern(pattern, DOMAIN)
    for text in accepted:
        assert dfa.accepts(text.split()), text
    for text in rejected:
        assert not dfa.accepts(text.split()), text


def test_dfa_is_minimal_for_the_seed_pattern():
    dfa = compile_pattern("a b+ c", "abcd")
    assert dfa.n_states == 4 and dfa.min_length() == 3


@pytest.mark.parametrize("pattern,position,message", [
    ("Door Room+ Dor", 11, "unknown symbol 'Dor'"),
    ("Door ) Room", 5, "unexpected ')'"),
    ("Door Room{2,1}", 9, "upper bound below"),
    ("Door Room{999}", 9, "exceeds the limit"),
    ("Door Room{a}", 9, "bad repetition"),
    ("Room*", 0, "empty sequence"),
    ("Hall | Room*", 7, "empty sequence"),  # the part that lets it match nothing
    ("Hall Door | (Room)?", 12, "empty sequence"),
    ("Hall | (Room? | Door)+", 8, "empty sequence"),
    ("Hall | Door? Room*", 7, "empty sequence"),
    ("[^Door Room Hall x]", 0, "never match"),
    ("[ ]", 0, "empty symbol class"),
    ("[Door . Room]", 6, "only symbol names"),
    ("", 0, "empty pattern"),
    ("Door +", 5, None),
    ("+ Door", 0, "unexpected '+'"),
    ("Door ||", 6, "expected a symbol"),
])
def test_errors_name_the_position(pattern, position, message):
    if message is None:
        compile_pattern(pattern, DOMAIN)  # a quantifier may follow whitespace
        return
    with pytest.raises(PatternError) as err:
        compile_pattern(pattern, DOMAIN)
    assert err.value.position == position
    assert message in str(err.value)


def test_patterns_are_never_evaluated():
    with pytest.raises(PatternError):
        compile_pattern("__import__('os')", DOMAIN)


def test_query_validates_its_options():
    dfa = compile_pattern("Door", DOMAIN)
    for bad in ({"policy": "both"}, {"threshold": 1.5}, {"window": 0}, {"method": "fast"}):
        with pytest.raises(ValueError):
            Query(dfa, **bad)


def test_matcher_pickles_mid_stream():
    """Spark ships engine objects to executors: a pickled matcher resumes exactly."""
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4), size=500)
    query = Query.build("Door Room+ Door", DOMAIN, policy="complete", threshold=0.01,
                        window=8)
    a = StreamMatcher(query)
    first = a.feed(0, probs[:250])
    b = pickle.loads(pickle.dumps(a))
    assert a.feed(250, probs[250:]) + a.finish() == b.feed(250, probs[250:]) + b.finish()
    assert first


@pytest.mark.parametrize("pattern,position", [
    ("Door [^Door Room Hall x]", 5),
    ("( [^Door Room Hall x] | [^x Hall Room Door] ) Room", 2),
    ("Door{2} Room [^Door Room Hall x]+", 13),
    ("( Door [^Door Room Hall x] | Room [^Door Room Hall x] )", 7),
])
def test_a_pattern_that_can_never_match_points_at_the_class_that_empties_it(pattern,
                                                                           position):
    """The caret stood at position 0 whatever the pattern (QA, 2026-11-27)."""
    with pytest.raises(PatternError, match="can never match over this domain") as refused:
        compile_pattern(pattern, DOMAIN)
    assert refused.value.position == position and pattern[position] == "["


@pytest.mark.parametrize("pattern", ["Door ( [^Door Room Hall x] | Room )",
                                     "Door [^Door Room Hall x]* Room",
                                     "Door [^Door Room Hall x]{0,2} Room"])
def test_a_class_of_no_symbol_that_a_match_can_do_without_is_taken(pattern):
    dfa = compile_pattern(pattern, DOMAIN)
    assert dfa.accepts(["Door", "Room"])  # the way round the empty class
    assert not dfa.accepts(["Door"]) and not dfa.accepts(["Door", "x", "Room"])
