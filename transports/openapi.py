"""Tools that call an HTTP API, made from its OpenAPI document: ``from_openapi(document, client=...)`` is a server
(to serve, or to mount: ``server.mount(api, prefix="petstore")``) with one tool per operation
(``wiremcp.openapi`` reads the document), each call sent through the given ``httpx.AsyncClient``.

Credentials are the client's own (the operator's: its headers, its ``auth``), or, with ``caller_token=``, the
caller's: an async function of the request's context gives the caller's token for the API, sent as
``Authorization: Bearer`` instead of the client's (as ``remote(url, caller_token=...)`` does for an upstream).

An answer outside 2xx is the tool's error (``isError``): the method, the path, the status and what the API said
(its ``detail``, ``message``, ``title``, ``error``, or its text), cut to ``MAX_SAID`` characters; so is a timeout or
a connection that fails. A 2xx answer is the tool's ``structuredContent`` where the document describes it in JSON (checked
against the ``outputSchema``: an answer that does not match it, or is not JSON, is the tool's error), else its
text.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from wiremcp.component import definition_site
from wiremcp.context import Context
from wiremcp.errors import INVALID_REQUEST, DefinitionError, MCPError
from wiremcp.openapi import Operation, operations
from wiremcp.openapi_schemas import DocumentError
from wiremcp.server import MCPServer
from wiremcp.tools import Tool, ToolResult

CallerToken = Callable[[Context], Awaitable[str]]
"""How a call gets the caller's own token for the API (``LookupError``: the caller has none)."""
MAX_SAID = 500
"""The most of an API's error message (or of a failure's) that a tool's error carries."""


class _NoAuth(httpx.Auth):
    """The client's own ``auth`` left out: the request carries the caller's token."""


def from_openapi(document: Mapping[str, Any], *, client: httpx.AsyncClient, name: str | None = None,
                 include: Mapping[str, Any] | None = None, exclude: Mapping[str, Any] | None = None,
                 caller_token: CallerToken | None = None, timeout: float | None = None) -> MCPServer:
    """A server whose tools are the operations of the OpenAPI (3.0 or 3.1) ``document``, called through
    ``client`` (its ``base_url`` is where the document's paths go; without one, the document's first server URL).
    ``include``/``exclude``: ``{"tags": [...], "paths": [...], "operations": [...]}``, shell-style patterns over
    the operations' tags, path templates and operation ids (or tool names); an operation is served when
    ``include`` (if given) matches it and ``exclude`` does not. ``caller_token``: an async function of the
    request's context giving the caller's own token for the API, sent instead of the client's credentials.
    ``timeout``: seconds a call may take (default: the client's). ``name``: the server's (default: the
    document's title). A document that cannot be read raises one ``DefinitionError`` naming what is wrong."""
    where = definition_site()
    try:
        found = operations(document, include=include, exclude=exclude)
    except DocumentError as exc:
        raise DefinitionError(f"{where}: OpenAPI document: {exc}") from None
    if not isinstance(client, httpx.AsyncClient):
        raise DefinitionError(f"{where}: from_openapi(client=...) takes an httpx.AsyncClient, not {client!r}")
    if caller_token is not None and not callable(caller_token):
        raise DefinitionError(f"{where}: from_openapi(caller_token=...) takes an async function of the request's "
                              "context that gives the caller's token")
    base = _base(document, client, where)
    info = document.get("info")
    title = info.get("title") if isinstance(info, Mapping) else None
    server = MCPServer(name or (title if isinstance(title, str) and title else "openapi"))
    call = _Caller(server.name, client, base, caller_token, timeout)
    for operation in found:
        try:
            tool = Tool(call.handler(operation), name=operation.name, description=operation.description,
                        annotations=operation.annotations or None, input_schema=operation.input_schema,
                        output_schema=operation.output_schema)
        except Exception as exc:  # a schema JSON Schema cannot check
            said = str(getattr(exc, "message", None) or exc).splitlines()[0]
            raise DefinitionError(f"{where}: OpenAPI document: {operation.method} {operation.path}: {said}") from None
        tool.defined_at = where
        server.add_tool(tool)
    return server


def _base(document: Mapping[str, Any], client: httpx.AsyncClient, where: str) -> str:
    """What the paths are appended to: '' when the client has a ``base_url`` (httpx joins them), else the
    document's first server URL (its variables at their defaults)."""
    if str(client.base_url):
        return ""
    servers = document.get("servers")
    first: Mapping[str, Any] = servers[0] if isinstance(servers, list) and servers \
        and isinstance(servers[0], Mapping) else {}
    given, variables = first.get("url"), first.get("variables")
    known: Mapping[str, Any] = variables if isinstance(variables, Mapping) else {}

    def default(match: re.Match[str]) -> str:
        variable = known.get(match.group(1))
        return str(variable.get("default", match.group(0))) if isinstance(variable, Mapping) else match.group(0)

    url = re.sub(r"{([^}]+)}", default, given) if isinstance(given, str) else ""
    if not url.startswith(("http://", "https://")):
        raise DefinitionError(f"{where}: from_openapi: give the client a base_url (httpx.AsyncClient(base_url=...)): "
                              "the document names no absolute server URL")
    return url.rstrip("/")


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SAID else text[:MAX_SAID - 1] + "…"


def said(response: httpx.Response) -> str:
    """What an API said in an error answer: its problem's ``title: detail``, its ``detail``, ``message`` or
    ``error``, else its text; bounded."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        title, detail = body.get("title"), body.get("detail")
        if isinstance(title, str) and isinstance(detail, str):
            return _cut(f"{title}: {detail}")
        for key in ("detail", "message", "error_description", "error", "title", "errors"):
            value = body.get(key)
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                value = value["message"]
            if isinstance(value, str) and value:
                return _cut(value)
            if value:
                return _cut(orjson.dumps(value).decode())
    return _cut(response.text) or "(no message)"


def _failed(text: str) -> ToolResult:
    return ToolResult([{"type": "text", "text": text}], is_error=True)


class _Caller:
    """Sends the calls of one API's tools."""

    def __init__(self, api: str, client: httpx.AsyncClient, base: str, caller_token: CallerToken | None,
                 timeout: float | None) -> None:
        self.api, self.client, self.base = api, client, base
        self.caller_token, self.timeout = caller_token, timeout

    def handler(self, operation: Operation) -> Callable[..., Awaitable[Any]]:
        async def call(ctx: Context, **arguments: Any) -> Any:
            return await self.send(operation, arguments, ctx)

        return call

    async def send(self, op: Operation, arguments: Mapping[str, Any], ctx: Context) -> Any:
        request = self._request(op, arguments)
        auth: Any = httpx.USE_CLIENT_DEFAULT
        if self.caller_token is not None:
            try:
                token = await self.caller_token(ctx)
            except LookupError as exc:
                raise MCPError(INVALID_REQUEST, f"{self.api} is called with your own token, and there is none "
                                                f"for you: {exc}") from None
            request["headers"]["Authorization"] = f"Bearer {token}"
            auth = _NoAuth()
        if self.timeout is not None:
            request["timeout"] = self.timeout
        label = f"{op.method} {op.path}"
        try:
            response = await self.client.request(op.method, auth=auth, **request)
        except httpx.TimeoutException as exc:
            return _failed(f"{label}: the API did not answer in time ({type(exc).__name__})")
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return _failed(_cut(f"{label}: the API cannot be reached: {type(exc).__name__}: {exc}"))
        status = f"{response.status_code} {response.reason_phrase}".strip()
        if not response.is_success:
            return _failed(f"{label} failed: {status}: {said(response)}")
        if op.output_schema is None:
            return ToolResult([response.text or status])
        if not response.content and op.wrapped:  # no answer (a 204, say) where one that may be null is described
            return {"result": None}
        try:
            value = response.json()
        except ValueError:
            kind = response.headers.get("content-type") or "no content type"
            return _failed(_cut(f"{label}: the API answered {status} with {kind} where its document describes JSON: "
                                f"{response.text}"))
        return {"result": value} if op.wrapped else value  # checked against the output schema by Tool

    def _request(self, op: Operation, arguments: Mapping[str, Any]) -> dict[str, Any]:
        path = op.path
        params: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        cookies: list[str] = []
        body: dict[str, Any] = {}
        payload: Any = None
        for argument in op.arguments:
            if argument.name not in arguments:
                continue
            value = arguments[argument.name]
            if argument.location == "path":
                path = path.replace(f"{{{argument.wire}}}", quote(_text(value), safe=""))
            elif argument.location == "query":
                values = value if isinstance(value, list) else [value]
                if not argument.explode and isinstance(value, list):
                    values = [",".join(_text(v) for v in value)]
                params.extend((argument.wire, _text(v)) for v in values if v is not None)
            elif argument.location == "header":
                headers[argument.wire] = _text(value)
            elif argument.location == "cookie":
                cookies.append(f"{argument.wire}={_text(value)}")
            elif argument.location == "body":
                body[argument.wire] = value
            else:
                payload = value
        if cookies:
            headers["Cookie"] = "; ".join(cookies)
        request: dict[str, Any] = {"url": self.base + path, "params": params, "headers": headers}
        sent = payload if payload is not None else (body or None)
        if op.body_media is not None and sent is not None:
            form = "x-www-form-urlencoded" in op.body_media
            request["data" if form else "content"] = sent if form else orjson.dumps(sent)
            headers["Content-Type"] = "application/x-www-form-urlencoded" if form else op.body_media
        return request


def _text(value: Any) -> str:
    """A value as it goes in a path, a query or a header: JSON's ``true``/``false``, a string as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return orjson.dumps(value).decode()
