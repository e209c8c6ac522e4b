"""Argument completion (``completion/complete``) for prompt arguments and resource template variables."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wiremcp import access
from wiremcp.component import callable_function, definition_site
from wiremcp.errors import CompletionError, InvalidParams, MCPError, ToolError
from wiremcp.failures import internal_error
from wiremcp.threads import SyncFunction
from wiremcp.types import JSONObject
from wiremcp.unavailable import Unavailable

if TYPE_CHECKING:
    from wiremcp.context import Context


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

    __slots__ = ("_fn", "_sync", "defined_at")

    def __init__(self, fn: Callable[..., Any]) -> None:
        callable_function(fn)
        try:
            inspect.signature(fn).bind("value", {})
        except TypeError:
            raise TypeError("a completion function takes (value, arguments)") from None
        except ValueError:  # a builtin without a signature: called as it is
            pass
        self._fn = fn
        self._sync = None if inspect.iscoroutinefunction(fn) else SyncFunction(
            fn, None, f"completion {getattr(fn, '__qualname__', fn)!r}")
        """Where a sync function's calls run (``wiremcp.threads``)."""
        self.defined_at = definition_site(fn)
        """``file:line`` of the function (see ``Component.defined_at``)."""

    async def complete(self, value: str, arguments: dict[str, str]) -> JSONObject:
        result = await self._fn(value, arguments) if self._sync is None else await self._sync(value, arguments)
        return to_wire(result)


async def complete(params: JSONObject, ctx: Context) -> JSONObject:
    """``completion/complete``: the argument named, of a prompt or resource template the caller may use."""
    ref = params.get("ref")
    argument = params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise InvalidParams("completion/complete needs 'ref' and 'argument' objects")
    arg_name = argument.get("name")
    value = argument.get("value", "")
    if not isinstance(arg_name, str) or not isinstance(value, str):
        raise InvalidParams("completion/complete: argument needs string 'name' and 'value'")
    kind = ref.get("type")
    if kind == "ref/prompt":
        target = ref.get("name")
        prompt = access.prompt(target, ctx, "completion/complete ref/prompt")
        if arg_name not in {a["name"] for a in prompt.arguments}:
            raise InvalidParams(f"Prompt {target} has no argument {arg_name}")
    elif kind == "ref/resource":
        target = ref.get("uri")
        template = access.template(target, ctx)
        assert template.template is not None
        if arg_name not in template.template.variables:
            raise InvalidParams(f"Resource template {target} has no variable {arg_name}")
    else:
        raise InvalidParams(f"Unknown reference type: {kind}")
    context = params.get("context")
    arguments = context.get("arguments") if isinstance(context, dict) else None
    completer = ctx.server.completers.get((kind, str(target), arg_name))
    if completer is None:
        return {"completion": {"values": [], "hasMore": False}}
    try:
        return await completer.complete(value, arguments if isinstance(arguments, dict) else {})
    except (MCPError, Unavailable):
        raise
    except ToolError as exc:  # words meant for the client, whichever kind raised them
        raise CompletionError(str(exc) or f"Completion of {arg_name} for {target} failed") from None
    except Exception as exc:
        raise internal_error(f"Completion of {arg_name} for {target} failed", exc,
                             details=ctx.server.error_details) from None
