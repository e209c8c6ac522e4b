"""The two ways a client reaches another MCP server (``wiremcp.transports.upstream``): ``Stdio``, a launched
process spoken to on its stdin and stdout, and ``HTTP``, Streamable HTTP. Each sends one message and returns its
answer; what else the server sends meanwhile is routed:

- a notification or a request that belongs to one of our requests (its progress, its log messages, the
  elicitation or sampling request it makes) goes to that request's ``Relay``. Over HTTP it is whatever arrives
  on the request's own event stream; over stdio, progress is matched by the progress token we sent (our
  request's id), and anything else belongs to our request if exactly one with a relay is in flight;
- anything else goes to the ``Listener`` (``list_changed``, ``resources/updated``, log messages of no request):
  over stdio as it arrives, over HTTP on the standalone GET stream (``HTTP.follow``);
- a request nobody relays is answered here: ``ping`` with an empty result, anything else with an error.

Every failure to talk to the server is ``Failed``: one line for the user (empty when a launched server already
printed its own) and the exit status to end with.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import httpx

from wiremcp.task_runner import RELATED_TASK

JSON = dict[str, Any]
CLOSE_BOUND = 5.0
"""How long a launched server has to exit once its input ends, and a session's DELETE to be answered."""
ABOUT_A_REQUEST = frozenset({"notifications/progress", "notifications/message"})
"""The notifications that can be about one of our requests."""
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
"""The ``_meta`` key that ties a notification to its ``subscriptions/listen`` request."""
FOLLOW_BACKOFF = (0.5, 30.0)
"""The first and the longest wait before the standalone stream is opened again."""


class Failed(Exception):
    """Talking to the server failed: ``str`` is the line to print, ``status`` the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class RPCError(Failed):
    """The server answered with a JSON-RPC error."""

    def __init__(self, error: Any) -> None:
        error = error if isinstance(error, dict) else {}
        self.error: JSON = error
        """The error as the server sent it (``code``, ``message``, ``data``)."""
        self.code = error.get("code")
        super().__init__(f"{error.get('message') or 'error'} ({self.code})")


class NotAnswered(Failed):
    """An HTTP status without a JSON-RPC answer, or no answer in time: a probe falls back on it."""


class SessionLost(Failed):
    """The server no longer knows our session (HTTP 404 to a request that carried it): a new handshake."""


class Relay(Protocol):
    """Where what the server sends about one of our requests goes."""

    async def notified(self, message: JSON) -> None:
        """A notification about the request (progress, a log message)."""

    async def asked(self, message: JSON) -> JSON:
        """A request the server makes while answering ours: the response to send back (result or error)."""
        ...


Listener = Callable[[JSON], None]
"""What is told of the notifications that belong to none of our requests."""


def parse(raw: str | bytes) -> JSON:
    """A JSON-RPC message, or {} for anything else (which is ignored)."""
    try:
        message = json.loads(raw)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _kind(message: JSON) -> str:
    """What a request of ours is waiting for: its method, and for ``tasks/result`` which task's."""
    method, params = str(message.get("method")), message.get("params")
    if method == "tasks/result" and isinstance(params, dict):
        return f"{method} {params.get('taskId')}"
    return method


def is_request(message: JSON) -> bool:
    return isinstance(message.get("method"), str) and "id" in message


def is_notification(message: JSON) -> bool:
    return isinstance(message.get("method"), str) and "id" not in message


def answers(message: JSON, rid: Any) -> bool:
    """Whether ``message`` is the response to our request ``rid`` (an id ``true`` is not ``1``)."""
    rid_sent = message.get("id")
    return (type(rid_sent) is type(rid) and rid_sent == rid and "method" not in message
            and ("result" in message or "error" in message))


def unrelayed(request: JSON) -> JSON:
    """Our answer to a request that no relay takes: ``ping`` is answered, ``roots/list`` with no roots (outside a
    call there is no one caller whose roots they would be), anything else is refused."""
    if request.get("method") in ("ping", "roots/list"):
        result: JSON = {"roots": []} if request["method"] == "roots/list" else {}
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}
    error = {"code": -32601, "message": f"{request.get('method')} is not offered here"}
    return {"jsonrpc": "2.0", "id": request["id"], "error": error}


async def reply(relay: Relay | None, request: JSON) -> JSON:
    """The response to ``request`` from the server: the relay's, or ``unrelayed``'s."""
    if relay is None:
        return unrelayed(request)
    try:
        answer = await relay.asked(request)
    except Exception:  # the relay's failure is an error answer, never a hang on the server's side
        answer = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "not answered"}}
    return {**answer, "id": request["id"], "jsonrpc": "2.0"}


async def notify(relay: Relay | None, listener: Listener | None, message: JSON) -> None:
    """Progress and log messages to the relay of the request they came with; any other notification (a list
    changed, a resource updated) is about no request, wherever it came: to the listener."""
    if relay is not None and message.get("method") in ABOUT_A_REQUEST:
        await relay.notified(message)
    elif listener is not None:
        listener(message)


def refused(exc: BaseException | None) -> bool:
    """Whether a refused connection is behind ``exc``: in its chain of causes, or in a group of attempts
    (anyio tries each address and raises "All connection attempts failed" from the group of their errors)."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        found = pending.pop()
        if found is None or id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, ConnectionRefusedError):
            return True
        if isinstance(found, BaseExceptionGroup):
            pending.extend(found.exceptions)
        pending.extend((found.__cause__, found.__context__))
    return False


class Stdio:
    """A launched server: newline-delimited JSON on its stdin and stdout, its stderr left on ours."""

    def __init__(self, process: asyncio.subprocess.Process, listener: Listener | None = None) -> None:
        self.process = process
        self.listener = listener
        self.pending: dict[Any, tuple[asyncio.Future[JSON], Relay | None, str]] = {}
        """Our requests in flight: the future of each one's answer, its relay and its method (``tasks/result``
        with the task's id: what that task sends belongs to it)."""
        self.ended: Failed | None = None
        self._asked: set[asyncio.Task[None]] = set()
        self.reader = asyncio.create_task(self._read())

    async def send(self, message: JSON, headers: Mapping[str, str], relay: Relay | None = None) -> JSON | None:
        if self.ended is not None:
            raise self.ended
        rid, future = message.get("id"), None
        if "id" in message:
            future = asyncio.get_running_loop().create_future()
            self.pending[rid] = (future, relay, _kind(message))
        try:
            await self._write(message)
            return await future if future is not None else None
        finally:
            if future is not None:
                self.pending.pop(rid, None)

    async def _write(self, message: JSON) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        with contextlib.suppress(ConnectionError):  # a server that died: the reader tells its status
            await self.process.stdin.drain()

    def _relay_for(self, message: JSON) -> Relay | None:
        """The relay of our request that ``message`` belongs to, if one can be told."""
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION in meta:  # one of a subscriptions/listen's notifications
            entry = self.pending.get(meta[SUBSCRIPTION])
            return entry[1] if entry is not None else None
        if message.get("method") == "notifications/progress":
            entry = self.pending.get(params.get("progressToken"))
            return entry[1] if entry is not None else None
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        if isinstance(related, dict) and isinstance(related.get("taskId"), str):  # about a task we wait on
            waiting = f"tasks/result {related['taskId']}"
            return next((relay for _, relay, kind in self.pending.values() if kind == waiting), None)
        relays = [relay for _, relay, method in self.pending.values()
                  if relay is not None and method != "subscriptions/listen"]
        return relays[0] if len(relays) == 1 else None

    async def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            while line := await self.process.stdout.readline():
                message = parse(line)
                if is_request(message) and (relay := self._relay_for(message)) is None:
                    await self._answer(None, message)  # ping: answered at once
                elif is_request(message):
                    task = asyncio.create_task(self._answer(relay, message))
                    self._asked.add(task)
                    task.add_done_callback(self._asked.discard)
                elif is_notification(message):
                    await notify(self._relay_for(message), self.listener, message)
                for rid, (future, _, _) in self.pending.items():
                    if answers(message, rid) and not future.done():
                        future.set_result(message)
        finally:
            status = await self.process.wait()
            # Status 2 is a launched wiremcp's own one-line error (a bad spec): already on our stderr.
            self.ended = Failed("" if status == 2 else f"the server exited with status {status} before answering",
                                2 if status == 2 else 1)
            for future, _, _ in self.pending.values():
                if not future.done():
                    future.set_exception(self.ended)

    async def _answer(self, relay: Relay | None, request: JSON) -> None:
        answer = await reply(relay, request)
        if self.ended is None:
            await self._write(answer)

    async def close(self) -> None:
        assert self.process.stdin is not None
        for task in list(self._asked):
            task.cancel()
        with contextlib.suppress(ConnectionError, RuntimeError):
            self.process.stdin.close()  # end of input: the server exits
        try:
            async with asyncio.timeout(CLOSE_BOUND):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        with contextlib.suppress(asyncio.CancelledError, Failed):
            await self.reader


async def events(response: httpx.Response) -> AsyncIterator[JSON]:
    """The JSON-RPC messages of an event stream, as they arrive."""
    buffer, data = "", []
    async for text in response.aiter_text():
        buffer += text
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            line = line.removesuffix("\r")
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                message, data = parse("\n".join(data)), []
                if message:
                    yield message


class HTTP:
    """Streamable HTTP: each message its own POST, answered with JSON or an SSE stream."""

    def __init__(self, url: str, headers: Mapping[str, str], listener: Listener | None = None,
                 auth: httpx.Auth | None = None) -> None:
        self.url = url
        self.listener = listener
        self.client = httpx.AsyncClient(headers=dict(headers), timeout=None, auth=auth)  # the Client sets deadlines
        self.session: str | None = None
        self._asked: set[asyncio.Task[None]] = set()

    def headers(self, extra: Mapping[str, str]) -> dict[str, str]:
        session = {"Mcp-Session-Id": self.session} if self.session else {}
        return {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **session,
                **extra}

    async def send(self, message: JSON, headers: Mapping[str, str], relay: Relay | None = None) -> JSON | None:
        sent_session = self.session
        try:
            # A request that brings its own Authorization (a caller's token) is not authenticated as ours too
            own = httpx.USE_CLIENT_DEFAULT if "Authorization" not in headers else None
            async with self.client.stream("POST", self.url, content=json.dumps(message),
                                          headers=self.headers(headers), auth=own) as response:
                if message.get("method") == "initialize" and "mcp-session-id" in response.headers:
                    self.session = response.headers["mcp-session-id"]
                if response.status_code == 404 and sent_session is not None and message.get("method") != "initialize":
                    raise SessionLost(f"{self.url} no longer knows the session")
                return await self._answer(response, message, headers, relay)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            reason = "connection refused" if refused(exc) else " ".join(str(exc).split()) or type(exc).__name__
            raise Failed(f"cannot reach {self.url}: {reason}") from None

    async def _answer(self, response: httpx.Response, message: JSON, headers: Mapping[str, str],
                      relay: Relay | None) -> JSON | None:
        status, kind = response.status_code, response.headers.get("content-type", "")
        if kind.startswith("text/event-stream") and "id" in message:
            return await self._stream(response, message["id"], headers, relay)
        answer = parse(await response.aread())
        if status in (401, 403):
            error = answer.get("error")
            detail = f": {error['message']}" if isinstance(error, dict) and error.get("message") else ""
            raise Failed(f"{self.url} refused the request (HTTP {status}{detail}); give credentials with "
                         "--header 'Authorization: Bearer TOKEN'")
        if "id" not in message and status < 400:
            return None
        if "id" in message and ("result" in answer or "error" in answer):
            return answer
        raise NotAnswered(f"{self.url} answered {message.get('method')} with HTTP {status} "
                          f"{response.reason_phrase}".rstrip())

    async def _stream(self, response: httpx.Response, rid: Any, headers: Mapping[str, str],
                      relay: Relay | None) -> JSON:
        version = {k: v for k, v in headers.items() if k.lower() == "mcp-protocol-version"}
        async for message in events(response):
            if answers(message, rid):
                return message
            await self._route(message, relay, version)
        raise Failed(f"{self.url} ended its event stream without answering")

    async def _route(self, message: JSON, relay: Relay | None, version: Mapping[str, str]) -> None:
        if is_request(message) and relay is None:
            await self._answer_request(None, message, version)  # ping: answered at once
        elif is_request(message):  # answered by a POST of its own, the stream going on meanwhile
            task = asyncio.create_task(self._answer_request(relay, message, version))
            self._asked.add(task)
            task.add_done_callback(self._asked.discard)
        elif is_notification(message):
            await notify(relay, self.listener, message)

    async def _answer_request(self, relay: Relay | None, request: JSON, version: Mapping[str, str]) -> None:
        answer = await reply(relay, request)
        with contextlib.suppress(httpx.HTTPError):
            await self.client.post(self.url, content=json.dumps(answer), headers=self.headers(version))

    async def follow(self, version: str) -> None:
        """Read the standalone GET stream until closed (its notifications go to the listener), opening it again
        after a wait that doubles while it fails; returns when the server offers none (405) or no longer knows
        the session (404)."""
        wait = FOLLOW_BACKOFF[0]
        headers = {"MCP-Protocol-Version": version, "Accept": "text/event-stream"}
        while True:
            try:
                async with self.client.stream("GET", self.url, headers={**self.headers({}), **headers}) as response:
                    if response.status_code in (404, 405):
                        return
                    if response.status_code == 200:
                        wait = FOLLOW_BACKOFF[0]
                        async for message in events(response):
                            await self._route(message, None, {"MCP-Protocol-Version": version})
            except httpx.HTTPError:
                pass
            await asyncio.sleep(wait)
            wait = min(wait * 2, FOLLOW_BACKOFF[1])

    async def close(self) -> None:
        for task in list(self._asked):
            task.cancel()
        try:
            if self.session:  # ends the session; a server that does not allow it answers 405
                with contextlib.suppress(httpx.HTTPError, TimeoutError):
                    async with asyncio.timeout(CLOSE_BOUND):
                        await self.client.delete(self.url, headers=self.headers({}))
        finally:
            await self.client.aclose()
