"""Timing: a built-in middleware (``Timing``) that measures how long the rest of the chain takes for each
request: the middleware installed after it, then the server's handler.

Where it is installed decides what it measures: last, the handler alone; first, the handler and every other
middleware. Several can be installed under different names (``Timing("total")`` first, ``Timing()`` last).
Each time is logged at DEBUG to the ``wiremcp.timing`` logger and handed to the runtime's observers that take
times (``wiremcp.observer.TimingObserver``: Prometheus metrics make a histogram of it, tracing an attribute
of the request's span).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable

from wiremcp.middleware import Call, CallNext
from wiremcp.observer import takes_times
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.timing")

_NAME = re.compile(r"[A-Za-z0-9_]+")


class Timing:
    """A middleware that times every request (of ``methods``, default: all) from the moment it hands the
    request on to the moment the result (or error) comes back, whatever the outcome. ``name`` tells the
    times of several ``Timing`` apart (letters, digits and underscores: it becomes a metric label and a span
    attribute's name). Notifications are not timed. ``clock``: monotonic seconds."""

    def __init__(self, name: str = "handler", *, methods: Iterable[str] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not _NAME.fullmatch(name):
            raise ValueError(f"Timing: name {name!r} must be letters, digits and underscores")
        self.name = name
        self.methods = frozenset(methods) if methods is not None else None
        self._clock = clock

    async def __call__(self, call: Call, call_next: CallNext) -> JSONObject | None:
        if call.notification or (self.methods is not None and call.method not in self.methods):
            return await call_next()
        began = self._clock()
        try:
            return await call_next()
        finally:
            self.record(call, self._clock() - began)

    def record(self, call: Call, seconds: float) -> None:
        """Log ``seconds`` and hand it to the observers that take times."""
        component = call.component_name
        log.debug("%s: %s%s took %.3f ms", self.name, call.method, f" {component}" if component else "",
                  seconds * 1000)
        observer = call.runtime.observer
        if takes_times(observer):
            observer.timed(self.name, call.method, component, seconds)
