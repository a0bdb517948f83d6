"""One LocalCluster of two worker processes (one thread each, on 127.0.0.1) for the sweep tests
that need a running cluster; the tests of ``cluster=None`` start and close their own."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import distributed
import pytest


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # its HTTP server: any free local port
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
