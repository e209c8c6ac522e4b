"""Rounds of input: how a request whose handler raises ``InputRequired`` is served, in each era.

- Stateless era: a retry's ``inputResponses`` and sealed ``requestState`` are opened into the request's
  ``InputExchange``; a handler's ``InputRequired`` becomes the ``input_required`` result, whose new
  ``requestState`` seals the answers so far, bound to the caller and the request.
- Handshake era: each input request goes to the client as a real request, and the handler runs again
  with the answers (at most ``MAX_ROUNDS`` times).

Either way an input request must be one of the three kinds, and only for what the client declared. The
handler's side of the exchange is ``wiremcp.input_required``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wiremcp.asking import require_input_capability
from wiremcp.errors import INTERNAL_ERROR, InvalidParams, MCPError
from wiremcp.input_required import MAX_ROUNDS, InputExchange, InputRequired
from wiremcp.principal import key_of
from wiremcp.protocol import META_SERVER_INFO
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.dispatcher import Handler
    from wiremcp.request_state import RequestStateSealer


def _owner(ctx: Context) -> str:
    """Who ``requestState`` is bound to."""
    return key_of(ctx.principal) or ""


def _check_input_request(request: Any, ctx: Context) -> None:
    """An input request a handler raised must be one of the three kinds, and only for what the client
    declared (the one rule: ``wiremcp.asking.require_input_capability``)."""
    method = request.get("method") if isinstance(request, dict) else None
    params = request.get("params") if isinstance(request, dict) else None
    require_input_capability(method, params if isinstance(params, dict) else None, ctx.client_capabilities)


def open_inputs(method: str, params: JSONObject, ctx: Context, sealer: RequestStateSealer) -> None:
    """Read what a retry brings: the client's ``inputResponses`` and our sealed ``requestState``."""
    responses = params.get("inputResponses")
    if responses is not None:
        if not isinstance(responses, dict):
            raise InvalidParams("Invalid params: inputResponses must be an object")
        for key, value in responses.items():
            if not isinstance(value, dict):
                raise InvalidParams(f"Invalid params: inputResponses[{key!r}] must be an object")
    token = params.get("requestState")
    if responses is None and token is None:
        return  # a first round: nothing to open (an exchange is made when the handler first asks)
    answers: JSONObject = {}
    app_state = None
    if token is not None:
        opened = sealer.open(token, owner=_owner(ctx), method=method, params=params)
        answers, app_state = opened.answers, opened.app_state
    ctx.exchange = InputExchange(answers, responses, app_state)


def input_required_result(exc: InputRequired, method: str, params: JSONObject, ctx: Context,
                          sealer: RequestStateSealer) -> JSONObject:
    """Stateless era: the ``input_required`` result a handler's ``InputRequired`` answers the request with."""
    for request in exc.input_requests.values():
        _check_input_request(request, ctx)
    answers = ctx.exchange.answers if ctx.exchange is not None else {}
    result: JSONObject = {"resultType": "input_required", "_meta": {META_SERVER_INFO: ctx.server.identity()}}
    if exc.input_requests:
        result["inputRequests"] = exc.input_requests
    result["requestState"] = sealer.seal(
        owner=_owner(ctx), method=method, params=params, answers=answers, app_state=exc.request_state)
    return result


async def with_client_requests(handler: Handler, params: JSONObject, ctx: Context,
                               first: InputRequired) -> JSONObject:
    """Handshake era: a handler's ``InputRequired`` (``first``, from its first call) is served with real
    requests to the client, and the handler called again with the answers."""
    needed: InputRequired | None = first
    for _ in range(MAX_ROUNDS):
        if needed is None:
            try:
                return await handler(params, ctx)
            except InputRequired as exc:
                needed = exc
        answers: JSONObject = {}
        for key, request in needed.input_requests.items():
            _check_input_request(request, ctx)
            answers[key] = await ctx.asker.ask(request["method"], request.get("params"), None)
        ctx.exchange = InputExchange(None, answers, needed.request_state)
        needed = None
    raise MCPError(INTERNAL_ERROR, f"Gave up after {MAX_ROUNDS} rounds of input")
