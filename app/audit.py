"""Audit log: a built-in middleware (``AuditLog``) that writes one JSON line per request: when, who (the
principal's issuer, subject and client id; never a token or a claim), which method and component, how it
ended and how long it took. Lines go to the ``wiremcp.audit`` logger (stderr, like every log), or to the
``write`` given (a file, a queue to a log shipper)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

import orjson

from wiremcp.errors import INTERNAL_ERROR, MCPError, RateLimited
from wiremcp.middleware import Call, CallNext
from wiremcp.observer import result_outcome
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.audit")


class AuditLog:
    """A middleware that records every request (of ``methods``, default: all) as one JSON line once it is
    answered: ``ts`` (Unix seconds), ``method``, ``component`` (the tool or prompt name, or the URI),
    ``principal``/``client_id`` (None without authentication), ``session``, ``peer``, ``outcome`` (``ok``,
    ``tool_error``, ``input_required``, ``task``, ``error`` with its ``code``, ``rate_limited``,
    ``cancelled``) and ``duration_ms``. Put it first to see what the other middleware refuse. ``clock``
    gives ``ts``; ``timer`` (monotonic: the wall clock may jump) measures ``duration_ms``."""

    def __init__(self, *, methods: Iterable[str] | None = None, write: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.time, timer: Callable[[], float] = time.perf_counter) -> None:
        self.methods = frozenset(methods) if methods is not None else None
        self.write = write or log.info
        self._clock = clock
        self._timer = timer

    async def __call__(self, call: Call, call_next: CallNext) -> JSONObject | None:
        if call.notification or (self.methods is not None and call.method not in self.methods):
            return await call_next()
        started = self._timer()
        line: JSONObject = {"ts": round(self._clock(), 3), "method": call.method, "component": call.component_name,
                            "principal": call.principal.key if call.principal else None,
                            "client_id": call.principal.client_id if call.principal else None,
                            "session": call.session.state.id if call.session else None, "peer": call.peer}
        try:
            result = await call_next()
        except RateLimited:
            line["outcome"] = "rate_limited"
            raise
        except MCPError as exc:
            line["outcome"], line["code"] = "error", exc.code
            raise
        except asyncio.CancelledError:
            line["outcome"] = "cancelled"
            raise
        except Exception:
            line["outcome"], line["code"] = "error", INTERNAL_ERROR
            raise
        else:
            line["outcome"] = result_outcome(result)
            return result
        finally:
            line["duration_ms"] = round((self._timer() - started) * 1000, 3)
            self.write(orjson.dumps(line).decode())

