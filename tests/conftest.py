"""One local Spark session for every suite that needs it, started as the pipeline starts
its own (`probcep.lake.spark.spark_session`), so tests run with the production settings."""

from __future__ import annotations

import logging

import pytest

# py4j logs from finalizers after pytest has closed its capture streams
logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def spark():
    from probcep.lake.spark import spark_session

    session = spark_session("local[2]", "probcep-tests", shuffle_partitions=4)
    yield session
    session.stop()
