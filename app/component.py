"""What tools, resources and prompts have in common: a user function and its descriptive fields."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import PydanticUserError

from wiremcp.errors import DefinitionError
from wiremcp.schema import context_parameter, resolve_hints
from wiremcp.threads import SyncFunction
from wiremcp.types import JSONObject

C = TypeVar("C")


class Component:
    """A registered user function with a name, a title, a description (default: its docstring),
    icons, ``_meta`` and the scopes a caller needs."""

    __slots__ = ("_ctx_param", "_fn", "_hints", "_sync", "defined_at", "description", "icons", "meta", "name",
                 "scopes", "title")

    def __init__(self, fn: Callable[..., Any], *, name: str | None, title: str | None, description: str | None,
                 icons: list[JSONObject] | None, meta: JSONObject | None, scopes: list[str] | None,
                 blocking: bool | None = None) -> None:
        callable_function(fn)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name= must be a string, not {name!r}")
        self._fn = fn
        self.defined_at = definition_site(fn)
        """``file:line`` of the user's function (or of the registration, for one wiremcp wrote): what a
        ``DefinitionError`` about it, a duplicate name for one, points the user to."""
        self.name: str = name or str(getattr(fn, "__name__", ""))
        self.title = title
        self.description = description if description is not None else inspect.cleandoc(fn.__doc__ or "") or None
        self.icons = icons
        self.meta = meta
        self.scopes = scopes or []
        self._sync = None if inspect.iscoroutinefunction(fn) else SyncFunction(
            fn, blocking, f"{type(self).__name__.lower()} {self.name!r}")
        """Where a sync function's calls run (``wiremcp.threads``): on the loop's thread unless it blocks; None
        for an async one."""
        self._hints = resolve_hints(fn)
        self._ctx_param = context_parameter(fn, self._hints)

    def _parameters(self) -> list[inspect.Parameter]:
        """The function's parameters, less the ``Context`` one."""
        return [p for p in inspect.signature(self._fn).parameters.values() if p.name != self._ctx_param]

    async def _invoke(self, kwargs: dict[str, Any], ctx: Any) -> Any:
        """Call the function (a sync one where ``SyncFunction`` says), passing the context if it wants it."""
        if self._ctx_param is not None:
            kwargs[self._ctx_param] = ctx
        if self._sync is None:
            return await self._fn(**kwargs)
        return await self._sync(**kwargs)

    def _describe(self, out: JSONObject) -> JSONObject:
        """Add the optional descriptive fields to a wire listing entry."""
        for key, value in (("title", self.title), ("description", self.description), ("icons", self.icons),
                           ("_meta", self.meta)):
            if value:
                out[key] = value
        return out


def callable_function(fn: object) -> None:
    """Refuse what cannot be a handler: something not callable, or a generator function (what it yields would
    never be seen: a handler returns its value)."""
    if not callable(fn):
        raise TypeError(f"{fn!r} is not a function: decorate a function (def or async def)")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError("a generator function (it yields): a handler returns its value")


_PACKAGE = tuple({os.path.realpath(os.path.join(os.path.dirname(os.path.realpath(__file__)), part)) + os.sep
                  for part in ("", "transports", "auth")})
"""The folders of wiremcp's modules, as their files really are: the core's, the transports' and auth's (an
editable install links the package to them, and the transports and auth folders from inside it)."""


@functools.lru_cache(maxsize=256)
def _ours(filename: str) -> bool:
    """Whether ``filename`` is one of wiremcp's modules (core, transports or auth)."""
    return os.path.realpath(filename).startswith(_PACKAGE)


def definition_site(fn: object = None) -> str:
    """``file:line`` where the user defined something: the first line of ``fn`` (its first decorator's, for a
    decorated function) when it is a function written outside wiremcp, else the line of the innermost call
    from outside wiremcp (the decorator applied, ``add_tool``, ``mount``, ...)."""
    code = getattr(fn, "__code__", None)
    if code is not None and not _ours(code.co_filename):
        return f"{code.co_filename}:{code.co_firstlineno}"
    frame = sys._getframe(1)
    while frame.f_back is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def defined(kind: str, fn: Callable[..., Any], make: Callable[[], C]) -> C:
    """``make()``, the component defined by ``fn``; what it refuses (something not a function, a signature or
    annotation no schema can describe, a bad option) as a ``DefinitionError`` that says which ``kind`` of
    component, which function and where it is defined, in one line."""
    try:
        return make()
    except DefinitionError:
        raise
    except (TypeError, ValueError, PydanticUserError) as exc:
        where = f"{definition_site(fn)}: "
        name = (getattr(fn, "__qualname__", None) or type(fn).__name__) if callable(fn) else None
        said = str(exc).strip()
        why = said.splitlines()[0] if said else type(exc).__name__
        for said_already in (f"{kind} {name}: ", f"{name}: "):
            why = why.removeprefix(said_already)
        raise DefinitionError(f"{where}{kind}{' ' + name if name else ''}: {why}") from exc


def duplicate(kind: str, key: str, first: str, second: str, rename: str) -> DefinitionError:
    """Two definitions under one name (or URI): the second's place, then the first's, in one line."""
    return DefinitionError(f"{second}: {kind} {key} is already defined at {first}; give one {rename}, "
                           "or pass replace=True to replace it")
