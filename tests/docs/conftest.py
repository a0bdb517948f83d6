"""The built documentation site, for every docs test (``_site``: built once, or skipped saying why)."""

from __future__ import annotations

import pathlib

import pytest

from tests.docs._site import built_site


@pytest.fixture(scope="session")
def site() -> pathlib.Path:
    return built_site()
