"""The engine: patterns, matches, groups and exact group probabilities.

Pure Python, NumPy and Numba; it knows nothing of Spark, Delta or Airflow.
"""

from probcep.engine.automaton import Dfa, compile_pattern
from probcep.engine.grouping import Group, Query, StreamMatcher
from probcep.engine.naive import NaiveLimitError
from probcep.engine.pattern import PatternError

__all__ = ["Dfa", "Group", "NaiveLimitError", "PatternError", "Query", "StreamMatcher",
           "compile_pattern"]
