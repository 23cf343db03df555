"""The one error contract: every failure a user can cause or fix is a `ProbcepError`.

Its message says what is wrong and where (file, stream, t, setting, table, day), in one
line where it can. The `probcep` command prints it and exits with code 2; any other
exception is a bug and keeps its traceback (exit code 1).
"""


class ProbcepError(Exception):
    """An expected failure: bad input, a bad setting, missing data, a refused request."""


class InputError(ProbcepError, ValueError):
    """Data that breaks the stream model or its file format; names the file, stream and t."""
