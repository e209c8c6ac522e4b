"""``Exposition``: the Prometheus side of ``Metrics``, made at the first scrape (or when the registry is asked
for), or at once in a registry given by its owner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from wiremcp.transports.observability.exposition import Exposition
from wiremcp.transports.observability.metrics import Metrics

ROOT = Path(__file__).resolve().parents[3]


def test_a_given_registry_gets_the_collectors_at_once() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    metrics.http_response("POST", 200)
    metrics.auth_failure("missing_token")
    scraped = generate_latest(registry).decode()
    assert 'wiremcp_http_responses_total{method="POST",status="200"} 1.0' in scraped
    assert 'wiremcp_auth_failures_total{reason="missing_token"} 1.0' in scraped
    assert metrics.registry is registry


def test_otherwise_the_registry_is_made_once_when_first_needed() -> None:
    metrics = Metrics()
    assert metrics._exposition is None
    body, content_type = metrics.render()
    assert isinstance(metrics._exposition, Exposition)
    assert metrics.registry is metrics._exposition.registry
    assert "# TYPE wiremcp_requests_in_flight gauge" in body.decode()
    assert content_type.startswith("text/plain")
    metrics.render()
    assert metrics.registry is metrics._exposition.registry


def test_counting_imports_no_prometheus_client_until_scraped() -> None:
    code = (
        "import sys\n"
        "from wiremcp.transports.observability.metrics import Metrics\n"
        "m = Metrics()\n"
        "m.http_response('POST', 200)\n"
        "m.auth_failure('invalid_token')\n"
        "print('prometheus_client' in sys.modules)\n"
        "m.render()\n"
        "print('prometheus_client' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "True"]
