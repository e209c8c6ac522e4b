"""Prompts: templates of messages with named string arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from wiremcp.component import Component
from wiremcp.content import to_block
from wiremcp.errors import InvalidParams, MCPError, PromptError, ToolError
from wiremcp.failures import internal_error
from wiremcp.input_required import InputRequired
from wiremcp.types import JSONObject
from wiremcp.unavailable import Unavailable

if TYPE_CHECKING:
    from wiremcp.context import Context



@dataclass(slots=True)
class Message:
    """One prompt message; ``content`` is a string, a content helper or a content block."""

    role: Literal["user", "assistant"]
    content: Any

    def to_wire(self) -> JSONObject:
        block = to_block(self.content)
        if block is None:
            raise TypeError(f"prompt message content must be text or a content block, not {type(self.content)}")
        return {"role": self.role, "content": block}


def user(content: Any) -> Message:
    return Message("user", content)


def assistant(content: Any) -> Message:
    return Message("assistant", content)


def _description(annotation: Any, default: Any) -> str | None:
    if isinstance(default, FieldInfo):
        return default.description
    for extra in getattr(annotation, "__metadata__", ()):
        if isinstance(extra, FieldInfo) and extra.description:
            return extra.description
    return None


def _argument(given: JSONObject) -> JSONObject:
    """One argument as given to ``Prompt(arguments=...)``, in the wire's shape."""
    if not isinstance(given, dict) or not isinstance(given.get("name"), str) or not given["name"]:
        raise TypeError(f"a prompt argument is an object with a name, not {given!r}")
    out: JSONObject = {"name": given["name"]}
    for key in ("title", "description"):
        if isinstance(given.get(key), str) and given[key]:
            out[key] = given[key]
    out["required"] = given.get("required") is True
    return out


class Prompt(Component):
    __slots__ = ("arguments",)

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, title: str | None = None,
                 description: str | None = None, icons: list[JSONObject] | None = None,
                 meta: JSONObject | None = None, scopes: list[str] | None = None,
                 arguments: list[JSONObject] | None = None, blocking: bool | None = None) -> None:
        """``arguments``: the arguments as ``prompts/list`` shows them (``name``, ``description``, ``required``),
        for a function that takes them all as ``**arguments``; by default they are the function's parameters."""
        super().__init__(fn, name=name, title=title, description=description, icons=icons, meta=meta,
                         scopes=scopes, blocking=blocking)
        hints = self._hints
        self.arguments: list[JSONObject] = []
        if arguments is not None:
            if not any(p.kind is p.VAR_KEYWORD for p in self._parameters()):
                raise TypeError(f"prompt {self.name}: a function given arguments= takes them as **arguments")
            self.arguments = [_argument(given) for given in arguments]
            return
        for param in self._parameters():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"prompt {self.name}: *args and **kwargs are not supported")
            arg: JSONObject = {"name": param.name}
            desc = _description(hints.get(param.name), param.default)
            if desc:
                arg["description"] = desc
            required = param.default is param.empty or (
                isinstance(param.default, FieldInfo) and param.default.is_required())
            arg["required"] = required
            self.arguments.append(arg)

    def to_wire(self) -> JSONObject:
        out = self._describe({"name": self.name})
        if self.arguments:
            out["arguments"] = self.arguments
        return out

    async def get(self, arguments: Any, ctx: Context) -> JSONObject:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams("prompt arguments must be an object")
        known = {a["name"] for a in self.arguments}
        missing = [a["name"] for a in self.arguments if a["required"] and a["name"] not in arguments]
        if missing:
            raise InvalidParams(f"Missing required arguments for prompt {self.name}: {', '.join(missing)}")
        kwargs: dict[str, Any] = {}
        for key, value in arguments.items():
            if key not in known:
                raise InvalidParams(f"Unknown argument for prompt {self.name}: {key}")
            if not isinstance(value, str):
                raise InvalidParams(f"Argument {key} of prompt {self.name} must be a string")
            kwargs[key] = value
        for param in self._parameters():
            # a ``Field(default, description=...)`` default is a FieldInfo, not the value to pass
            if param.name not in kwargs and isinstance(param.default, FieldInfo):
                kwargs[param.name] = param.default.get_default(call_default_factory=True)
        try:
            value = await self._invoke(kwargs, ctx)
            if isinstance(value, InputRequired):
                raise value
            messages = self._messages(value)
        except (MCPError, InputRequired, Unavailable):  # not now: 503, to be retried
            raise
        except ToolError as exc:  # words meant for the client, whichever kind raised them
            raise PromptError(str(exc) or f"Error rendering prompt {self.name}") from None
        except Exception as exc:
            raise internal_error(f"Error rendering prompt {self.name}", exc,
                                 details=ctx.server.error_details) from None
        result: JSONObject = {"messages": messages}
        if self.description:
            result["description"] = self.description
        return result

    @staticmethod
    def _messages(value: Any) -> list[JSONObject]:
        items = value if isinstance(value, list | tuple) else [value]
        out: list[JSONObject] = []
        for item in items:
            if isinstance(item, Message):
                out.append(item.to_wire())
            elif isinstance(item, dict) and item.get("role") in ("user", "assistant") and "content" in item:
                out.append(Message(item["role"], item["content"]).to_wire())
            elif isinstance(item, BaseModel):
                out.append(Message("user", item.model_dump_json()).to_wire())
            else:
                out.append(Message("user", item).to_wire())
        return out
