"""``docs/operations.md``, run: the probes answer as the page shows on a real server, and the metrics table is
what the server exposes (every metric, its type, its labels and their values)."""

from __future__ import annotations

import re
import sys

import pytest

from tests.support.docs_pages import DOCS, ROOT, accepting, background, block, sh
from tests.support.http import free_port
from wiremcp import MCPServer
from wiremcp.observer import OUTCOMES
from wiremcp.transports import Client, MCPHttpApp
from wiremcp.transports.observability.metrics import Metrics

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "operations.md"
CHECKED = {"probes"}
SAMPLE = re.compile(r"(\w+)(?:\{(.*)\})? ")


def test_the_probes_answer_as_the_page_shows() -> None:
    """The server the page names, on a free port; each ``$`` line run as typed prints the line under it."""
    port = free_port()
    with background(f"{sys.executable} -m wiremcp http examples/word_count.py --port {port}") as process:
        accepting(process, port)
        for probe in block(PAGE, "probes").text.replace("8000", str(port)).split("$ ")[1:]:
            typed, *shown = probe.splitlines()
            done = sh(typed)
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines() == shown, done.stdout
    assert "wiremcp http examples/word_count.py --port 8000" in PAGE.read_text()


def _table() -> dict[str, tuple[str, list[str], str]]:
    """The page's metrics table: each metric's type, label names (in order) and label cell."""
    rows: dict[str, tuple[str, list[str], str]] = {}
    for line in PAGE.read_text().splitlines():
        if line.startswith("| `wiremcp_"):
            names, kind, labels, _ = (cell.strip() for cell in line.strip().strip("|").split("|"))
            label_names = re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", labels))
            for name in re.findall(r"`(\w+)`", names):
                rows[name] = (kind, label_names, labels)
    return rows


async def _exposed() -> str:
    """What ``/metrics`` serves for a server that has answered a call, been timed, answered HTTP, refused a token
    and run tasks: every family, each with a sample where it has labels."""
    server = MCPServer("counted")

    @server.tool()
    def word_count(text: str) -> int:
        return len(text.split())

    app = MCPHttpApp(server)
    metrics = Metrics()
    metrics.instrument(app)
    _ = server.runtime.task_runner  # made as the first task-augmented call makes it
    async with Client(server) as client:
        await client.call_tool("word_count", {"text": "read the wire"})
    metrics.timed("handler", "tools/call", "word_count", 0.01)
    metrics.http_response("POST", 200)
    metrics.auth_failure("missing_token")
    try:
        return metrics.render()[0].decode()
    finally:
        await app.manager.close()


async def test_the_metrics_table_is_what_the_server_exposes() -> None:
    exposed = await _exposed()
    types = dict(re.findall(r"^# TYPE (\w+) (\w+)$", exposed, flags=re.M))
    table = _table()
    assert {name: kind for name, (kind, _, _) in table.items()} == types
    labels: dict[str, set[str]] = {}
    for line in exposed.splitlines():
        if (sample := SAMPLE.match(line)) and not line.startswith("#"):
            family = next(name for name in types if sample.group(1) in (name, *(name + s for s in ("_bucket", "_count", "_sum"))))
            labels.setdefault(family, set()).update(re.findall(r"(\w+)=", sample.group(2) or ""))
    for name, (_, label_names, _) in table.items():
        assert set(label_names) == labels.get(name, set()) - {"le"}, name


def test_the_metrics_table_and_help_list_every_request_outcome() -> None:
    row = next(line for line in PAGE.read_text().splitlines() if line.startswith("| `wiremcp_requests_total`"))
    assert re.findall(r"`(\w+)`", row.split("`outcome`")[1].split(")")[0]) == list(OUTCOMES)
    exposed = Metrics().render()[0].decode()
    help_text = next(line for line in exposed.splitlines() if line.startswith("# HELP wiremcp_requests_total"))
    assert all(outcome in help_text for outcome in OUTCOMES), help_text


async def test_the_label_values_the_table_lists_are_those_counted() -> None:
    """The reasons of ``wiremcp_auth_failures_total`` are those ``BearerAuth`` counts; the statuses of
    ``wiremcp_tasks_ended_total`` those exposed."""
    table = _table()
    source = (ROOT / "auth" / "middleware.py").read_text()
    reasons = set(re.findall(r'reason="(\w+)"', source)) | set(re.findall(r'on_failure\("(\w+)"\)', source))
    listed = set(re.findall(r"`(\w+)`", table["wiremcp_auth_failures_total"][2])) - {"reason"}
    assert listed == reasons
    exposed = await _exposed()
    statuses = set(re.findall(r'^wiremcp_tasks_ended_total\{status="(\w+)"\}', exposed, flags=re.M))
    assert set(re.findall(r"`(\w+)`", table["wiremcp_tasks_ended_total"][2])) - {"status"} == statuses


def test_the_drain_settings_are_those_the_server_reads() -> None:
    from wiremcp.transports.serving.settings import Settings

    defaults = Settings()
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ")[1].strip("`") for line in PAGE.read_text().splitlines()
            if line.startswith("| `WIREMCP_")}
    assert rows == {"WIREMCP_DRAIN_SECONDS": str(int(defaults.drain_seconds)),
                    "WIREMCP_DRAIN_SETTLE_SECONDS": str(int(defaults.drain_settle_seconds)),
                    "WIREMCP_STDIO_DRAIN_SECONDS": str(defaults.stdio_drain_seconds)}

