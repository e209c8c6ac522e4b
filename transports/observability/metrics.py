"""Prometheus metrics of one HTTP deployment, in a registry of its own (any number of apps per process).

Counted as they happen: requests by JSON-RPC method and outcome (a ``RequestObserver`` on the
server), their latency by method (and tool), HTTP responses by method and status (from
``operations.Operations``) and authentication failures by reason (``auth.BearerAuth``'s
``on_failure``). Read at scrape time: requests in flight, live sessions, open SSE streams and
the event store's size.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from wiremcp.observer import OUTCOMES, method_label, outcome

if TYPE_CHECKING:
    from wiremcp.jsonrpc import Request
    from wiremcp.outcome import Outcome
    from wiremcp.server import MCPServer
    from wiremcp.transports.http_app import MCPHttpApp

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER = "other"
"""The label of a method (JSON-RPC or HTTP) or tool this server does not have: labels stay few."""


class Metrics:
    """The metrics of one deployment. ``instrument(mcp)`` starts observing an ``MCPHttpApp``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.requests = Counter("wiremcp_requests", "JSON-RPC requests answered, by method and outcome "
                                f"({', '.join(OUTCOMES)}) and JSON-RPC error code.",
                                ("method", "outcome", "code"), registry=self.registry)
        self.latency = Histogram("wiremcp_request_duration_seconds",
                                 "Time to answer a JSON-RPC request, by method (and tool for tools/call).",
                                 ("method", "tool"), buckets=LATENCY_BUCKETS, registry=self.registry)
        self.http_responses = Counter("wiremcp_http_responses", "HTTP responses of the MCP routes, by HTTP "
                                      "method and status.", ("method", "status"), registry=self.registry)
        self.auth_failures = Counter("wiremcp_auth_failures", "Requests refused by bearer-token "
                                     "authentication, by reason.", ("reason",), registry=self.registry)
        self.inflight = 0
        self._server: MCPServer | None = None
        self._app: MCPHttpApp | None = None
        # Label children, resolved once: the hot path is one dict lookup per metric.
        self._counted: dict[tuple[str, str, str], Any] = {}
        self._timed: dict[tuple[str, str], Any] = {}
        self._responses: dict[tuple[str, int], Any] = {}
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
        timed = self._timed.get((method, tool))
        if timed is None:
            timed = self._timed[(method, tool)] = self.latency.labels(method, tool)
        timed.observe(time.perf_counter() - began)
        key = (method, kind, "" if code is None else str(code))
        counted = self._counted.get(key)
        if counted is None:
            counted = self._counted[key] = self.requests.labels(*key)
        counted.inc()

    # -- hooks of the HTTP layers ------------------------------------------------------------------
    def http_response(self, method: str, status: int) -> None:
        counted = self._responses.get((method, status))
        if counted is None:
            label = method if method in HTTP_METHODS else OTHER
            counted = self._responses[(method, status)] = self.http_responses.labels(label, str(status))
        counted.inc()

    def auth_failure(self, reason: str) -> None:
        """``BearerAuth``'s ``on_failure``."""
        self.auth_failures.labels(reason).inc()

    # -- exposition --------------------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        """The metrics in the Prometheus text format, and that format's content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


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
