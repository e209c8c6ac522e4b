"""OpenTelemetry tracing: one SERVER span per request, named and described as the MCP semantic
conventions ask (``tools/call word_count``; ``mcp.method.name``, ``mcp.session.id``,
``jsonrpc.request.id``, ``gen_ai.tool.name``, ``error.type``...).

The parent is the trace context the request carries in ``params._meta`` (``traceparent``,
``tracestate``, read by the configured propagator: W3C trace context by default), else the current span (an ASGI instrumentation's), else the HTTP request's own
``traceparent`` / ``tracestate`` headers (which ``operations.Operations`` keeps for the request).
The span is current while the middleware and the handler run, so the spans a handler makes are its
children, and the times ``wiremcp.timing.Timing`` middleware measure become attributes of it
(``wiremcp.timing.<timer>_ms``).

This module needs ``opentelemetry-api``; ``tracing_observer()`` says whether to trace at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from wiremcp import methods
from wiremcp.logs import SESSION_ID
from wiremcp.observer import method_label, outcome
from wiremcp.transports.observability.operations import TRACE_HEADERS

if TYPE_CHECKING:
    from wiremcp.jsonrpc import Request
    from wiremcp.outcome import Outcome

_NAMED = {"tools": "gen_ai.tool.name", "prompts": "gen_ai.prompt.name"}
"""The semantic conventions' attribute for the name of a component of each kind (by the capability that
serves it)."""
_TARGETS = {m.name: _NAMED[m.capability] for m in methods.METHODS
            if m.names_component == "name" and m.capability in _NAMED}
"""Methods whose span name has a target (those naming their component by ``name``: ``wiremcp.methods``),
and the attribute that names it."""


class Tracing:
    """A ``RequestObserver`` that traces every request with ``tracer_provider`` (the global one by default)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("wiremcp", tracer_provider=tracer_provider)

    def started(self, request: Request, session_id: str | None) -> Any:
        method = request.method
        params = request.params
        attributes: dict[str, Any] = {"mcp.method.name": method, "jsonrpc.request.id": str(request.id)}
        name = method_label(method)
        key = _TARGETS.get(method)
        if key is not None:
            target = params.get("name")
            if isinstance(target, str):
                attributes[key] = target
                name = f"{method} {target}"
        elif method in methods.NAMES_BY_URI:  # a resource, a template's instance, a skill or a skill's folder
            uri = params.get("uri")
            if isinstance(uri, str):
                attributes["mcp.resource.uri"] = uri
        session_id = session_id or SESSION_ID.get()
        if session_id:
            attributes["mcp.session.id"] = session_id
        span = self.tracer.start_span(name, context=_parent(params), kind=SpanKind.SERVER, attributes=attributes)
        return span, otel_context.attach(trace.set_span_in_context(span))

    def finished(self, token: Any, answer: Outcome | None) -> None:
        span, attached = token
        otel_context.detach(attached)
        kind, code = outcome(answer)
        if kind == "error":
            error = answer.message["error"] if answer is not None else {}
            span.set_attribute("error.type", str(code))
            span.set_attribute("rpc.response.status_code", str(code))
            span.set_status(Status(StatusCode.ERROR, str(error.get("message", ""))))
        elif kind == "tool_error":
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "the tool reported an error"))
        elif kind == "cancelled":
            span.add_event("cancelled")
        span.end()

    def timed(self, name: str, method: str, component: str | None, seconds: float) -> None:
        """A time ``Timing`` measured, as an attribute of the current span: the request's, made current by
        ``started`` in the request's context, which the middleware runs in."""
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute(f"wiremcp.timing.{name}_ms", round(seconds * 1000, 3))


def _parent(params: dict[str, Any]) -> otel_context.Context | None:
    """The context to start a request's span in (None: the current one)."""
    meta = params.get("_meta")
    if isinstance(meta, dict):
        carried = propagate.extract({k: v for k, v in meta.items() if isinstance(v, str)})
        if trace.get_current_span(carried).get_span_context().is_valid:
            return carried
    if trace.get_current_span().get_span_context().is_valid:
        return None
    headers = TRACE_HEADERS.get()
    return propagate.extract(headers) if headers else None


def tracing_observer() -> Tracing | None:
    """A ``Tracing`` if a tracer provider is configured (an SDK's, not the API's no-op default), else None."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return Tracing()
