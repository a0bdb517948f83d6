"""End to end against a real OpenTelemetry consumer: Arize Phoenix, started here on 127.0.0.1.

Phoenix lives in its own virtualenv (its dependencies pin versions loopnb's tests use otherwise),
named by ``LOOPNB_PHOENIX_PYTHON``; ``.ci/run`` makes it. Without it these tests skip, saying
so, unless ``LOOPNB_REQUIRE_PHOENIX`` is set (CI), where a missing Phoenix fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from loopnb.notebook import NotebookRunner
from loopnb.scenarios import SCENARIOS

pytestmark = pytest.mark.slow

QUERY = """
import json, sys
from phoenix.client import Client
spans = Client(base_url=sys.argv[1]).spans.get_spans(project_identifier="default", limit=1000)
print(json.dumps([
    {"name": s["name"], "status": s["status_code"], "attributes": s.get("attributes", {}),
     "events": [e["name"] for e in s.get("events", [])]}
    for s in spans
]))
"""


def _python() -> str:
    python = os.environ.get("LOOPNB_PHOENIX_PYTHON", "")
    if not python or not Path(python).exists():
        reason = "no Phoenix virtualenv (set LOOPNB_PHOENIX_PYTHON to its python; .ci/run makes one)"
        if os.environ.get("LOOPNB_REQUIRE_PHOENIX"):
            pytest.fail(f"LOOPNB_REQUIRE_PHOENIX is set but {reason}")
        pytest.skip(reason)
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    python = _python()
    port, grpc = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix")),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    server = subprocess.Popen(
        [python, "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"Phoenix did not start: {server.stderr.read().decode()[-2000:] if server.stderr else ''}"
                )
            time.sleep(0.25)
        yield python, url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _spans(python: str, url: str, expected: int) -> list[dict]:
    deadline = time.monotonic() + 30
    while True:
        out = subprocess.run([python, "-c", QUERY, url], capture_output=True, text=True, check=True)
        spans = json.loads(out.stdout)
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.25)  # Phoenix ingests in the background


def test_phoenix_shows_failed_tool_calls_as_errors_and_only_hard_runs_as_errors(phoenix):
    python, url = phoenix
    expected = 0
    for name in ("mistyped_path", "stubborn_loop"):
        runner = NotebookRunner(SCENARIOS[name].engine(), view=False, export=url)
        runner.run(SCENARIOS[name].task, raise_hard=False)
        runner.exporter.close()
        expected += sum(
            1 for e in runner.recorder.event_objects if e.kind in ("model_replied", "tool_dispatched")
        )
        expected += 1
    spans = _spans(python, url, expected)
    assert len(spans) == expected
    runs = {s["attributes"]["loopnb.run_id"]: s for s in spans if s["name"] == "invoke_agent loopnb"}
    assert sorted(s["status"] for s in runs.values()) == ["ERROR", "UNSET"]
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    soft = [s for s in tools if s["attributes"]["loopnb.channel"] == "soft"]
    assert soft and all(s["status"] == "ERROR" and s["attributes"]["error.type"] for s in soft)
    assert all(s["attributes"]["loopnb.error_text"] for s in soft)  # what the model read: an attribute
    assert all(s["status"] != "ERROR" for s in spans if s["name"].startswith("chat"))
