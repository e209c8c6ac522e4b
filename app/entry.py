"""The one way into the core: a classified request (``wiremcp.inbound``) served in its era, and its
``Outcome``.

Every transport (Streamable HTTP in both eras, HTTP+SSE, stdio, in memory) hands what it reads to the
inlet (``wiremcp.inlet``), which decodes, classifies and sorts it, and hands each request to ``serve``: the request runs in the state of its era (the handshake session's, or the
envelope its ``_meta`` declares), in a ``Context`` (whose way of asking the client for input follows from
that: ``wiremcp.asking``), through the dispatcher. A request on a session is tracked by it, so that the
client can cancel it (``notifications/cancelled``); every request, whatever its transport and era, is among
the runtime's requests in flight while it runs, so that a shutdown waits for it, or cuts it off with a
retryable answer (``wiremcp.shutdown``). A JSON-RPC batch comes in through ``serve_batch``. The
runtime's observer (``server.runtime``), when set, sees each request start and end; the server's middleware
(``wiremcp.middleware``), when there is any, runs around the dispatcher, and notifications go through it
too (``notify``). The transport turns the
outcome into its wire (``wiremcp.transports.outcomes`` for HTTP).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

import orjson

from wiremcp import jsonrpc, stateless
from wiremcp.context import Context
from wiremcp.errors import INVALID_REQUEST, MCPError
from wiremcp.failures import internal_error
from wiremcp.inbound import Inbound
from wiremcp.logs import REQUEST_ID
from wiremcp.middleware import Call, chain
from wiremcp.outcome import Outcome
from wiremcp.principal import Principal
from wiremcp.protocol import BATCH_VERSIONS
from wiremcp.refusals import STORE_UNAVAILABLE, UPSTREAM_UNAVAILABLE
from wiremcp.shutdown import cut_off_outcome
from wiremcp.types import JSONObject, Send, StreamControl
from wiremcp.unavailable import StoreUnavailable, Unavailable

if TYPE_CHECKING:
    from wiremcp.server import MCPServer
    from wiremcp.session import ServerSession

log = logging.getLogger("wiremcp.entry")


async def serve(server: MCPServer, inbound: Inbound, send: Send, *, session: ServerSession | None = None,
                control: StreamControl | None = None, principal: Principal | None = None, peer: str | None = None,
                batch: bool = False) -> Outcome | None:
    """Answer one request. ``send`` carries the messages related to it; ``session``: the handshake-era
    session it arrives on (required for a handshake-era request); ``control``: its stream, where the
    transport can close it early; ``principal``: who sent it; ``peer``: the client's address, if the
    transport knows it; ``batch``: it came in a JSON-RPC batch. None: the client cancelled it."""
    request = inbound.request
    this = asyncio.current_task()  # read once: what the session and the shutdown cancel it by
    if session is not None and (refused := session.begin(request, this)) is not None:
        return refused
    runtime = server.runtime
    observer = runtime.observer
    token = observer.started(request, session.state.id if session is not None else None) \
        if observer is not None else None
    logged = REQUEST_ID.set(request.id)
    done: Outcome | None = None  # None at the end: cancelled
    answering = runtime.requests.enter(this)
    try:
        if inbound.envelope is not None:
            state = inbound.envelope
        else:
            assert session is not None, "a handshake-era request is served on its session"
            state = session.state
        ctx = Context(server, state, request.id, request.method, request.params, send, stateless=inbound.stateless,
                      session=session, control=control, principal=principal, found_tool=inbound.tool)
        if server.pipeline:
            value = await _through_middleware(server, ctx, peer, batch)
        else:
            value = await runtime.dispatcher.dispatch(request.method, request.params, ctx)
        done = Outcome(jsonrpc.result(request.id, value))
        return done
    except MCPError as exc:
        done = Outcome.failed(request.id, exc)
        return done
    except asyncio.CancelledError:
        if session is not None and session.cancelled_by_client(request.id):
            return None  # (the observer sees it end without an answer)
        if runtime.requests.was_cut_off(answering):
            assert answering is not None
            answering.uncancel()  # the shutdown's cancellation, answered here: the transport sends the answer
            done = cut_off_outcome(server, request.id)
            return done
        raise
    except Unavailable as exc:
        log.warning("%s: %s", request.method, exc)
        refusal = STORE_UNAVAILABLE if isinstance(exc, StoreUnavailable) else UPSTREAM_UNAVAILABLE
        done = Outcome(jsonrpc.error(request.id, refusal.code, refusal.message), unavailable=True)
        return done
    except Exception as exc:
        failure = internal_error(f"Internal error handling {request.method}", exc, details=server.error_details)
        done = Outcome(jsonrpc.error(request.id, failure.code, failure.message, failure.data), internal=True)
        return done
    finally:
        runtime.requests.leave(answering)
        REQUEST_ID.reset(logged)
        if observer is not None:
            observer.finished(token, done)
        if session is not None:
            session.end(request.id)


async def _through_middleware(server: MCPServer, ctx: Context, peer: str | None, batch: bool) -> JSONObject:
    call = Call(server, ctx.method, ctx.params, ctx=ctx, request_id=ctx.request_id, principal=ctx.principal,
                session=ctx.session, stateless=ctx.stateless, peer=peer, batch=batch)

    async def dispatch() -> JSONObject:
        ctx.method, ctx.params = call.method, call.params
        result = await server.runtime.dispatcher.dispatch(call.method, call.params, ctx)
        if any(isinstance(value, orjson.Fragment) for value in result.values()):
            result = orjson.loads(orjson.dumps(result))  # a list's cached page, as plain JSON for middleware to read
        return result

    value = await chain(server.pipeline, call, dispatch)
    if not isinstance(value, dict):
        raise internal_error(f"Internal error handling {call.method}", TypeError(
            f"middleware answered with {type(value).__name__}, not a result object"), details=server.error_details)
    if ctx.stateless and "resultType" not in value:  # answered by a middleware: in the era's shape all the same
        value = stateless.complete(value, call.method, server)
    return value


async def notify(server: MCPServer, note: jsonrpc.Notification, *, session: ServerSession | None,
                 stateless: bool = False, principal: Principal | None = None, peer: str | None = None,
                 batch: bool = False) -> None:
    """Handle one notification: the session's part (cancellation, ``initialized``), through the middleware
    when there is any. A notification outside any session (stateless HTTP) only goes through the middleware."""
    if not server.pipeline:
        if session is not None:
            session.handle_notification(note)
        return
    call = Call(server, note.method, note.params, principal=principal, session=session, stateless=stateless,
                peer=peer, batch=batch)

    async def handle() -> None:
        if session is not None:
            session.handle_notification(note)

    try:
        await chain(server.pipeline, call, handle)
    except MCPError as exc:  # nothing answers a notification: a refusal drops it
        log.debug("middleware dropped %s: %s", note.method, exc.message)
    except Exception:
        log.exception("middleware failed on %s", note.method)


class Batch:
    """A JSON-RPC batch taken apart (``serve_batch``): the replies already due and the requests running."""

    __slots__ = ("replies", "running")

    def __init__(self) -> None:
        self.replies: list[JSONObject] = []
        self.running: list[asyncio.Future[Outcome | None]] = []

    async def answers(self) -> list[JSONObject]:
        """Every reply of the batch, once its requests are answered (empty: nothing to answer)."""
        answered = await asyncio.gather(*self.running)
        return [*self.replies, *(done.message for done in answered if done is not None)]


async def _noted(notified: Awaitable[None]) -> Outcome | None:
    await notified
    return None


def serve_batch(server: MCPServer, items: list[Inbound | Outcome], send: Send, *, session: ServerSession,
                principal: Principal | None = None, peer: str | None = None) -> Batch | JSONObject:
    """A JSON-RPC batch on a handshake-era session, its items classified (or refused) by the inlet
    (``wiremcp.inlet``). Before this returns, its notifications and responses are handled and its requests
    started, each served as a single request would be and run concurrently; ``Batch.answers`` gives the
    replies: those due at once (a refused item's), then the requests' answers. Or the one error reply when
    this session may not send batches (only 2025-03-26 clients may)."""
    if session.state.protocol_version not in BATCH_VERSIONS:
        return jsonrpc.error(None, INVALID_REQUEST,
                             "Invalid Request: JSON-RPC batches are only accepted from 2025-03-26 clients")
    batch = Batch()
    for item in items:
        if isinstance(item, Outcome):
            batch.replies.append(item.message)
            continue
        message = item.message
        if isinstance(message, jsonrpc.Request):
            batch.running.append(asyncio.ensure_future(
                serve(server, item, send, session=session, principal=principal, peer=peer, batch=True)))
        elif isinstance(message, jsonrpc.Notification):
            if server.pipeline:
                batch.running.append(asyncio.ensure_future(_noted(
                    notify(server, message, session=session, stateless=item.stateless, principal=principal,
                           peer=peer, batch=True))))
            else:
                session.handle_notification(message)
        elif isinstance(message, jsonrpc.Response):
            session.handle_response(message)
    return batch
