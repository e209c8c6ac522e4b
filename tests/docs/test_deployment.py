"""``docs/deployment.md``, run: the uvicorn command as typed (on a free port), the image's command as the
Dockerfile has it, ``deploy/local_cluster.py`` as typed (Redis, two replicas and real nginx), and the nested
shutdown timeouts the page gives as the deployment files set them."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.docs_pages import DOCS, ENV, ROOT, accepting, block, initialize
from tests.support.http import START_BOUND, free_port, stop_process

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "deployment.md"
CHECKED = {"uvicorn", "dockerfile-cmd", "local-cluster"}


@contextlib.contextmanager
def _running(command: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``command`` in a shell of its own; yields it and, once it is stopped, what it printed (one string)."""
    printed: list[str] = []
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(["bash", "-c", command], cwd=ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        try:
            yield process, printed
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            stop_process(process)  # type: ignore[arg-type]
            log.seek(0)
            printed.append(log.read())
    assert "Traceback" not in printed[0], printed[0]


def test_the_uvicorn_command_serves_the_server_and_says_its_url() -> None:
    command = block(PAGE, "uvicorn").text.strip()
    assert "--port 8000" in command
    port = free_port()
    with _running(command.replace("8000", str(port))) as (process, printed):
        accepting(process, port)
        answer = initialize(f"http://127.0.0.1:{port}/mcp")
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["serverInfo"]["name"] == "word_count"
    assert f"Uvicorn running on http://0.0.0.0:{port}/mcp" in printed[0], printed[0]
    assert "`Uvicorn running on http://0.0.0.0:8000/mcp`" in PAGE.read_text()


def test_the_images_command_is_the_dockerfiles() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text().splitlines()
    assert block(PAGE, "dockerfile-cmd").text.strip() in dockerfile
    assert "--timeout-graceful-shutdown 15" in block(PAGE, "uvicorn").text  # the same as the image's


def test_the_local_cluster_serves_through_nginx_as_the_page_says() -> None:
    """The page's command, its port replaced by a free one: it says its URL, and a session made through it
    serves a call."""
    command = block(PAGE, "local-cluster").text.strip()
    assert command.endswith("--port 8080")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with _running(command.replace("8080", str(port))) as (process, printed):
        deadline = time.monotonic() + 2 * START_BOUND  # Redis, two replicas, then nginx
        while True:
            assert process.poll() is None, "the cluster exited"
            with contextlib.suppress(httpx.TransportError):
                answer = initialize(url)
                if answer.status_code == 200:
                    break
            assert time.monotonic() < deadline, f"{url} answers within {2 * START_BOUND}s"
            time.sleep(0.1)  # the poll interval of a bounded wait
    assert answer.json()["result"]["serverInfo"]["name"], answer.text
    assert f"wiremcp local cluster: {url}" in printed[0], printed[0]
    assert "`wiremcp local cluster: http://127.0.0.1:8080/mcp`" in PAGE.read_text()


def test_the_shutdown_timeouts_nest_as_the_files_set_them() -> None:
    """The orchestrators' stop timeouts, as the page gives them, are those the files set."""
    text = " ".join(PAGE.read_text().split())
    dockerfile = (ROOT / "Dockerfile").read_text()
    compose = (ROOT / "deploy" / "compose.yaml").read_text()
    kubernetes = (ROOT / "deploy" / "kubernetes" / "deployment.yaml").read_text()
    assert "WIREMCP_DRAIN_SECONDS=10" in dockerfile
    assert '"--timeout-graceful-shutdown", "15"' in dockerfile
    assert re.search(r"stop_grace_period: 45s", compose)
    assert "terminationGracePeriodSeconds: 60" in kubernetes
    assert 'command: ["sleep", "5"]' in kubernetes
    assert ("compose's `stop_grace_period` (45 s shipped) and Kubernetes' `terminationGracePeriodSeconds` (60 s "
            "shipped, which also covers the 5 s `preStop` sleep)") in text
