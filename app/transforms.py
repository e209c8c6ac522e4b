"""Tool transformation: a tool served in another shape (``MCPServer.transform``), whoever wrote it.

A ``Transform`` names a tool as this server serves it (its own, a mounted child's under its prefix, a remote
child's) and says what its clients see instead: another name, title or description, arguments renamed,
redescribed, given a default or hidden (``Arg``), the tool left out of ``tools/list`` while still callable. The
tool served is a ``TransformedTool``: its input schema is the transformed one, which a call's arguments are
checked against (an argument the schema does not have is refused like any unknown one); then the original
tool is called with its own argument names, the defaults filled in and the hidden values set (a fixed one,
or one computed per call from the ``Context``). Its output schema and results are the original's.

``served`` applies the transforms to the tools a server has (``MCPServer.defined_tools``) whenever they
change: a tool that comes later (a remote child's, listed when the upstream is reached) is transformed as it
comes. A transform that does not fit the tool it names is a ``DefinitionError`` where it is written when the
tool is there already; one that no longer fits a tool that came later is logged, and that tool not served.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from wiremcp.component import definition_site
from wiremcp.errors import ClientError, DefinitionError, MCPError, ToolError
from wiremcp.failures import described
from wiremcp.header_params import header_params
from wiremcp.input_required import InputRequired
from wiremcp.schema import SchemaChecker
from wiremcp.tools import Tool, error_result
from wiremcp.types import JSONObject
from wiremcp.unavailable import Unavailable

if TYPE_CHECKING:
    from wiremcp.context import Context

log = logging.getLogger("wiremcp.transforms")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Arg:
    """How a transform changes one argument: ``name`` (what clients call it), ``description``, ``default``
    (clients may leave it out), or hidden from clients: ``value`` (always that), ``compute`` (a function,
    possibly async, of nothing or of the call's ``Context``, run at every call) or ``hide=True`` (an
    argument that is optional already keeps its own default)."""

    __slots__ = ("_wants_ctx", "compute", "default", "description", "hide", "name", "value")

    def __init__(self, *, name: str | None = None, description: str | None = None, default: Any = MISSING,
                 value: Any = MISSING, compute: Callable[..., Any] | None = None, hide: bool = False) -> None:
        where = definition_site()
        for field, given in (("name", name), ("description", description)):
            if given is not None and (not isinstance(given, str) or not given):
                raise DefinitionError(f"{where}: Arg({field}=...) must be a non-empty string, not {given!r}")
        if name is not None and name.startswith("_"):
            raise DefinitionError(f"{where}: Arg(name={name!r}): argument names may not start with '_'")
        if not isinstance(hide, bool):
            raise DefinitionError(f"{where}: Arg(hide=...) is True or False, not {hide!r}")
        if compute is not None and not callable(compute):
            raise DefinitionError(f"{where}: Arg(compute=...) takes a function (of nothing, or of the Context), "
                                  f"not {compute!r}")
        hidden = [f for f, given in (("value", value is not MISSING), ("compute", compute is not None)) if given]
        if len(hidden) > 1 or (hidden and default is not MISSING):
            raise DefinitionError(f"{where}: Arg: give one of value=, compute= (hidden from clients) or default= "
                                  "(clients may change it)")
        if (hidden or hide) and (name is not None or description is not None):
            raise DefinitionError(f"{where}: Arg: a hidden argument has no name or description clients see")
        for field, given in (("value", value), ("default", default)):
            if given is not MISSING:
                try:
                    orjson.dumps(given)
                except TypeError:
                    raise DefinitionError(f"{where}: Arg({field}=...) must be JSON (what a client could send), "
                                          f"not {given!r}") from None
        self.name = name
        self.description = description
        self.default = default
        self.value = value
        self.compute = compute
        self.hide = hide or bool(hidden)
        self._wants_ctx = compute is not None and _takes_context(compute, where)

    async def resolve(self, ctx: Context) -> Any:
        """The hidden value for this call."""
        if self.compute is None:
            return self.value
        made = self.compute(ctx) if self._wants_ctx else self.compute()
        return await made if inspect.isawaitable(made) else made


def _takes_context(fn: Callable[..., Any], where: str) -> bool:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        return False
    if len(params) > 1:
        raise DefinitionError(f"{where}: Arg(compute=...) is called with the Context or with nothing, "
                              f"not with {len(params)} arguments")
    return len(params) == 1


class Transform:
    """What ``MCPServer.transform`` was given for one tool, checked as far as it can be without the tool."""

    __slots__ = ("_failed", "_made", "arguments", "defined_at", "description", "listed", "name", "title", "tool")

    def __init__(self, tool: object, where: str, *, name: object, title: object, description: object,
                 listed: object, arguments: object) -> None:
        if callable(tool):
            raise DefinitionError(f"{where}: transform is not a decorator: name the tool to transform, as in "
                                  "server.transform(\"search\", name=\"find\")")
        if not isinstance(tool, str) or not tool:
            raise DefinitionError(f"{where}: transform: the tool to transform is named by a string, not {tool!r}")
        for field, given in (("name", name), ("title", title), ("description", description)):
            if given is not None and (not isinstance(given, str) or not given):
                raise DefinitionError(f"{where}: transform {tool}: {field}= must be a non-empty string, not {given!r}")
        if isinstance(name, str) and len(name) > 128:
            raise DefinitionError(f"{where}: transform {tool}: a tool name is 1 to 128 characters")
        if not isinstance(listed, bool):
            raise DefinitionError(f"{where}: transform {tool}: listed= is True or False, not {listed!r}")
        given = {} if arguments is None else arguments
        if not isinstance(given, Mapping) or not all(isinstance(k, str) and isinstance(v, Arg) for k, v in given.items()):
            raise DefinitionError(f"{where}: transform {tool}: arguments= maps argument names to Arg(...), as in "
                                  "arguments={\"limit\": Arg(default=10)}")
        renamed = [a.name for a in given.values() if a.name is not None]
        if len(set(renamed)) < len(renamed):
            raise DefinitionError(f"{where}: transform {tool}: two arguments renamed to one name")
        self.tool = tool
        self.defined_at = where
        self.name: str | None = name  # type: ignore[assignment]
        self.title: str | None = title  # type: ignore[assignment]
        self.description: str | None = description  # type: ignore[assignment]
        self.listed = listed
        self.arguments: dict[str, Arg] = dict(given)
        self._made: tuple[Tool, TransformedTool] | None = None
        self._failed: Tool | None = None

    def made_from(self, source: Tool) -> TransformedTool:
        """The tool served for ``source`` (the same one while ``source`` is); ``ValueError`` says why
        ``source`` cannot be transformed so."""
        if self._made is not None and self._made[0] is source:
            return self._made[1]
        made = TransformedTool(source, self)
        self._made = (source, made)
        return made

    def schema(self, source: Tool) -> tuple[JSONObject, dict[str, str]]:
        """The transformed input schema of ``source``, and the original name of each argument clients send."""
        schema = copy.deepcopy(source.input_schema)
        properties: dict[str, Any] = dict(schema.get("properties") or {})
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        unknown = sorted(set(self.arguments) - set(properties))
        if unknown:
            has = ", ".join(properties) or "none"
            raise ValueError(f"tool {source.name} has no argument {unknown[0]!r} (its arguments: {has})")
        out: dict[str, Any] = {}
        back: dict[str, str] = {}
        needed: list[str] = []
        for key, prop in properties.items():
            arg = self.arguments.get(key)
            if arg is None:
                out[key], back[key] = prop, key
                needed += [key] if key in required else []
                continue
            if arg.hide:
                if key in required and arg.value is MISSING and arg.compute is None:
                    raise ValueError(f"argument {key!r} is required: hiding it needs value= or compute=")
                continue
            shown = arg.name or key
            if shown != key and shown in properties and shown not in self.arguments:
                raise ValueError(f"argument {key!r} cannot be renamed {shown!r}: the tool has an argument of that name")
            prop = dict(prop) if isinstance(prop, dict) else {}
            if arg.description is not None:
                prop["description"] = arg.description
            if arg.default is not MISSING:
                prop["default"] = arg.default
            elif key in required:
                needed.append(shown)
            out[shown], back[shown] = prop, key
        schema["properties"] = out
        if needed:
            schema["required"] = needed
        else:
            schema.pop("required", None)
        return schema, back


class TransformedTool(Tool):
    """A tool served in the shape a ``Transform`` gives it; a call is checked against that shape, then made to
    the original tool (``source``) in its own."""

    __slots__ = ("_back", "_withheld", "source", "transform")

    def __init__(self, source: Tool, transform: Transform) -> None:
        schema, back = transform.schema(source)
        for cls in type(source).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(source, slot) and not slot.startswith("__"):
                    object.__setattr__(self, slot, getattr(source, slot))
        self.source = source
        self.transform = transform
        self._back = back
        self._withheld = tuple(key for key in transform.arguments if key not in back)
        """The original names clients may not send: the hidden arguments', and the renamed ones' (a schema that
        allows other arguments would let them through)."""
        self.name = transform.name or source.name
        self.title = transform.title if transform.title is not None else source.title
        self.description = transform.description if transform.description is not None else source.description
        self.listed = transform.listed and source.listed
        self.defined_at = transform.defined_at
        self.input_schema = schema
        self._model = None
        self._checker = SchemaChecker(schema)
        self.header_params = header_params(schema, self.name)

    def as_source(self, arguments: Any) -> Any:
        """A client's ``arguments`` under the original tool's names (for a mounted child's middleware)."""
        if not isinstance(arguments, dict):
            return arguments
        return {self._back.get(key, key): value for key, value in arguments.items()}

    def as_shown(self, arguments: Any) -> Any:
        """``arguments`` under the original tool's names (``as_source``'s) under the names clients see again;
        a hidden one is left out (its value is the transform's, set as the tool is called)."""
        if not isinstance(arguments, dict):
            return arguments
        shown = {original: key for key, original in self._back.items()}
        return {shown.get(key, key): value for key, value in arguments.items()
                if key in shown or key not in self._withheld}

    async def call(self, arguments: JSONObject, ctx: Context) -> JSONObject:
        """Check ``arguments`` against the transformed schema, then call the original tool with its names,
        defaults and hidden values."""
        assert self._checker is not None
        problem = self._checker.errors(arguments)
        if problem is not None:
            return error_result(f"Invalid arguments for tool {self.name}: {problem}")
        withheld = [key for key in self._withheld if key in arguments]
        if withheld:
            return error_result(f"Invalid arguments for tool {self.name}: arguments: {withheld[0]!r} was unexpected")
        back = self._back
        given = {back.get(key, key): value for key, value in arguments.items()}
        for key, arg in self.transform.arguments.items():
            if arg.hide and (arg.value is not MISSING or arg.compute is not None):
                try:
                    given[key] = await arg.resolve(ctx)
                except ToolError as exc:
                    return error_result(str(exc) or f"Tool {self.name} failed")
                except (MCPError, InputRequired, Unavailable):
                    raise
                except ClientError as exc:
                    return error_result(f"Tool {self.name} failed: the client answered with an error: {exc.message}")
                except Exception as exc:
                    return error_result(described(f"Error computing argument {key} of tool {self.name}", exc,
                                                  details=ctx.server.error_details)[0])
            elif arg.default is not MISSING:
                given.setdefault(key, arg.default)
        return await self.source.call(given, ctx)


def served(defined: dict[str, Tool], transforms: Mapping[str, Transform]) -> dict[str, Tool]:
    """The tools served for those ``defined``: each one a transform names in its new shape (and under its new
    name, which wins over a tool of that name), the others as they are; ``defined`` itself without transforms."""
    if not transforms:
        return defined
    made: dict[str, TransformedTool | None] = {}
    for name, tool in defined.items():
        transform = transforms.get(name)
        if transform is None:
            continue
        try:
            made[name] = transform.made_from(tool)
        except ValueError as exc:
            made[name] = None
            if transform._failed is not tool:
                transform._failed = tool
                log.error("%s: transform %s: %s; the tool is not served", transform.defined_at, name, exc)
    renamed = {t.name for t in made.values() if t is not None}
    out: dict[str, Tool] = {}
    for name, tool in defined.items():
        if name in made:
            transformed = made[name]
            if transformed is not None:
                out[transformed.name] = transformed
        elif name not in renamed:
            out[name] = tool
    return out
