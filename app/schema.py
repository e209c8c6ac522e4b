"""JSON Schemas from Python signatures and annotations (via pydantic), and hand-written schema checks."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin, get_type_hints

import typing_extensions
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticInvalidForJsonSchema
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode
from pydantic_core import CoreSchema, PydanticUndefined
from typing_extensions import is_typeddict

from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.schema")

_CONTEXT_TYPE_NAMES = frozenset({"Context"})
_COMPAT: dict[Any, Any] = {}


def typeddict_compat(annotation: Any) -> Any:
    """pydantic needs ``typing_extensions.TypedDict`` before Python 3.12; rebuild ``typing`` ones as such."""
    if sys.version_info >= (3, 12):
        return annotation
    if is_typeddict(annotation) and type(annotation).__module__ == "typing":
        if annotation not in _COMPAT:
            hints = get_type_hints(annotation, include_extras=True)
            fields = {}
            for key, hint in hints.items():
                hint = typeddict_compat(hint)
                if key in annotation.__optional_keys__:
                    hint = typing_extensions.NotRequired[hint]
                fields[key] = hint
            rebuilt = typing_extensions.TypedDict(annotation.__name__, fields)  # type: ignore[misc]
            rebuilt.__doc__ = annotation.__doc__
            _COMPAT[annotation] = rebuilt
        return _COMPAT[annotation]
    args = get_args(annotation)
    origin = get_origin(annotation)
    if args and origin is not None and origin is not typing.Annotated:
        new_args = tuple(typeddict_compat(a) for a in args)
        if new_args != args:
            try:
                return annotation.copy_with(new_args)
            except AttributeError:
                return origin[new_args]
    return annotation


class _Schema(GenerateJsonSchema):
    """pydantic's generator without the auto-generated titles (they only repeat the names)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> dict[str, Any]:
        out = super().generate(schema, mode)
        out.pop("title", None)
        return out


def json_schema(adapter: TypeAdapter[Any], mode: JsonSchemaMode = "validation") -> JSONObject:
    return adapter.json_schema(schema_generator=_Schema, mode=mode)


def resolve_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(fn, include_extras=True)
    except Exception:
        return dict(getattr(fn, "__annotations__", {}))


def is_context_annotation(annotation: Any) -> bool:
    """``Context`` (``wiremcp.context``, told by its name: the context is made of what this module makes)."""
    if isinstance(annotation, type) and (annotation.__module__, annotation.__qualname__) == ("wiremcp.context",
                                                                                             "Context"):
        return True
    if isinstance(annotation, str):
        return annotation in _CONTEXT_TYPE_NAMES
    return any(is_context_annotation(arg) for arg in get_args(annotation))


def context_parameter(fn: Callable[..., Any], hints: dict[str, Any]) -> str | None:
    for name in inspect.signature(fn).parameters:
        if name in hints and is_context_annotation(hints[name]):
            return name
    return None


def arguments_model(fn: Callable[..., Any], name: str, hints: dict[str, Any], skip: str | None) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters (less the context one) that forbids extra keys."""
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.name == skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{name}: *args and **kwargs cannot be described by a schema")
        if param.name.startswith("_"):
            raise TypeError(f"{name}: parameter names may not start with '_' ({param.name})")
        annotation = typeddict_compat(hints.get(param.name, Any))
        default = PydanticUndefined if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    model: type[BaseModel] = create_model(f"{name}_arguments", __config__=config, **fields)
    return model


def arguments_schema(model: type[BaseModel]) -> JSONObject:
    """The input schema of an ``arguments_model``; a parameter whose type has no JSON Schema (a class pydantic
    only checks with ``isinstance``, such as ``socket.socket``) is a ``TypeError`` naming it, its type and
    what to use instead, in one line."""
    try:
        schema = json_schema(TypeAdapter(model))
    except PydanticInvalidForJsonSchema as exc:
        raise TypeError(_unsupported_parameter(model) or str(exc).strip().splitlines()[0]) from None
    schema.setdefault("properties", {})
    return schema


def _unsupported_parameter(model: type[BaseModel]) -> str | None:
    """What to say of the first of ``model``'s fields whose type has no JSON Schema (None if none alone has)."""
    for name, field in model.model_fields.items():
        if field.annotation is None:
            continue
        try:
            json_schema(TypeAdapter(field.annotation, config=ConfigDict(arbitrary_types_allowed=True)))
        except PydanticInvalidForJsonSchema:
            return (f"parameter {name!r} is typed {type_name(field.annotation)}, which has no JSON Schema: type it "
                    "str, int, float, bool, a list or dict of them, an Enum, a Literal, a pydantic model, a dataclass "
                    "or a TypedDict (and make what it stands for inside the function)")
        except Exception:  # a type pydantic takes no config with (a model): not the one
            continue
    return None


def type_name(annotation: Any) -> str:
    """``annotation`` as it is written: ``socket.socket``, ``int``, ``list[socket.socket]``."""
    if isinstance(annotation, type) and not get_args(annotation):
        module = "" if annotation.__module__ == "builtins" else f"{annotation.__module__}."
        return f"{module}{annotation.__qualname__}"
    return repr(annotation).replace("typing.", "")


def _is_object_type(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    if is_typeddict(annotation) or dataclasses.is_dataclass(annotation):
        return True
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _is_object_type(get_args(annotation)[0])
    if origin in (dict, typing.Mapping) or annotation is dict:
        args = get_args(annotation)
        return not args or args[0] is str
    return False


@dataclasses.dataclass(slots=True)
class OutputSpec:
    """How a tool's return value becomes ``structuredContent``."""

    adapter: TypeAdapter[Any]
    schema: JSONObject
    wrapped: bool  # a non-object value travels as {"result": value}

    def dump(self, value: Any) -> Any:
        # validate first: serializing alone passes a wrong value through, breaking the output schema.
        # The adapter's own validator and serializer: what validate_python and dump_python call, less
        # their checks of arguments we never pass.
        adapter = self.adapter
        data = adapter.serializer.to_python(adapter.validator.validate_python(value), mode="json")
        return {"result": data} if self.wrapped else data


_UNSTRUCTURED = (str, bytes)


def _without_input_required(annotation: Any) -> Any:
    """``X | InputRequired`` describes its result as ``X``: an InputRequired is another kind of answer."""
    from wiremcp.input_required import InputRequired

    if annotation is InputRequired:
        return None
    args = get_args(annotation)
    if args and InputRequired in args and (get_origin(annotation) in (typing.Union, types.UnionType)):
        rest = tuple(a for a in args if a is not InputRequired)
        return rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007 - built from a tuple
    return annotation


def output_spec(annotation: Any, as_is: tuple[type, ...] = ()) -> OutputSpec | None:
    """An output schema for a return annotation, or None where the result is plain content or one of the
    ``as_is`` types (a complete result, returned as it is)."""
    annotation = _without_input_required(annotation)
    if annotation in (inspect.Signature.empty, None, type(None), Any) or annotation in _UNSTRUCTURED:
        return None
    from wiremcp.content import Audio, EmbeddedResource, Image, ResourceLink
    content_types = (Image, Audio, EmbeddedResource, ResourceLink, *as_is)
    flat = [annotation, *get_args(annotation)]
    for arg in flat:
        if isinstance(arg, type) and issubclass(arg, content_types):
            return None
        for inner in get_args(arg):
            if isinstance(inner, type) and issubclass(inner, content_types):
                return None
    annotation = typeddict_compat(annotation)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        inner_schema = json_schema(adapter, mode="serialization")
    except Exception as exc:
        log.warning("no output schema for return type %r (%s); results will be unstructured", annotation, exc)
        return None
    if _is_object_type(annotation):
        return OutputSpec(adapter, inner_schema, wrapped=False)
    schema: JSONObject = {"type": "object", "properties": {"result": inner_schema}, "required": ["result"]}
    defs = inner_schema.pop("$defs", None)
    if defs:
        schema["$defs"] = defs
    return OutputSpec(adapter, schema, wrapped=True)


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


class SchemaChecker:
    """Validates values against a hand-written JSON Schema (2020-12 unless ``$schema`` says otherwise)."""

    def __init__(self, schema: JSONObject) -> None:
        import jsonschema  # only a tool or form with a hand-written schema needs it: not imported before

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        self._validator = cls(schema)

    def errors(self, value: Any) -> str | None:
        problems = [
            f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
            for e in self._validator.iter_errors(value)
        ]
        return "; ".join(problems) if problems else None


def _inline_refs(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = dict(defs[ref.removeprefix("#/$defs/")])
            target.pop("title", None)
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            return _inline_refs({**target, **extra}, defs)
        return {k: _inline_refs(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline_refs(v, defs) for v in schema]
    return schema


def elicitation_schema(model: type[BaseModel]) -> JSONObject:
    """A flat ``requestedSchema`` for a pydantic model (elicitation forbids ``$ref``)."""
    raw = json_schema(TypeAdapter(model))
    flat: JSONObject = _inline_refs(raw, raw.get("$defs", {}))
    flat.pop("additionalProperties", None)
    return flat
