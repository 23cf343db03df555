"""A Spark master Spark would refuse is one line before any JVM starts."""

from __future__ import annotations

import pytest

from probcep.errors import ProbcepError
from probcep.lake.spark import MASTER, spark_session


@pytest.mark.parametrize("master", ["bogus", "local[0]", "local[]", "spark://", "local[2] "])
def test_a_master_spark_would_refuse_is_one_error(master):
    with pytest.raises(ProbcepError, match="is not one Spark takes"):
        spark_session(master)


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,2]",
                                    "local-cluster[2,1,1024]", "spark://127.0.0.1:7077",
                                    "spark://h1:7077,h2:7077", "yarn", "k8s://https://h:443"])
def test_masters_spark_takes_pass(master):
    assert MASTER.fullmatch(master)


def test_a_standalone_master_nobody_answers_at_is_one_error():
    import socket

    with socket.socket() as free:  # a port no one listens on once it is closed
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(ProbcepError, match=rf"Spark master spark://127.0.0.1:{port}: cannot "
                                           rf"connect \(127.0.0.1:{port}: .*refused"):
        spark_session(f"spark://127.0.0.1:{port}")  # before a JVM: not after its minute
