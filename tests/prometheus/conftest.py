"""A real Prometheus on 127.0.0.1 for the deploy-gate tests: Debian's `prometheus` and
`promtool` (scripts/setup-prometheus.sh installs them), backfilled with 30 minutes of vLLM's
histograms for three deployments (tests/prometheus/vllm_openmetrics.py), started once per
session with no scrape targets and stopped at its end. Loopback only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.prometheus.vllm_openmetrics import STEP_S, openmetrics

READY_S = 30.0
# the budget the gate holds the deployments to: decode's 2.8 s holds canary's p95 too, so
# only the regression fails it
BUDGET = """\
percentile: 95
slo: {ttft: 1000, total: 6000}
slices: {queue: 200, prefill: 800, decode: 2800}
"""


@dataclass(frozen=True)
class Server:
    """A running Prometheus: its URL, where the backfilled window ends (Unix seconds), and
    every deployment's observed values per family (seconds)."""

    url: str
    end: int
    observed: dict[str, dict[str, np.ndarray]]

    def query(self, promql: str) -> float:
        """The server's own answer to `promql` at the window's end: one number."""
        response = httpx.get(
            f"{self.url}/api/v1/query", params={"query": promql, "time": str(self.end)}
        )
        response.raise_for_status()
        result = response.json()["data"]["result"]
        assert len(result) == 1, (promql, result)
        return float(result[0]["value"][1])


def binaries() -> tuple[str, str]:
    """`prometheus` and `promtool`; skipped without them when not root (who cannot install
    them), a failure as root (CI, where scripts/test.sh has installed them)."""
    found = shutil.which("prometheus"), shutil.which("promtool")
    if found[0] and found[1]:
        return found[0], found[1]
    why = "prometheus/promtool are not installed: run scripts/setup-prometheus.sh"
    if os.geteuid() == 0:
        pytest.fail(why + " (root can: apt-get install prometheus)")
    pytest.skip(why + " as root (apt-get install prometheus)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    prometheus_bin, promtool = binaries()
    folder = tmp_path_factory.mktemp("prometheus")
    end = int(time.time()) // STEP_S * STEP_S - 2 * STEP_S  # in the retention, before now
    text, observed = openmetrics(end)
    (folder / "backfill.om").write_text(text, encoding="utf-8")
    data = folder / "data"
    subprocess.run(
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(folder / "backfill.om"),
            str(data),
        ],
        check=True,
        capture_output=True,
    )
    (folder / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n", encoding="utf-8")
    url = f"http://127.0.0.1:{free_port()}"
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            prometheus_bin,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address={url.removeprefix('http://')}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(url, process, folder / "prometheus.log")
        yield Server(url=url, end=end, observed=observed)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"prometheus exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{url}/-/ready", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(
        f"prometheus not ready in {READY_S} s: {log.read_text(errors='replace')[-2000:]}"
    )
