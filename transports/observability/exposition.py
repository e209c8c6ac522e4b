"""The Prometheus side of ``Metrics``: its registry, the collectors that turn its plain counts into metric
families when scraped, and the text format. ``Metrics`` imports this module at the first scrape (or when its
registry is asked for), so that serving does not import ``prometheus_client`` until someone scrapes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric

from wiremcp.transports.observability.metrics import LATENCY_BUCKETS, REQUESTS_HELP

if TYPE_CHECKING:
    from wiremcp.server import MCPServer
    from wiremcp.transports.observability.metrics import Metrics


class Exposition:
    """``metrics`` in ``registry`` (a new one by default: one per app, any number of apps per process)."""

    def __init__(self, metrics: Metrics, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.registry.register(_Counted(metrics))
        self.registry.register(_Gauges(metrics))

    def render(self) -> tuple[bytes, str]:
        """The registry's metrics in the Prometheus text format, and that format's content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _Counted:
    """The counts, as Prometheus families at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        metrics = self.metrics
        requests = CounterMetricFamily("wiremcp_requests", REQUESTS_HELP, labels=("method", "outcome", "code"))
        for counted, count in list(metrics._counted.items()):
            requests.add_metric(counted, count)
        yield requests
        yield _histogram(HistogramMetricFamily(
            "wiremcp_request_duration_seconds", "Time to answer a JSON-RPC request, by method (and tool for "
            "tools/call).", labels=("method", "tool")), metrics._timed)
        yield _histogram(HistogramMetricFamily(
            "wiremcp_timed_seconds", "Times measured by Timing middleware, by timer, method and component (the "
            "tool of tools/call, the prompt of prompts/get).", labels=("timer", "method", "component")),
            metrics._timers)
        responses = CounterMetricFamily("wiremcp_http_responses", "HTTP responses of the MCP routes, by HTTP "
                                        "method and status.", labels=("method", "status"))
        for response, count in list(metrics._responses.items()):
            responses.add_metric(response, count)
        yield responses
        failures = CounterMetricFamily("wiremcp_auth_failures", "Requests refused by bearer-token "
                                       "authentication, by reason.", labels=("reason",))
        for reason, count in list(metrics._auth_failures.items()):
            failures.add_metric((reason,), count)
        yield failures


def _histogram(family: HistogramMetricFamily, table: dict[Any, list[float]]) -> HistogramMetricFamily:
    """``family`` with a histogram per key of ``table`` (the counts per bucket of ``LATENCY_BUCKETS`` and past
    them, then the sum: as ``Metrics`` keeps them)."""
    for labels, counts in list(table.items()):
        cumulative, buckets = 0.0, []
        for bound, in_bucket in zip((*LATENCY_BUCKETS, float("inf")), counts[:-1], strict=True):
            cumulative += in_bucket
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        family.add_metric(labels, buckets, counts[-1])
    return family


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
        yield from _upstreams(server)
        size = getattr(app.manager.events, "size", None)
        if isinstance(size, tuple) and len(size) == 2:
            yield GaugeMetricFamily("wiremcp_event_store_events", "Events kept for resumption.", value=size[0])
            yield GaugeMetricFamily("wiremcp_event_store_bytes", "Bytes of the events kept for resumption.",
                                    value=size[1])


def _upstreams(server: MCPServer) -> Iterator[Metric]:
    """A gateway's upstream servers (its remote children): whether each is connected, how many times it
    connected, and the requests sent on to it, by method and outcome, with the seconds they took."""
    remote = sys.modules.get("wiremcp.transports.gateway")  # imported where a remote child is defined, only there
    links = remote.upstream_links(server) if remote is not None else []
    if not links:
        return
    up = GaugeMetricFamily("wiremcp_upstream_up", "Whether the gateway is connected to the upstream server now.",
                           labels=("upstream",))
    connections = CounterMetricFamily("wiremcp_upstream_connections", "Times the gateway connected to the "
                                      "upstream server (more than one: it reconnected).", labels=("upstream",))
    requests = CounterMetricFamily("wiremcp_upstream_requests", "Requests sent on to the upstream server, by "
                                   "method and outcome (ok, error, unavailable, cancelled).",
                                   labels=("upstream", "method", "outcome"))
    seconds = CounterMetricFamily("wiremcp_upstream_request_seconds", "Seconds the requests sent on to the "
                                  "upstream server took, by method and outcome.",
                                  labels=("upstream", "method", "outcome"))
    for link in links:
        up.add_metric((link.name,), 1 if link.client is not None else 0)
        connections.add_metric((link.name,), link.connections)
        for (method, outcome), (count, spent) in list(link.served.items()):
            requests.add_metric((link.name, method, outcome), count)
            seconds.add_metric((link.name, method, outcome), spent)
    yield from (up, connections, requests, seconds)
