"""Multi round-trip requests: asking the client for input without server-to-client requests.

In the stateless era a handler that needs the user (elicitation), the client's model
(sampling) or the client's roots ends the round with ``InputRequired``; the client
answers and sends the same request again with ``inputResponses`` and the sealed
``requestState``. The handler then runs again from the start: the ``ctx.elicit(...)``
calls it already made get their answers at once, in order, so the same handler code
works in both eras. (Code before an input point therefore runs once per round: keep it
free of side effects, or use ``ctx.request_state`` to carry progress.)

In the handshake era the same ``InputRequired`` is served by sending each input request
to the client as a real JSON-RPC request and running the handler again with the answers.
"""

from __future__ import annotations

from typing import Any

from wiremcp import methods
from wiremcp.types import JSONObject

INPUT_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
INPUT_CAPABLE = methods.ASKS_FOR_INPUT
MAX_ROUNDS = 16


def input_key(method: str, number: int) -> str:
    """The key of a request's (or a task's) ``number``-th input request: ``elicitation-1``, ``sampling-2``..."""
    return f"{method.partition('/')[0]}-{number}"


class InputRequired(Exception):
    """Raise (or return) from a ``tools/call``, ``prompts/get`` or ``resources/read`` handler to ask the
    client for input: ``input_requests`` maps keys of your choosing to ``{"method": ..., "params": ...}``
    (``elicitation/create``, ``sampling/createMessage`` or ``roots/list``). ``request_state`` is yours:
    the framework seals it and hands it back as ``ctx.request_state`` on the retry."""

    def __init__(self, input_requests: dict[str, JSONObject] | None = None, request_state: str | None = None) -> None:
        super().__init__("input required")
        self.input_requests = dict(input_requests or {})
        self.request_state = request_state


class InputExchange:
    """The inputs of one request: what earlier rounds gathered plus what this retry brings."""

    __slots__ = ("_count", "answers", "app_state", "responses")

    def __init__(self, answers: JSONObject | None = None, responses: JSONObject | None = None,
                 app_state: str | None = None) -> None:
        self.responses: JSONObject = dict(responses or {})
        """This request's own ``inputResponses``."""
        self.answers: JSONObject = {**(answers or {}), **self.responses}
        """Every answer known: earlier rounds' (from the sealed state) and this retry's."""
        self.app_state = app_state
        self._count = 0

    @property
    def asked(self) -> int:
        """How many input points the handler has reached so far."""
        return self._count

    def next_key(self, method: str) -> str:
        """The key of the handler's next input point: stable across rounds because handlers replay in order."""
        self._count += 1
        return input_key(method, self._count)

    def answer(self, key: str) -> Any:
        return self.answers.get(key)
