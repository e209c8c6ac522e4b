"""What tools, resources and prompts have in common: a user function and its descriptive fields."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import PydanticUserError

from wiremcp.errors import DefinitionError
from wiremcp.schema import context_parameter, resolve_hints
from wiremcp.threads import run_sync
from wiremcp.types import JSONObject

C = TypeVar("C")


class Component:
    """A registered user function with a name, a title, a description (default: its docstring),
    icons, ``_meta`` and the scopes a caller needs."""

    __slots__ = ("_ctx_param", "_fn", "_hints", "_is_async", "description", "icons", "meta", "name", "scopes",
                 "title")

    def __init__(self, fn: Callable[..., Any], *, name: str | None, title: str | None, description: str | None,
                 icons: list[JSONObject] | None, meta: JSONObject | None, scopes: list[str] | None) -> None:
        self._fn = fn
        self.name = name or fn.__name__
        self.title = title
        self.description = description if description is not None else inspect.cleandoc(fn.__doc__ or "") or None
        self.icons = icons
        self.meta = meta
        self.scopes = scopes or []
        self._is_async = inspect.iscoroutinefunction(fn)
        self._hints = resolve_hints(fn)
        self._ctx_param = context_parameter(fn, self._hints)

    def _parameters(self) -> list[inspect.Parameter]:
        """The function's parameters, less the ``Context`` one."""
        return [p for p in inspect.signature(self._fn).parameters.values() if p.name != self._ctx_param]

    async def _invoke(self, kwargs: dict[str, Any], ctx: Any) -> Any:
        """Call the function (sync ones on a worker thread), passing the context if it wants it."""
        if self._ctx_param is not None:
            kwargs[self._ctx_param] = ctx
        if self._is_async:
            return await self._fn(**kwargs)
        return await run_sync(self._fn, **kwargs)

    def _describe(self, out: JSONObject) -> JSONObject:
        """Add the optional descriptive fields to a wire listing entry."""
        for key, value in (("title", self.title), ("description", self.description), ("icons", self.icons),
                           ("_meta", self.meta)):
            if value:
                out[key] = value
        return out


def defined(kind: str, fn: Callable[..., Any], make: Callable[[], C]) -> C:
    """``make()``, the component defined by ``fn``; what it refuses (a signature or annotation no schema can
    describe, a bad option) as a ``DefinitionError`` that says which ``kind`` of component, which function
    and where it is defined, in one line."""
    try:
        return make()
    except DefinitionError:
        raise
    except (TypeError, ValueError, PydanticUserError) as exc:
        code = getattr(fn, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}: " if code is not None else ""
        name = getattr(fn, "__qualname__", repr(fn))
        said = str(exc).strip()
        why = said.splitlines()[0] if said else type(exc).__name__
        for said_already in (f"{kind} {name}: ", f"{name}: "):
            why = why.removeprefix(said_already)
        raise DefinitionError(f"{where}{kind} {name}: {why}") from exc
