"""A gateway's connection to one upstream server (``wiremcp.transports.gateway``), kept up for as long as the gateway
serves, and the one way its requests reach it (``UpstreamLink.call``).

- **Kept up.** The link connects (in the era the upstream offers), and when the connection is lost (a launched
  server exits, an HTTP upstream stops answering) it connects again after a wait that doubles from
  ``BACKOFF[0]`` to ``BACKOFF[1]``; a launched server is started again. Each time it is connected, ``on_connect``
  lists the upstream's catalog afresh. While it is down, a call fails at once with ``UpstreamUnavailable`` (503
  and ``Retry-After``, so callers retry) rather than waiting on a server that is not there: a circuit that
  opens when the connection is lost and closes when it is back.
- **A call is the caller's.** What the upstream sends about a call comes back to its caller: progress (when
  the caller asked for it), log messages (at the caller's level), and its requests for input (elicitation,
  sampling, roots), asked of the caller the way the caller's era asks (a request on its stream, or an input
  round). An upstream in the stateless era that answers ``input_required`` is answered by the caller: as it was
  written (its keys, its state sealed in the gateway's) when the caller asks in rounds too, else by asking the
  caller each request and sending the call again with the answers. A caller who cancels cancels the call
  upstream. The caller's capabilities are the ones the upstream sees (stateless era; a handshake-era upstream
  sees the gateway's, which can ask for all three, and the caller's are checked when it is asked).
- **Errors.** The upstream's JSON-RPC error is the caller's; no answer in time, or no connection, is
  ``UpstreamUnavailable``; the details go to the log, never to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

import httpx

from wiremcp.context import Context
from wiremcp.errors import (
    INTERNAL_ERROR,
    MISSING_CLIENT_CAPABILITY,
    RATE_LIMITED,
    DefinitionError,
    MCPError,
    MissingClientCapability,
    RateLimited,
)
from wiremcp.input_required import INPUT_METHODS, MAX_ROUNDS, InputRequired
from wiremcp.protocol import META_CAPABILITIES, META_LOG_LEVEL, TASKS_EXTENSION
from wiremcp.tools import TaskSupport
from wiremcp.transports import upstream_tasks
from wiremcp.transports.upstream import Client, Failed, NotAnswered, RPCError, connect
from wiremcp.transports.upstream_callers import Callers, CallerToken
from wiremcp.types import JSONObject
from wiremcp.unavailable import UpstreamUnavailable

log = logging.getLogger("wiremcp.gateway")

BACKOFF = (0.25, 30.0)
"""The first and the longest wait before connecting again."""
MAX_WATCHED = 10_000
"""At most this many of an upstream's resources are subscribed to upstream (a template's URIs are unbounded)."""
CLIENT_INFO = {"name": "wiremcp-gateway", "version": "1"}
CAPABILITIES: JSONObject = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
"""What the gateway declares upstream: it can ask its callers for each."""
FOLLOWING_TASKS: JSONObject = {**CAPABILITIES, "extensions": {TASKS_EXTENSION: {}}}
"""What the gateway declares with the requests that follow a stateless upstream's task (``tasks/*``)."""
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
          "emergency": logging.CRITICAL}


class CallerRelay:
    """What the upstream sends about one call, taken to the caller (``ctx``)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.waiting = asyncio.current_task()
        self.interrupt: InputRequired | None = None
        """The caller's era asks for input by ending the round: the call upstream is abandoned for it."""

    async def notified(self, message: JSONObject) -> None:
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        method = message.get("method")
        if method == "notifications/progress" and isinstance(params.get("progress"), int | float):
            total, said = params.get("total"), params.get("message")
            await self.ctx.report_progress(params["progress"], total if isinstance(total, int | float) else None,
                                           said if isinstance(said, str) else None)
        elif method == "notifications/message" and params.get("level") in LEVELS:
            logger = params.get("logger")
            await self.ctx.log(str(params["level"]), params.get("data"), logger if isinstance(logger, str) else None)

    async def asked(self, message: JSONObject) -> JSONObject:
        method, params = message.get("method"), message.get("params")
        if method not in INPUT_METHODS:
            return {"error": {"code": -32601, "message": f"{method} is not relayed"}}
        try:
            return {"result": await self.ctx.request(str(method), params if isinstance(params, dict) else None)}
        except InputRequired as exc:
            self.interrupt = exc
            if self.waiting is not None:
                self.waiting.cancel()
            raise
        except MCPError as exc:
            return {"error": exc.to_error()}


class UpstreamLink:
    """One upstream, connected while the gateway serves (``run``), and called through ``call``."""

    def __init__(self, name: str, target: str | list[str], *, protocol: str, headers: Mapping[str, str] | None,
                 timeout: float, env: Mapping[str, str] | None,
                 on_connect: Callable[[Client], Awaitable[None]], on_notice: Callable[[JSONObject], None],
                 auth: httpx.Auth | None = None, caller_token: CallerToken | None = None) -> None:
        self.name, self.target, self.protocol, self.headers, self.auth = name, target, protocol, headers, auth
        self.callers = Callers(name, target, caller_token, protocol=protocol, headers=headers, timeout=timeout,
                               client_info=CLIENT_INFO, capabilities=CAPABILITIES) \
            if caller_token is not None and isinstance(target, str) else None
        """The callers' own sessions, when calls go with the caller's own token (``upstream_callers``)."""
        self.timeout, self.env = timeout, env
        self.on_connect, self.on_notice = on_connect, on_notice
        self.client: Client | None = None
        """The connected client; None while the upstream is down."""
        self.attempted = asyncio.Event()
        """Set once the first attempt to connect has ended, whichever way."""
        self.failure: BaseException | None = None
        """Why the last attempt failed (None: connected)."""
        self.connections = 0
        """How many times the link has connected."""
        self.changed = asyncio.Condition()
        """Notified whenever the link connects or loses its connection."""
        self.watched: set[str] = set()
        """The upstream's resources a client of the gateway subscribed to: subscribed to upstream at each
        connection (``resources/subscribe``, or the ``subscriptions/listen`` of the stateless era)."""
        self._following: asyncio.Task[None] | None = None
        self._capped = False
        self._subscribing: set[asyncio.Task[None]] = set()
        self.served: dict[tuple[str, str], list[float]] = {}
        """Requests sent on, by (method, outcome: ``ok``, ``error``, ``unavailable``, ``cancelled``): their count and
        seconds."""
        self._lost = asyncio.Event()
        self._chores: set[asyncio.Task[None]] = set()
        self._said: str | None = None
        """The last failure logged (the same one again goes to the debug log)."""

    async def run(self) -> None:
        """Connect, and connect again whenever the connection is lost, until cancelled."""
        try:
            await self._run()
        finally:
            if self.callers is not None:
                await self.callers.close()

    async def _run(self) -> None:
        wait = BACKOFF[0]
        while True:
            try:
                await self._connected_once()
                wait = BACKOFF[0]
            except (Failed, OSError, DefinitionError) as exc:  # a name clash in its catalog: until it changes
                self.failure = exc
                said = str(exc) or type(exc).__name__
                # Said once, not at every attempt: again when it changes, or after the link was up
                log.log(logging.DEBUG if said == self._said else logging.WARNING, "upstream %s: %s", self.name, said)
                self._said = said
            except Exception as exc:  # anything else: logged, and the link keeps trying (it never dies quietly)
                self.failure = exc
                log.exception("upstream %s: connecting failed", self.name)
            finally:
                self.client = None
                self.attempted.set()
            await asyncio.sleep(wait)
            wait = min(wait * 2, BACKOFF[1])

    async def _connected_once(self) -> None:
        self._lost.clear()
        async with connect(self.target, protocol=self.protocol, headers=self.headers, timeout=self.timeout,
                           client_info=CLIENT_INFO, capabilities=CAPABILITIES, listener=self.on_notice,
                           env=self.env, auth=self.auth) as client:
            await self.on_connect(client)
            if self.failure is not None:
                log.warning("upstream %s: connected again (%s)", self.name, client.version)
            self.client, self.failure, self._said = client, None, None
            self.connections += 1
            self.attempted.set()
            await self._announce()
            self._follow(client)
            for uri in self.watched:
                self._subscribe(client, uri)
            ended = getattr(client.channel, "reader", None)  # a launched server: its output ending
            lost = asyncio.create_task(self._lost.wait())
            try:
                await asyncio.wait([lost, *([ended] if ended is not None else [])],
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                self.client = None
                await self._announce()
                for task in (self._following, lost, *self._subscribing):
                    if task is None:
                        continue
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Failed):
                        await task
            raise Failed(f"the connection was lost ({self.failure or 'the server exited'})")

    def watch(self, uri: str) -> None:
        """Subscribe to the upstream's resource ``uri``, now if connected and at every connection after."""
        if uri in self.watched:
            return
        if len(self.watched) >= MAX_WATCHED:  # bounded: callers name template URIs at will
            if not self._capped:  # said once: the callers decide how often this is reached
                log.warning("upstream %s: %d resources watched already; updates of more are not followed",
                            self.name, MAX_WATCHED)
            self._capped = True
            return
        self.watched.add(uri)
        client = self.client
        if client is None:
            return
        if client.stateless:
            self._follow(client)  # the subscription is made again, with this resource too
        else:
            self._subscribe(client, uri)

    def _follow(self, client: Client) -> None:
        """Keep the notifications of no request coming: the list changes the upstream offers and, in the stateless
        era, the updates of the watched resources (on one ``subscriptions/listen``, made again when they change)."""
        if self._following is not None:
            self._following.cancel()
        offered = client.capabilities
        kinds: dict[str, object] = {f"{kind}ListChanged": True for kind in ("tools", "prompts", "resources")
                                    if isinstance(offered.get(kind), dict) and offered[kind].get("listChanged")}
        if self.watched:
            kinds["resourceSubscriptions"] = sorted(self.watched)
        self._following = asyncio.create_task(client.follow(self.on_notice, kinds))

    def _subscribe(self, client: Client, uri: str) -> None:
        async def subscribe() -> None:
            try:
                await client.request("resources/subscribe", {"uri": uri})
            except Failed as exc:
                log.warning("upstream %s: subscribing to %s: %s", self.name, uri, exc)

        task = asyncio.create_task(subscribe())
        self._subscribing.add(task)
        task.add_done_callback(self._subscribing.discard)

    def _their_error(self, error: JSONObject) -> MCPError:
        """The upstream's JSON-RPC error as the caller's, with what it means over HTTP kept: a capability the
        caller did not declare (400 in the stateless era), a rate limit (429 and ``Retry-After``)."""
        code, data = error.get("code"), error.get("data")
        message = str(error.get("message") or f"upstream {self.name} failed")
        if code == MISSING_CLIENT_CAPABILITY and isinstance(data, dict) \
                and isinstance(data.get("requiredCapabilities"), dict):
            return MissingClientCapability(data["requiredCapabilities"])
        if code == RATE_LIMITED and isinstance(data, dict) and isinstance(data.get("retryAfterMs"), int | float):
            limit, remaining = data.get("limit"), data.get("remaining")
            return RateLimited(data["retryAfterMs"] / 1000, limit=limit if isinstance(limit, int) else None,
                               remaining=remaining if isinstance(remaining, int) else None,
                               message=message.partition(": retry after")[0])
        return MCPError(code if isinstance(code, int) else INTERNAL_ERROR, message, data)

    async def _announce(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def call_tool(self, name: str, arguments: JSONObject, ctx: Context, support: TaskSupport) -> JSONObject:
        """The upstream's result for a call of its tool ``name``, whose ``support`` for tasks is the upstream's:
        when the upstream runs the call as a task, that task followed to its end (``upstream_tasks``). A
        2025-11-25 upstream is asked for a task when its tool requires one, or when the caller's call is a task or
        may become one (so that a long call waits on no one request)."""
        params: JSONObject = {"name": name, "arguments": arguments}
        client = self.client
        if client is not None and not client.stateless and support != "forbidden" \
                and (support == "required" or ctx.may_be_task):
            params["task"] = {}
        if "task" in params or (client is not None and client.stateless and ctx.task is not None):
            result = await upstream_tasks.answer(self, params, ctx)  # a task asked for: cancelled once it exists
        else:
            result = await self.call("tools/call", params, ctx)
        task = upstream_tasks.created_task(result)
        return result if task is None else await upstream_tasks.follow(self, task, ctx)

    async def request(self, method: str, params: JSONObject, ctx: Context | None = None,
                      timeout: float | None = None, relayed: bool = True) -> JSONObject:
        """One request sent on as it is, as ``ctx``'s caller's (with their own token, when calls go with it);
        what the upstream sends about it goes to that caller unless not ``relayed``."""
        client = self.client
        if client is None:
            raise UpstreamUnavailable(f"upstream {self.name} is not connected")
        if client.stateless and method.startswith("tasks/"):
            params = {**params, "_meta": {**params.get("_meta", {}), META_CAPABILITIES: FOLLOWING_TASKS}}
        client, headers = await self._as_caller(client, ctx)
        relay = CallerRelay(ctx) if ctx is not None and relayed else None
        return await self._forward(client, method, params, relay, timeout, headers)

    async def _as_caller(self, client: Client, ctx: Context | None) -> tuple[Client, dict[str, str] | None]:
        """Where a caller's request goes, and with which headers: the caller's own session or token when calls
        go with the caller's token, else the link's client as it is."""
        if self.callers is None or ctx is None:
            return client, None
        try:
            routed, headers = await self.callers.route(client, ctx)
        except Failed as exc:
            log.warning("upstream %s: a session with the caller's token: %s", self.name, exc)
            raise UpstreamUnavailable(f"upstream {self.name}: {exc}") from None
        return routed, headers or None

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` on its own, kept until it ends."""
        task = asyncio.create_task(work)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)

    async def call(self, method: str, params: JSONObject, ctx: Context | None = None) -> JSONObject:
        """The upstream's result for ``method``, made as ``ctx``'s caller's request (see the module's notes)."""
        client = self.client
        if client is None:
            raise UpstreamUnavailable(f"upstream {self.name} is not connected")
        relay = CallerRelay(ctx) if ctx is not None else None
        level = ctx.state.log_level if ctx is not None else None
        if ctx is not None and level is None and not ctx.stateless:
            level = "debug"  # a session that set no level hears every message
        if client.stateless and ctx is not None:  # what the stateless era says with each request: the caller's
            capabilities = ctx.client_capabilities
            if method == "tools/call" and not ctx.stateless:  # the gateway follows a task for a handshake caller
                extensions = capabilities.get("extensions")
                capabilities = {**capabilities, "extensions": {**(extensions if isinstance(extensions, dict) else {}),
                                                               TASKS_EXTENSION: {}}}
            meta = {**params.get("_meta", {}), META_CAPABILITIES: capabilities}
            if level is not None:
                meta[META_LOG_LEVEL] = level
            params = {**params, "_meta": meta}
        client, headers = await self._as_caller(client, ctx)
        passing = ctx is not None and ctx.stateless and ctx.task_id is None and client.stateless
        if passing and ctx is not None and (ctx.input_responses or ctx.request_state is not None):
            params = {**params, "inputResponses": ctx.input_responses}  # the caller's answers to the upstream's
            if ctx.request_state is not None:
                params["requestState"] = ctx.request_state
        for _ in range(MAX_ROUNDS):
            result = await self._forward(client, method, params, relay, headers=headers)
            if result.get("resultType") != "input_required" or ctx is None:
                return result
            asks, state = result.get("inputRequests"), result.get("requestState")
            if passing:  # both eras ask by input rounds: the upstream's round is the caller's, as it was written
                raise InputRequired(asks if isinstance(asks, dict) else {}, state if isinstance(state, str) else None)
            answers = {key: await ctx.request(str(ask.get("method")), ask.get("params"))
                       for key, ask in (asks.items() if isinstance(asks, dict) else ()) if isinstance(ask, dict)}
            params = {**params, "inputResponses": answers}
            if isinstance(state, str):
                params["requestState"] = state
        raise MCPError(INTERNAL_ERROR, f"upstream {self.name} asked for input more than {MAX_ROUNDS} times")

    def health(self) -> JSONObject:
        """What ``/readyz`` says of this upstream: ``connected`` (and the era), or ``down`` and why (the kind of
        failure only: a message may hold what the caller should not see)."""
        client = self.client
        if client is not None:
            return {"status": "connected", "protocolVersion": client.version, "connections": self.connections}
        reason = type(self.failure).__name__ if self.failure is not None else "connecting"
        return {"status": "down", "reason": reason, "connections": self.connections}

    async def _request(self, client: Client, method: str, params: JSONObject, relay: CallerRelay | None,
                       timeout: float | None, headers: dict[str, str] | None) -> JSONObject:
        began, outcome = time.perf_counter(), "unavailable"
        try:
            result = await client.request(method, params, relay=relay, timeout=timeout, headers=headers)
            outcome = "ok"
            return result
        except RPCError:
            outcome = "error"
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            counted = self.served.setdefault((method, outcome), [0, 0.0])
            counted[0] += 1
            counted[1] += time.perf_counter() - began

    async def _forward(self, client: Client, method: str, params: JSONObject, relay: CallerRelay | None,
                       timeout: float | None = None, headers: dict[str, str] | None = None) -> JSONObject:
        try:
            return await self._request(client, method, params, relay, timeout, headers)
        except RPCError as exc:  # the upstream's JSON-RPC error is the caller's
            raise self._their_error(exc.error) from None
        except asyncio.CancelledError:
            if relay is not None and relay.interrupt is not None:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                raise relay.interrupt from None
            raise
        except Failed as exc:
            log.warning("upstream %s: %s: %s", self.name, method, exc)
            if client is self.client and not isinstance(exc, NotAnswered):  # no answer in time: the link stays up
                self.failure = exc
                self._lost.set()  # reconnect: the circuit is open until it is back
            elif client is not self.client and self.callers is not None:  # a caller's own session: a new one next
                await self.callers.forget(client)
            raise UpstreamUnavailable(f"upstream {self.name}: {exc}") from None

