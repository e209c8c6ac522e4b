"""Argument completion (``completion/complete``) for prompt arguments and resource template variables."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wiremcp.threads import run_sync
from wiremcp.types import JSONObject

MAX_VALUES = 100


@dataclass(slots=True)
class Completion:
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


def to_wire(value: Any) -> JSONObject:
    if value is None:
        value = Completion([])
    if not isinstance(value, Completion):
        value = Completion([str(v) for v in value])
    values = value.values[:MAX_VALUES]
    out: JSONObject = {"values": values}
    total = value.total
    has_more = value.has_more
    if len(value.values) > MAX_VALUES:
        total = total if total is not None else len(value.values)
        has_more = True
    if total is not None:
        out["total"] = total
    if has_more is not None:
        out["hasMore"] = has_more
    return {"completion": out}


class Completer:
    """A function ``(value, arguments) -> list[str] | Completion`` for one argument of one prompt or template."""

    __slots__ = ("_fn", "_is_async")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)

    async def complete(self, value: str, arguments: dict[str, str]) -> JSONObject:
        result = await self._fn(value, arguments) if self._is_async else await run_sync(self._fn, value, arguments)
        return to_wire(result)
