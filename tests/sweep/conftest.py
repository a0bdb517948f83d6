"""One LocalCluster of two worker processes (one thread each, on 127.0.0.1) for the sweep tests
that need a running cluster; the tests of ``cluster=None`` start and close their own."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import distributed
import pytest


@contextlib.contextmanager
def running_cluster(*, workers: int, processes: bool) -> Iterator[Any]:
    """A client of a LocalCluster (one thread a worker; worker processes listen on 127.0.0.1, workers
    in this process talk in memory), closed afterwards."""
    where: dict[str, Any] = {"host": "127.0.0.1"} if processes else {}
    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=processes,
        **where,
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


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    with running_cluster(workers=2, processes=True) as client:
        yield client
