"""Request observers: what metrics and tracing see of every request, in both eras and on every transport.

``wiremcp.entry.serve`` tells the runtime's ``observer`` when a request starts and how it ended. With no observer
set, that costs one attribute check. An observer must be cheap and must not raise: it runs on the
request's own path, in the request's own context (so a tracer may make its span current there).

An observer may also take the times a ``wiremcp.timing.Timing`` middleware measures (``TimingObserver``:
a ``timed`` method); one without that method does not see them. ``timed`` is called in the request's
context too, between ``started`` and ``finished``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from wiremcp import methods

if TYPE_CHECKING:
    from wiremcp.jsonrpc import Request
    from wiremcp.outcome import Outcome


METHODS = methods.ALL
"""The request methods a server answers, in either era."""


def method_label(method: str) -> str:
    """``method`` if a server answers it, else ``other``: what clients send must not make labels unbounded."""
    return method if method in METHODS else "other"


class RequestObserver(Protocol):
    """Sees each request once it is decoded, and its answer once it is ready."""

    def started(self, request: Request, session_id: str | None) -> Any:
        """A request starts (``session_id``: its handshake-era session, if it has one). What this returns
        is handed back to ``finished``."""
        ...

    def finished(self, token: Any, answer: Outcome | None) -> None:
        """The request ended with ``answer``; None if it was cancelled (or the server is shutting down)."""
        ...


class TimingObserver(Protocol):
    """An observer that also takes what ``Timing`` middleware measures (the method is optional: see the module)."""

    def timed(self, name: str, method: str, component: str | None, seconds: float) -> None:
        """The timer ``name`` measured ``seconds`` for a request of ``method`` naming ``component`` (the
        tool or prompt name, or the URI, as the client gave it: unbounded, so an observer that labels by it
        must bound it)."""
        ...


def takes_times(observer: object) -> TypeGuard[TimingObserver]:
    """Whether ``observer`` takes the times ``Timing`` measures (has a ``timed`` method)."""
    return callable(getattr(observer, "timed", None))


class Observers:
    """Several observers seen as one, called in order."""

    __slots__ = ("_timers", "items")

    def __init__(self, *items: RequestObserver) -> None:
        self.items = items
        self._timers = tuple(item for item in items if takes_times(item))
        """The items that take times (``timed``)."""

    def started(self, request: Request, session_id: str | None) -> Any:
        return [item.started(request, session_id) for item in self.items]

    def finished(self, token: Any, answer: Outcome | None) -> None:
        for item, one in zip(self.items, token, strict=True):
            item.finished(one, answer)

    def timed(self, name: str, method: str, component: str | None, seconds: float) -> None:
        """Hand a time to every item that takes times; the others do not see it."""
        for item in self._timers:
            item.timed(name, method, component, seconds)


def listed(current: RequestObserver | None) -> tuple[RequestObserver, ...]:
    """Every observer in ``current``."""
    if current is None:
        return ()
    return current.items if isinstance(current, Observers) else (current,)


def joined(items: tuple[RequestObserver, ...]) -> RequestObserver | None:
    """One observer for ``items``: None, the only one, or ``Observers``."""
    if not items:
        return None
    return items[0] if len(items) == 1 else Observers(*items)


OUTCOMES = ("ok", "tool_error", "input_required", "task", "error", "cancelled")
"""Every value ``outcome`` gives (metrics document them)."""


def outcome(answer: Outcome | None) -> tuple[str, int | None]:
    """How a request ended, for metrics and spans: ``ok``, ``tool_error`` (a tool result with ``isError``),
    ``input_required`` (a stateless-era round that asks the client for input), ``task`` (the call goes
    on as a task, either era), ``error`` (a JSON-RPC error, with its code) or ``cancelled``."""
    if answer is None:
        return "cancelled", None
    message = answer.message
    error = message.get("error")
    if error is not None:
        code = error.get("code") if isinstance(error, dict) else None
        return "error", code if isinstance(code, int) else None
    return result_outcome(message.get("result")), None


def result_outcome(result: Any) -> str:
    """How a request answered with ``result`` ended: ``ok``, ``tool_error``, ``input_required`` or ``task``."""
    if isinstance(result, dict):
        if result.get("isError") is True:
            return "tool_error"
        if result.get("resultType") == "input_required":
            return "input_required"
        if result.get("resultType") == "task" or isinstance(result.get("task"), dict):
            return "task"
    return "ok"
