"""JSON Schemas from signatures (tool input) and return annotations (tool output)."""

import dataclasses
import sys
import typing
from typing import Annotated, Any, Literal

import jsonschema
import pytest
import typing_extensions
from pydantic import BaseModel, Field, ValidationError

from tests.support.forms import Person
from wiremcp.content import Image, ResourceLink
from wiremcp.context import Context
from wiremcp.schema import (
    SchemaChecker,
    arguments_model,
    context_parameter,
    elicitation_schema,
    output_spec,
    resolve_hints,
    typeddict_compat,
    validation_message,
)
from wiremcp.tools import Tool


class Point(BaseModel):
    x: int
    y: int


class Polygon(BaseModel):
    name: str
    points: list[Point]


class Weather(typing.TypedDict):
    """Weather at a place."""

    city: str
    celsius: float


class PartialWeather(typing.TypedDict, total=False):
    city: str
    celsius: float


class ExtWeather(typing_extensions.TypedDict):
    city: str
    wind: typing_extensions.NotRequired[int]


@dataclasses.dataclass
class Pair:
    left: int
    right: str = "r"


def _input(fn: Any) -> dict[str, Any]:
    schema: dict[str, Any] = Tool(fn).input_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _output(annotation: Any) -> dict[str, Any] | None:
    spec = output_spec(annotation)
    if spec is None:
        return None
    jsonschema.Draft202012Validator.check_schema(spec.schema)
    return spec.schema


# -- input schemas ----------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#tool")
def test_required_and_optional_parameters() -> None:
    def search(query: str, limit: int = 10, exact: bool | None = None) -> str:
        return query

    schema = _input(search)
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"] == {"type": "string"}
    assert schema["properties"]["limit"] == {"type": "integer", "default": 10}
    assert "exact" in schema["properties"]
    assert "title" not in schema
    assert "title" not in schema["properties"]["query"]


@pytest.mark.spec("2025-11-25/server/tools#tool")
def test_extra_arguments_are_forbidden() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    assert _input(add)["additionalProperties"] is False


@pytest.mark.spec("2025-11-25/server/tools#tool-with-no-parameters")
def test_no_parameters_is_an_empty_closed_object() -> None:
    def now() -> str:
        return "now"

    assert _input(now) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_annotated_field_descriptions_and_constraints() -> None:
    def roll(
        sides: Annotated[int, Field(description="Faces of the die", ge=2, le=100)],
        label: str = Field("d", description="A label"),
        mode: Literal["sum", "max"] = "sum",
    ) -> int:
        return sides

    props = _input(roll)["properties"]
    assert props["sides"] == {"type": "integer", "description": "Faces of the die", "minimum": 2, "maximum": 100}
    assert props["label"]["description"] == "A label"
    assert props["label"]["default"] == "d"
    assert props["mode"]["enum"] == ["sum", "max"]


def test_nested_models_keep_defs_and_refs() -> None:
    def draw(shape: Polygon, origin: Point | None = None) -> str:
        return shape.name

    schema = _input(draw)
    assert set(schema["$defs"]) == {"Point", "Polygon"}
    assert schema["properties"]["shape"] == {"$ref": "#/$defs/Polygon"}
    assert schema["$defs"]["Polygon"]["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}
    # the refs resolve: a valid value passes and a bad one fails against the emitted schema
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"shape": {"name": "tri", "points": [{"x": 1, "y": 2}]}})
    assert not validator.is_valid({"shape": {"name": "tri", "points": [{"x": "a", "y": 2}]}})


def test_context_parameter_is_excluded() -> None:
    async def with_ctx(text: str, ctx: Context) -> str:
        return text

    async def optional_ctx(ctx: Context | None = None, *, n: int = 1) -> int:
        return n

    assert set(_input(with_ctx)["properties"]) == {"text"}
    assert _input(with_ctx)["required"] == ["text"]
    assert set(_input(optional_ctx)["properties"]) == {"n"}
    assert context_parameter(with_ctx, resolve_hints(with_ctx)) == "ctx"
    assert context_parameter(optional_ctx, resolve_hints(optional_ctx)) == "ctx"


def test_context_parameter_may_have_any_name() -> None:
    async def tool(request_context: Context, a: int) -> int:
        return a

    assert context_parameter(tool, resolve_hints(tool)) == "request_context"
    assert set(_input(tool)["properties"]) == {"a"}


def test_typing_typeddict_parameter_is_accepted() -> None:
    def report(weather: Weather) -> str:
        return weather["city"]

    schema = _input(report)
    assert schema["properties"]["weather"] == {"$ref": "#/$defs/Weather"}
    assert schema["$defs"]["Weather"]["required"] == ["city", "celsius"]
    model = arguments_model(report, "report", resolve_hints(report), None)
    assert model.model_validate({"weather": {"city": "Oslo", "celsius": "1.5"}}).weather == {  # type: ignore[attr-defined]
        "city": "Oslo", "celsius": 1.5}


def test_unsupported_signatures_are_rejected() -> None:
    def star(*values: int) -> int:
        return 0

    def kw(**options: str) -> str:
        return ""

    def private(_hidden: int) -> int:
        return 0

    for fn in (star, kw, private):
        with pytest.raises(TypeError):
            Tool(fn)


def test_unannotated_parameter_accepts_anything() -> None:
    def echo(value):  # type: ignore[no-untyped-def]
        return value

    schema = _input(echo)
    assert schema["required"] == ["value"]
    assert schema["properties"]["value"] == {}


# -- output schemas ---------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#output-schema")
def test_typing_typeddict_output() -> None:
    assert typing.TypedDict.__module__ == "typing"
    schema = _output(Weather)
    assert schema is not None
    assert schema["type"] == "object"
    assert schema["properties"] == {"city": {"type": "string"}, "celsius": {"type": "number"}}
    assert schema["required"] == ["city", "celsius"]
    spec = output_spec(Weather)
    assert spec is not None
    assert not spec.wrapped
    assert spec.dump({"city": "Oslo", "celsius": 1.5}) == {"city": "Oslo", "celsius": 1.5}


def test_typeddict_optional_keys_stay_optional() -> None:
    partial = _output(PartialWeather)
    assert partial is not None
    assert "required" not in partial
    ext = _output(ExtWeather)
    assert ext is not None
    assert ext["required"] == ["city"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the rebuild only happens before Python 3.12")
def test_typeddict_compat_rebuilds_typing_typeddicts() -> None:
    rebuilt = typeddict_compat(Weather)
    assert rebuilt is not Weather
    assert rebuilt is typeddict_compat(Weather)  # cached
    assert rebuilt.__doc__ == Weather.__doc__
    assert typing.get_args(typeddict_compat(list[Weather])) == (rebuilt,)
    assert typeddict_compat(ExtWeather) is ExtWeather


@pytest.mark.spec("2025-11-25/server/tools#output-schema")
def test_basemodel_output_keeps_defs() -> None:
    schema = _output(Polygon)
    assert schema is not None
    assert schema["type"] == "object"
    assert schema["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}
    assert "Point" in schema["$defs"]
    assert "title" not in schema


def test_dataclass_output() -> None:
    schema = _output(Pair)
    assert schema is not None
    assert schema["type"] == "object"
    assert schema["required"] == ["left"]
    spec = output_spec(Pair)
    assert spec is not None
    assert spec.dump(Pair(1)) == {"left": 1, "right": "r"}


def test_dict_output_is_an_object() -> None:
    spec = output_spec(dict[str, int])
    assert spec is not None
    assert not spec.wrapped
    assert spec.schema == {"type": "object", "additionalProperties": {"type": "integer"}}


@pytest.mark.spec("2025-11-25/server/tools#structured-content")
@pytest.mark.parametrize(
    ("annotation", "inner", "value"),
    [
        (int, {"type": "integer"}, 3),
        (float, {"type": "number"}, 2.5),
        (bool, {"type": "boolean"}, True),
        (list[str], {"type": "array", "items": {"type": "string"}}, ["a"]),
        (dict[int, str], {"type": "object", "additionalProperties": {"type": "string"}}, {1: "a"}),
    ],
)
def test_primitives_are_wrapped_in_result(annotation: Any, inner: dict[str, Any], value: Any) -> None:
    spec = output_spec(annotation)
    assert spec is not None
    assert spec.wrapped
    assert spec.schema == {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    dumped = spec.dump(value)
    assert set(dumped) == {"result"}
    jsonschema.validate(dumped, spec.schema)


def test_wrapped_list_of_models_hoists_defs_to_the_root() -> None:
    spec = output_spec(list[Point])
    assert spec is not None
    assert spec.wrapped
    assert spec.schema["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Point"}}
    assert "Point" in spec.schema["$defs"]
    dumped = spec.dump([Point(x=1, y=2)])
    assert dumped == {"result": [{"x": 1, "y": 2}]}
    jsonschema.validate(dumped, spec.schema)


@pytest.mark.parametrize(
    "annotation",
    [str, bytes, None, type(None), Any, Image, ResourceLink, list[Image], Image | str],
)
def test_no_output_schema_for_unstructured_results(annotation: Any) -> None:
    assert output_spec(annotation) is None


def test_no_output_schema_without_return_annotation() -> None:
    def plain(a: int):  # type: ignore[no-untyped-def]
        return a

    def text(a: int) -> str:
        return str(a)

    assert Tool(plain).output_schema is None
    assert Tool(text).output_schema is None


def test_structured_output_flag() -> None:
    def count(a: int) -> int:
        return a

    def text(a: int) -> str:
        return str(a)

    assert Tool(count, structured_output=False).output_schema is None
    with pytest.raises(ValueError, match="structured_output"):
        Tool(text, structured_output=True)


@pytest.mark.spec("2025-11-25/server/tools#output-schema")
def test_wrong_return_value_does_not_produce_nonconforming_output() -> None:
    spec = output_spec(int)
    assert spec is not None
    with pytest.raises(ValidationError):
        spec.dump("not a number")
    spec = output_spec(Weather)
    assert spec is not None
    with pytest.raises(ValidationError):
        spec.dump({"city": "Oslo"})


# -- helpers ----------------------------------------------------------------------------------------


def test_validation_message_names_the_fields() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    model = arguments_model(add, "add", resolve_hints(add), None)
    with pytest.raises(ValidationError) as info:
        model.model_validate({"a": "x", "c": 1})
    message = validation_message(info.value)
    assert "a: Input should be a valid integer" in message
    assert "b: Field required" in message
    assert "c: Extra inputs are not permitted" in message


def test_schema_checker_defaults_to_2020_12_and_reports_paths() -> None:
    checker = SchemaChecker({
        "type": "object",
        "properties": {"tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}},
        "required": ["tags"],
    })
    assert checker.errors({"tags": ["a"]}) is None
    problem = checker.errors({"tags": [1]})
    assert problem is not None
    assert problem.startswith("tags.0: ")
    problem = checker.errors({})
    assert problem is not None
    assert problem.startswith("arguments: ")
    assert "'tags' is a required property" in problem


def test_schema_checker_honours_an_explicit_dialect() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}}}
    checker = SchemaChecker(draft7)
    assert checker.errors({"n": 1}) is None
    assert checker.errors({"n": 0}) is not None


def test_schema_checker_rejects_an_invalid_schema() -> None:
    with pytest.raises(jsonschema.SchemaError):
        SchemaChecker({"type": "object", "properties": {"a": {"type": 5}}})


# -- elicitation ------------------------------------------------------------------------------------------------
@pytest.mark.spec("2025-11-25/client/elicitation#requested-schema")
def test_a_model_becomes_a_flat_requested_schema() -> None:
    assert elicitation_schema(Person) == {  # no $ref, no $defs: elicitation forbids them
        "type": "object", "required": ["name", "age", "home"], "properties": {
            "name": {"type": "string"}, "age": {"type": "integer"},
            "home": {"type": "object", "required": ["street"], "properties": {
                "street": {"type": "string"}, "city": {"default": "Paris", "type": "string"}}}}}
