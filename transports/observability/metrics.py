"""Prometheus metrics of one HTTP deployment, in a registry of its own (any number of apps per process).

Counted as they happen: requests by JSON-RPC method and outcome (a ``RequestObserver`` on the
server's runtime), their latency by method (and tool), the times ``wiremcp.timing.Timing`` middleware
measure, by timer, method and component (``timed``), HTTP responses by method and status (from
``operations.Operations``) and authentication failures by reason (``auth.BearerAuth``'s
``on_failure``). Read at scrape time: requests in flight, live sessions, open SSE streams and
the event store's size. The counts are plain integers on the event loop's thread, turned into
Prometheus families when scraped (``exposition``, which imports ``prometheus_client``: at the first
scrape, not to start a server): no lock, no object per sample on the request path.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from wiremcp import methods
from wiremcp.observer import OUTCOMES, method_label, outcome

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from wiremcp.jsonrpc import Request
    from wiremcp.outcome import Outcome
    from wiremcp.server import MCPServer
    from wiremcp.transports.http_app import MCPHttpApp
    from wiremcp.transports.observability.exposition import Exposition

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
REQUESTS_HELP = (f"JSON-RPC requests answered, by method and outcome ({', '.join(OUTCOMES)}) and JSON-RPC error "
                 "code.")
OTHER = "other"
"""The label of a method (JSON-RPC or HTTP) or tool this server does not have: labels stay few."""

_NAMED_BY_NAME = frozenset(m.name for m in methods.METHODS if m.names_component == "name")
"""Methods whose component is a tool or a prompt of the server: a label with a bounded set of values."""


class Metrics:
    """The metrics of one deployment. ``instrument(mcp)`` starts observing an ``MCPHttpApp``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.inflight = 0
        self._server: MCPServer | None = None
        self._app: MCPHttpApp | None = None
        self._counted: dict[tuple[str, str, str], int] = {}
        """Requests answered, by (method, outcome, code)."""
        self._timed: dict[tuple[str, str], list[float]] = {}
        """By (method, tool): the count in each latency bucket (the last: past them all), then the sum."""
        self._timers: dict[tuple[str, str, str], list[float]] = {}
        """What ``Timing`` middleware measured, by (timer, method, component), as ``_timed`` counts."""
        self._responses: dict[tuple[str, str], int] = {}
        self._auth_failures: dict[str, int] = {}
        self._exposition: Exposition | None = None
        if registry is not None:  # given: it is scraped by its owner, so it gets the collectors at once
            self._expose(registry)

    @property
    def registry(self) -> CollectorRegistry:
        """The registry these metrics are collected into (made, with ``prometheus_client``, when first needed)."""
        return self._exposed().registry

    def _exposed(self) -> Exposition:
        return self._exposition or self._expose()

    def _expose(self, registry: CollectorRegistry | None = None) -> Exposition:
        from wiremcp.transports.observability.exposition import Exposition

        self._exposition = Exposition(self, registry)
        return self._exposition

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
        _observe(self._timed, (method, tool), time.perf_counter() - began)
        key = (method, kind, "" if code is None else str(code))
        self._counted[key] = self._counted.get(key, 0) + 1

    # -- TimingObserver ----------------------------------------------------------------------------
    def timed(self, name: str, method: str, component: str | None, seconds: float) -> None:
        """A time ``Timing`` measured. The component is labelled for ``tools/call`` and ``prompts/get`` only
        (a tool or prompt this server has, else ``other``; URIs are not: they are unbounded)."""
        method = method_label(method)
        label = ""
        if method in _NAMED_BY_NAME:
            server = self._server
            names = () if server is None else server.tools if method == "tools/call" else server.prompts
            label = component if component is not None and component in names else OTHER
        _observe(self._timers, (name, method, label), seconds)

    # -- hooks of the HTTP layers ------------------------------------------------------------------
    def http_response(self, method: str, status: int) -> None:
        key = (method if method in HTTP_METHODS else OTHER, str(status))
        self._responses[key] = self._responses.get(key, 0) + 1

    def auth_failure(self, reason: str) -> None:
        """``BearerAuth``'s ``on_failure``."""
        self._auth_failures[reason] = self._auth_failures.get(reason, 0) + 1

    # -- exposition --------------------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        """The metrics in the Prometheus text format, and that format's content type."""
        return self._exposed().render()


def _observe(table: dict[Any, list[float]], key: Any, seconds: float) -> None:
    """Count ``seconds`` in the histogram ``table[key]`` (its buckets, ``LATENCY_BUCKETS`` and past them, then
    the sum)."""
    counts = table.get(key)
    if counts is None:
        counts = table[key] = [0.0] * (len(LATENCY_BUCKETS) + 2)
    counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1
    counts[-1] += seconds
