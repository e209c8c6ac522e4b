"""Prometheus metrics of one HTTP deployment, in a registry of its own (any number of apps per process).

Counted as they happen: requests by JSON-RPC method and outcome (a ``RequestObserver`` on the
server's runtime), their latency by method (and tool), HTTP responses by method and status (from
``operations.Operations``) and authentication failures by reason (``auth.BearerAuth``'s
``on_failure``). Read at scrape time: requests in flight, live sessions, open SSE streams and
the event store's size. The counts of every request are plain integers on the event loop's thread,
turned into Prometheus families when scraped: no lock, no object per sample on the request path.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric

from wiremcp.observer import OUTCOMES, method_label, outcome

if TYPE_CHECKING:
    from wiremcp.jsonrpc import Request
    from wiremcp.outcome import Outcome
    from wiremcp.server import MCPServer
    from wiremcp.transports.http_app import MCPHttpApp

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
REQUESTS_HELP = (f"JSON-RPC requests answered, by method and outcome ({', '.join(OUTCOMES)}) and JSON-RPC error "
                 "code.")
OTHER = "other"
"""The label of a method (JSON-RPC or HTTP) or tool this server does not have: labels stay few."""


class Metrics:
    """The metrics of one deployment. ``instrument(mcp)`` starts observing an ``MCPHttpApp``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.auth_failures = Counter("wiremcp_auth_failures", "Requests refused by bearer-token "
                                     "authentication, by reason.", ("reason",), registry=self.registry)
        self.inflight = 0
        self._server: MCPServer | None = None
        self._app: MCPHttpApp | None = None
        self._counted: dict[tuple[str, str, str], int] = {}
        """Requests answered, by (method, outcome, code)."""
        self._timed: dict[tuple[str, str], list[float]] = {}
        """By (method, tool): the count in each latency bucket (the last: past them all), then the sum."""
        self._responses: dict[tuple[str, str], int] = {}
        self.registry.register(_Counted(self))
        self.registry.register(_Gauges(self))

    def instrument(self, app: MCPHttpApp) -> None:
        """Observe ``app``'s requests (on its server) and read its sessions, streams and events at scrape time."""
        self._app = app
        self._server = app.server
        app.server.runtime.observe(self)

    # -- RequestObserver ---------------------------------------------------------------------------
    def started(self, request: Request, session_id: str | None) -> Any:
        self.inflight += 1
        return time.perf_counter(), request

    def finished(self, token: Any, answer: Outcome | None) -> None:
        began, request = token
        self.inflight -= 1
        kind, code = outcome(answer)
        method = method_label(request.method)
        tool = ""
        if method == "tools/call":
            name = request.params.get("name")
            tool = name if isinstance(name, str) and self._server is not None and name in self._server.tools \
                else OTHER
        seconds = time.perf_counter() - began
        timed = self._timed.get((method, tool))
        if timed is None:
            timed = self._timed[(method, tool)] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        timed[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        timed[-1] += seconds
        key = (method, kind, "" if code is None else str(code))
        self._counted[key] = self._counted.get(key, 0) + 1

    # -- hooks of the HTTP layers ------------------------------------------------------------------
    def http_response(self, method: str, status: int) -> None:
        key = (method if method in HTTP_METHODS else OTHER, str(status))
        self._responses[key] = self._responses.get(key, 0) + 1

    def auth_failure(self, reason: str) -> None:
        """``BearerAuth``'s ``on_failure``."""
        self.auth_failures.labels(reason).inc()

    # -- exposition --------------------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        """The metrics in the Prometheus text format, and that format's content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _Counted:
    """The request counts, as Prometheus families at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        metrics = self.metrics
        requests = CounterMetricFamily("wiremcp_requests", REQUESTS_HELP, labels=("method", "outcome", "code"))
        for counted, count in list(metrics._counted.items()):
            requests.add_metric(counted, count)
        yield requests
        latency = HistogramMetricFamily("wiremcp_request_duration_seconds",
                                        "Time to answer a JSON-RPC request, by method (and tool for tools/call).",
                                        labels=("method", "tool"))
        for timed_key, timed in list(metrics._timed.items()):
            cumulative, buckets = 0.0, []
            for bound, in_bucket in zip((*LATENCY_BUCKETS, float("inf")), timed[:-1], strict=True):
                cumulative += in_bucket
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            latency.add_metric(timed_key, buckets, timed[-1])
        yield latency
        responses = CounterMetricFamily("wiremcp_http_responses", "HTTP responses of the MCP routes, by HTTP "
                                        "method and status.", labels=("method", "status"))
        for response, count in list(metrics._responses.items()):
            responses.add_metric(response, count)
        yield responses


class _Gauges:
    """What is read at scrape time rather than counted."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("wiremcp_requests_in_flight", "JSON-RPC requests being answered now.",
                                value=self.metrics.inflight)
        app = self.metrics._app
        if app is None:
            return
        live = list(app.manager.live.values())
        yield GaugeMetricFamily("wiremcp_sessions", "Handshake-era sessions served by this process.",
                                value=len(live))
        streams = sum(session.streams_open for session in live)
        stateless = getattr(app.endpoint.stateless, "streams_open", None)
        if isinstance(stateless, int):
            streams += stateless
        yield GaugeMetricFamily("wiremcp_sse_streams_open", "SSE streams open now (every era).", value=streams)
        server = app.server
        if server.runtime.has_task_runner:
            runner = server.runtime.task_runner
            yield GaugeMetricFamily("wiremcp_tasks_running", "Tasks whose handler runs in this process now.",
                                    value=len(runner.running))
            ended = CounterMetricFamily("wiremcp_tasks_ended", "Tasks run here that ended, by status.",
                                        labels=("status",))
            for status in ("completed", "failed", "cancelled"):
                ended.add_metric((status,), runner.ended[status])
            yield ended
        size = getattr(app.manager.events, "size", None)
        if isinstance(size, tuple) and len(size) == 2:
            yield GaugeMetricFamily("wiremcp_event_store_events", "Events kept for resumption.", value=size[0])
            yield GaugeMetricFamily("wiremcp_event_store_bytes", "Bytes of the events kept for resumption.",
                                    value=size[1])
