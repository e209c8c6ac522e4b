"""Answering one request in either era: the context it runs in, its response, and the HTTP status
the stateless era prescribes for that response."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wiremcp import jsonrpc
from wiremcp.context import Context
from wiremcp.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, BadRequest, InsufficientScope, MCPError
from wiremcp.logs import REQUEST_ID
from wiremcp.stateless import request_state
from wiremcp.types import JSONObject, Send, StreamControl

if TYPE_CHECKING:
    from wiremcp.server import MCPServer
    from wiremcp.session import ServerSession
    from wiremcp.state import SessionState

log = logging.getLogger("wiremcp.dispatcher")


@dataclass(slots=True)
class Answer:
    message: JSONObject
    status: int = 200
    """What Streamable HTTP answers with: 400 for malformed stateless requests, 404 for unknown methods,
    403 when the caller lacks scopes."""
    scopes: list[str] | None = None
    """With 403: the scopes the step-up challenge must name."""


async def answer(server: MCPServer, request: jsonrpc.Request, send: Send, *, stateless: bool,
                 state: SessionState | None = None, session: ServerSession | None = None,
                 control: StreamControl | None = None, principal: Any = None) -> Answer:
    """Run one request through the dispatcher. Handshake-era requests run in ``state`` (their session's);
    stateless ones in the state their ``_meta`` declares (read here unless the transport already did).
    ``server.observer``, when set, sees the request start and end."""
    observer = server.observer
    token = observer.started(request, session.state.id if session is not None else None) \
        if observer is not None else None
    logged = REQUEST_ID.set(request.id)
    done: Answer | None = None  # None at the end: cancelled
    try:
        if state is None:
            assert stateless, "a handshake-era request needs its session's state"
            state = request_state(request.params, principal)
        ctx = Context(server, state, request.id, request.method, request.params, send, session=session,
                      control=control, principal=principal)
        value = await server.dispatcher.dispatch(request.method, request.params, ctx)
        done = Answer(jsonrpc.result(request.id, value))
        return done
    except MCPError as exc:
        if isinstance(exc, InsufficientScope):
            status = 403
        elif isinstance(exc, BadRequest):
            status = 400
        else:
            status = 404 if stateless and exc.code == METHOD_NOT_FOUND else 200
        done = Answer({"jsonrpc": "2.0", "id": request.id, "error": exc.to_error()}, status,
                      exc.scopes if isinstance(exc, InsufficientScope) else None)
        return done
    except Exception:
        log.exception("internal error handling %s", request.method)
        done = Answer(jsonrpc.error(request.id, INTERNAL_ERROR, "Internal error"), 500 if stateless else 200)
        return done
    finally:
        REQUEST_ID.reset(logged)
        if observer is not None:
            observer.finished(token, done)
