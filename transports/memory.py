"""The in-memory transport and a test client: drive a server in-process, through the real wire encoding.

>>> async with Client(server) as client:
...     result = await client.call_tool("word_count", {"text": "a b"})
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, Self

from wiremcp import jsonrpc
from wiremcp.connection import Connection
from wiremcp.errors import MCPError
from wiremcp.principal import Principal
from wiremcp.protocol import (
    LATEST_HANDSHAKE_VERSION,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_VERSION,
    is_stateless,
)
from wiremcp.server import MCPServer
from wiremcp.session import ServerSession
from wiremcp.types import JSONObject

ClientHandler = Callable[[JSONObject], Awaitable[JSONObject]]
"""Answers one server-to-client request: receives its params, returns its result (or raises MCPError)."""


class Client:
    """An MCP client wired to a server in the same process.

    Pass ``elicitation``, ``sampling`` or ``roots`` handlers to declare those capabilities.
    Every message is encoded and decoded as JSON on the way, as on a real wire.
    """

    def __init__(self, server: MCPServer, *, protocol_version: str = LATEST_HANDSHAKE_VERSION,
                 client_info: JSONObject | None = None, capabilities: JSONObject | None = None,
                 elicitation: ClientHandler | None = None, sampling: ClientHandler | None = None,
                 roots: ClientHandler | None = None, initialize: bool = True, log_level: str | None = None,
                 max_rounds: int = 8, principal: Principal | None = None) -> None:
        self.server = server
        self.principal = principal
        """Who this client's messages come from, as an authentication middleware would establish it over
        HTTP (None: nobody is authenticated, as on stdio)."""
        self.protocol_version = protocol_version
        self.stateless = is_stateless(protocol_version)
        """Stateless era: no handshake; every request carries ``_meta`` and input requests are answered
        by retrying (MRTR), all done by ``request``."""
        self.log_level = log_level
        self.max_rounds = max_rounds
        self.client_info = client_info or {"name": "wiremcp-test-client", "version": "0"}
        self._handlers: dict[str, ClientHandler] = {}
        caps: JSONObject = dict(capabilities or {})
        if elicitation is not None:
            caps.setdefault("elicitation", {"form": {}, "url": {}})
            self._handlers["elicitation/create"] = elicitation
        if sampling is not None:
            caps.setdefault("sampling", {})
            self._handlers["sampling/createMessage"] = sampling
        if roots is not None:
            caps.setdefault("roots", {"listChanged": True})
            self._handlers["roots/list"] = roots
        self.capabilities = caps
        self._initialize = initialize and not self.stateless
        self.notifications: list[JSONObject] = []
        self.initialize_result: JSONObject | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int | str, asyncio.Future[JSONObject]] = {}
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._connection: Connection | None = None

    # -- wiring ----------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self.server.runtime.lifespans.enter()  # the server's lifespan runs while a client is open
        try:
            session = ServerSession(self.server, post=self._deliver_posted)
            self._connection = Connection(session, self._receive)
            if self._initialize:
                self.initialize_result = await self.request("initialize", {
                    "protocolVersion": self.protocol_version, "capabilities": self.capabilities,
                    "clientInfo": self.client_info})
                await self.notify("notifications/initialized")
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._connection is not None:
                await self._connection.close()
            for task in list(self._tasks):
                task.cancel()
        finally:
            await self.server.runtime.lifespans.exit()

    @property
    def session(self) -> ServerSession:
        assert self._connection is not None, "use the client in 'async with'"
        return self._connection.session

    def _deliver_posted(self, message: JSONObject) -> None:
        self._spawn(self._receive(message))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _receive(self, message: JSONObject | list[JSONObject]) -> None:
        for item in jsonrpc.loads(jsonrpc.dumps(message)) if isinstance(message, list) else [
                jsonrpc.loads(jsonrpc.dumps(message))]:
            await self._receive_one(item)

    async def _receive_one(self, item: JSONObject) -> None:
        if "method" in item and "id" in item:
            self._spawn(self._answer(item))
        elif "method" in item:
            self.notifications.append(item)
            self._changed.set()
        else:
            future = self._waiting.pop(item.get("id"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(item)

    async def _answer(self, request: JSONObject) -> None:
        handler = self._handlers.get(request["method"])
        if handler is None:
            reply = jsonrpc.error(request["id"], -32601, f"Method not found: {request['method']}")
        else:
            try:
                reply = jsonrpc.result(request["id"], await handler(request.get("params") or {}))
            except MCPError as exc:
                reply = {"jsonrpc": "2.0", "id": request["id"], "error": exc.to_error()}
        await self.send_raw(reply)

    # -- raw protocol ------------------------------------------------------------------------------
    async def send_raw(self, message: Any) -> None:
        """Put any frame on the wire: a message, a batch, or raw bytes."""
        assert self._connection is not None, "use the client in 'async with'"
        frame = message if isinstance(message, bytes | str) else jsonrpc.dumps(message)
        await self._connection.feed(frame, self.principal)

    async def request_raw(self, method: str, params: JSONObject | None = None, *,
                          id: int | str | None = None) -> JSONObject:
        """Send a request and return the whole response message (result or error)."""
        rid = id if id is not None else next(self._ids)
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        await self.send_raw(jsonrpc.request(rid, method, params))
        return await future

    def with_meta(self, params: JSONObject | None) -> JSONObject:
        """``params`` with the stateless era's per-request ``_meta`` (keys already there win)."""
        out = dict(params or {})
        meta: JSONObject = {META_VERSION: self.protocol_version, META_CAPABILITIES: self.capabilities,
                            META_CLIENT_INFO: self.client_info}
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        out["_meta"] = {**meta, **(out.get("_meta") or {})}
        return out

    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return its result; a JSON-RPC error raises ``MCPError``. In the stateless era
        the ``_meta`` is added, and an ``input_required`` result is answered (with the handlers) and retried."""
        if self.stateless:
            params = self.with_meta(params)
        for _ in range(self.max_rounds):
            response = await self.request_raw(method, params)
            if "error" in response:
                err = response["error"]
                raise MCPError(err["code"], err["message"], err.get("data"))
            result: JSONObject = response["result"]
            if result.get("resultType") != "input_required":
                return result
            params = {**(params or {}), "inputResponses": await self._inputs(result.get("inputRequests") or {})}
            if "requestState" in result:
                params["requestState"] = result["requestState"]
            else:
                params.pop("requestState", None)
        raise MCPError(-32603, f"{method}: still input_required after {self.max_rounds} rounds")

    async def _inputs(self, requests: JSONObject) -> JSONObject:
        answers: JSONObject = {}
        for key, request in requests.items():
            handler = self._handlers.get(request.get("method"))
            if handler is None:
                raise MCPError(-32601, f"no handler for input request {request.get('method')!r}")
            answers[key] = await handler(request.get("params") or {})
        return answers

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        await self.send_raw(jsonrpc.notification(method, params))

    async def wait_for_notification(self, method: str, count: int = 1) -> list[JSONObject]:
        """Wait until ``count`` notifications named ``method`` have arrived; return them."""
        while True:
            found = [n for n in self.notifications if n["method"] == method]
            if len(found) >= count:
                return found
            self._changed.clear()
            await self._changed.wait()

    # -- MCP methods -------------------------------------------------------------------------------
    async def ping(self) -> JSONObject:
        return await self.request("ping")

    async def list_tools(self) -> list[JSONObject]:
        return await self._list_all("tools/list", "tools")

    async def call_tool(self, name: str, arguments: JSONObject | None = None, *,
                        progress_token: str | int | None = None) -> JSONObject:
        params: JSONObject = {"name": name, "arguments": arguments or {}}
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        return await self.request("tools/call", params)

    async def list_resources(self) -> list[JSONObject]:
        return await self._list_all("resources/list", "resources")

    async def list_resource_templates(self) -> list[JSONObject]:
        return await self._list_all("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> JSONObject:
        return await self.request("resources/read", {"uri": uri})

    async def subscribe(self, uri: str) -> JSONObject:
        return await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> JSONObject:
        return await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[JSONObject]:
        return await self._list_all("prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> JSONObject:
        return await self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    async def complete(self, ref: JSONObject, argument: str, value: str,
                       context: dict[str, str] | None = None) -> JSONObject:
        params: JSONObject = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": context}
        return await self.request("completion/complete", params)

    async def set_logging_level(self, level: str) -> JSONObject:
        return await self.request("logging/setLevel", {"level": level})

    async def _list_all(self, method: str, key: str) -> list[JSONObject]:
        items: list[JSONObject] = []
        cursor: str | None = None
        while True:
            result = await self.request(method, {"cursor": cursor} if cursor else {})
            items.extend(result[key])
            cursor = result.get("nextCursor")
            if not cursor:
                return items
