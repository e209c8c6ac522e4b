"""Tools: definitions built from typed functions, and how a call becomes a ``CallToolResult``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ValidationError

from wiremcp.component import Component
from wiremcp.content import to_block
from wiremcp.context import Context
from wiremcp.errors import ClientError, ClientTimeout, MCPError, ToolError
from wiremcp.failures import described
from wiremcp.header_params import header_params
from wiremcp.input_required import InputRequired
from wiremcp.schema import (
    OutputSpec,
    SchemaChecker,
    arguments_model,
    arguments_schema,
    output_spec,
    validation_message,
)
from wiremcp.types import JSONObject
from wiremcp.unavailable import Unavailable


def error_result(message: str) -> JSONObject:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def to_content(value: Any) -> list[JSONObject]:
    """Content blocks for whatever a tool returned that is not structured output."""
    if value is None:
        return []
    block = to_block(value)
    if block is not None:
        return [block]
    if isinstance(value, list | tuple):
        blocks: list[JSONObject] = []
        for item in value:
            blocks.extend(to_content(item))
        return blocks
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
        return [{"type": "text", "text": value}]
    return [{"type": "text", "text": orjson.dumps(value, default=str).decode()}]


class ToolResult:
    """A complete tool result, returned as is: content blocks, optional structured content, error flag."""

    __slots__ = ("content", "is_error", "meta", "structured")

    def __init__(self, content: list[Any] | None = None, structured: Any = None, *, is_error: bool = False,
                 meta: JSONObject | None = None) -> None:
        self.content = content or []
        self.structured = structured
        self.is_error = is_error
        self.meta = meta

    def to_wire(self) -> JSONObject:
        out: JSONObject = {"content": to_content(self.content)}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        if self.is_error:
            out["isError"] = True
        if self.meta:
            out["_meta"] = self.meta
        return out


TaskSupport = Literal["forbidden", "optional", "required"]
TaskStart = Literal["call", "handler"]


class Tool(Component):
    """One registered tool."""

    __slots__ = ("_checker", "_fields", "_model", "_output", "_output_checker", "annotations", "header_params",
                 "input_schema", "listed", "output_schema", "task_start", "task_support")

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, title: str | None = None,
                 description: str | None = None, annotations: JSONObject | None = None,
                 icons: list[JSONObject] | None = None, meta: JSONObject | None = None,
                 input_schema: JSONObject | None = None, output_schema: JSONObject | None = None,
                 structured_output: bool | None = None, scopes: list[str] | None = None,
                 task_support: TaskSupport = "forbidden", task_start: TaskStart = "call",
                 blocking: bool | None = None) -> None:
        super().__init__(fn, name=name, title=title, description=description, icons=icons, meta=meta,
                         scopes=scopes, blocking=blocking)
        if not self.name or len(self.name) > 128:
            raise ValueError(f"tool name must be 1 to 128 characters: {self.name!r}")
        if task_support not in ("forbidden", "optional", "required"):
            raise ValueError(f"{self.name}: task_support must be 'forbidden', 'optional' or 'required'")
        if task_start not in ("call", "handler"):
            raise ValueError(f"{self.name}: task_start must be 'call' or 'handler'")
        self.annotations = annotations
        self.listed = True
        """Whether ``tools/list`` shows it (a transform may hide it: ``MCPServer.transform(listed=False)``);
        it is callable either way."""
        self.task_support: TaskSupport = task_support
        """Whether the tool may (``optional``) or must (``required``) run as a task the client polls: a
        2025-11-25 client asks for one (``params.task``); with the 2026-07-28 tasks extension the server
        decides, and makes every call of such a tool from a client declaring the extension a task."""
        self.task_start: TaskStart = task_start
        """When a call becomes a task: with the ``call`` (before the handler runs), or when the ``handler``
        calls ``ctx.start_task()`` (until then, and if it never does, the call is an ordinary one)."""
        hints = self._hints
        self._model: type[BaseModel] | None = None
        self._checker: SchemaChecker | None = None
        if input_schema is not None:
            if input_schema.get("type") != "object":
                raise ValueError(f"{self.name}: inputSchema must have type 'object' at its root")
            self._checker = SchemaChecker(input_schema)
            self.input_schema = input_schema
        else:
            self._model = arguments_model(fn, self.name, hints, self._ctx_param)
            self._fields = tuple(self._model.model_fields)
            self.input_schema = arguments_schema(self._model)
        self.header_params = header_params(self.input_schema, self.name)
        """Parameters mirrored into ``Mcp-Param-*`` headers (stateless era, HTTP)."""
        self._output: OutputSpec | None = None
        self._output_checker: SchemaChecker | None = None
        if output_schema is not None:
            self._output_checker = SchemaChecker(output_schema)
            self.output_schema: JSONObject | None = output_schema
        elif structured_output is not False:
            self._output = output_spec(hints.get("return", inspect.Signature.empty), as_is=(ToolResult,))
            if structured_output and self._output is None:
                raise ValueError(f"{self.name}: structured_output=True needs a return annotation with a schema")
            self.output_schema = self._output.schema if self._output else None
        else:
            self.output_schema = None

    def to_wire(self) -> JSONObject:
        out = self._describe({"name": self.name})
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        if self.task_support != "forbidden":
            out["execution"] = {"taskSupport": self.task_support}
        return out

    async def call(self, arguments: JSONObject, ctx: Context) -> JSONObject:
        """Run the tool; failures of the tool itself become ``isError`` results."""
        if self._model is not None:
            try:
                # the model's own validator: what model_validate calls, less its checks of arguments we never pass
                parsed = self._model.__pydantic_validator__.validate_python(arguments)
            except ValidationError as exc:
                return error_result(f"Invalid arguments for tool {self.name}: {validation_message(exc)}")
            kwargs = {key: getattr(parsed, key) for key in self._fields}
        else:
            assert self._checker is not None
            problem = self._checker.errors(arguments)
            if problem is not None:
                return error_result(f"Invalid arguments for tool {self.name}: {problem}")
            kwargs = dict(arguments)
        try:
            value = await self._invoke(kwargs, ctx)
        except ToolError as exc:
            return error_result(str(exc) or f"Tool {self.name} failed")
        except ClientError as exc:
            return error_result(f"Tool {self.name} failed: the client answered with an error: {exc.message}")
        except (MCPError, InputRequired, Unavailable):  # not now: 503, to be retried
            raise
        except ClientTimeout:
            return error_result(f"Tool {self.name} failed: the client did not answer in time")
        except Exception as exc:
            return error_result(described(f"Error executing tool {self.name}", exc,
                                          details=ctx.server.error_details)[0])
        return self._result(value, ctx.server.error_details)

    def _result(self, value: Any, details: bool) -> JSONObject:
        if isinstance(value, InputRequired):
            raise value
        if isinstance(value, ToolResult):
            return value.to_wire()
        if self._output is not None:
            try:
                structured = self._output.dump(value)
            except Exception as exc:  # the value's own text (and pydantic's, which quotes it) stays in the log
                return self._mismatch(exc, details)
            return {"content": [{"type": "text", "text": orjson.dumps(structured).decode()}],
                    "structuredContent": structured}
        if self._output_checker is not None:
            problem = self._output_checker.errors(value)
            if problem is not None:
                return self._mismatch(ValueError(problem), details)
            return {"content": [{"type": "text", "text": orjson.dumps(value).decode()}], "structuredContent": value}
        return {"content": to_content(value)}

    def _mismatch(self, failure: Exception, details: bool) -> JSONObject:
        """The result of a tool whose value does not match its output schema: a bug of the server's."""
        return error_result(described(f"Tool {self.name} returned a result that does not match its output schema",
                                      failure, details=details)[0])


