"""``x-mcp-header`` declarations: the rules a tool's input schema must follow, checked when it is registered.

Clients drop a tool whose declarations break the rules, so a server that let one through would
publish a tool nobody can call; registration refuses it instead, naming the tool and the reason.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from wiremcp import MCPServer, param_header
from wiremcp.header_params import KEYWORD, MAX_SAFE_INTEGER, HeaderParam, header_params
from wiremcp.tools import Tool

pytestmark = pytest.mark.spec("2026-07-28/server/tools#x-mcp-header")


def schema(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


def prop(name: Any, kind: Any = "string", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {KEYWORD: name, **extra}
    if kind is not None:
        out["type"] = kind
    return out


async def _any(**arguments: Any) -> str:
    return "ok"


def register(input_schema: dict[str, Any], name: str = "t") -> Tool:
    """Register a hand-written schema the way a server author would."""
    server = MCPServer("header-params")
    server.tool(name, input_schema=input_schema)(_any)
    return server.tools[name]


# -- the helper and what registration records -------------------------------------------------------------
def test_param_header_marks_a_typed_parameter_and_registration_records_it() -> None:
    server = MCPServer("header-params")

    @server.tool()
    def route(query: str, region: Annotated[str, param_header("Region")] = "eu",
              count: Annotated[int, param_header("Count"), Field(description="How many")] = 1,
              dry_run: Annotated[bool, param_header("Dry-Run")] = False) -> str:
        return query

    tool = server.tools["route"]
    properties = tool.input_schema["properties"]
    assert properties["region"] == {"default": "eu", "type": "string", KEYWORD: "Region"}
    assert properties["count"][KEYWORD] == "Count"
    assert properties["count"]["description"] == "How many"
    assert properties["dry_run"][KEYWORD] == "Dry-Run"
    assert KEYWORD not in properties["query"]
    assert tool.header_params == [HeaderParam(("region",), "Region", "string"),
                                  HeaderParam(("count",), "Count", "integer"),
                                  HeaderParam(("dry_run",), "Dry-Run", "boolean")]
    assert tool.to_wire()["inputSchema"]["properties"]["region"][KEYWORD] == "Region"  # listed as declared


def test_a_tool_without_declarations_has_no_header_params() -> None:
    assert register(schema({"a": {"type": "string"}})).header_params == []
    assert header_params({"type": "object"}, "t") == []


@pytest.mark.parametrize("kind", ["string", "integer", "boolean"])
def test_the_three_primitive_types_are_allowed(kind: str) -> None:
    assert register(schema({"p": prop("P", kind)})).header_params == [HeaderParam(("p",), "P", kind)]


def test_nested_object_properties_are_reachable() -> None:
    tool = register(schema({
        "target": schema({"zone": prop("Zone"), "deep": schema({"level": prop("Level", "integer")})}),
        "flag": prop("Flag", "boolean"),
    }))
    assert tool.header_params == [HeaderParam(("target", "zone"), "Zone", "string"),
                                  HeaderParam(("target", "deep", "level"), "Level", "integer"),
                                  HeaderParam(("flag",), "Flag", "boolean")]


@pytest.mark.parametrize("name", ["items", "properties", "anyOf", "$ref", "default", KEYWORD])
def test_a_property_may_have_the_name_of_a_keyword(name: str) -> None:
    """Inside ``properties`` the keys are parameter names, never keywords."""
    tool = register(schema({name: prop("H"), "other": {"type": "string"}}))
    assert tool.header_params == [HeaderParam((name,), "H", "string")]


@pytest.mark.parametrize("keyword", ["default", "const", "examples"])
def test_an_x_mcp_header_key_inside_a_value_is_data_not_a_declaration(keyword: str) -> None:
    value: Any = {KEYWORD: "Not-A-Declaration"}
    tool = register(schema({"options": {"type": "object", keyword: [value] if keyword == "examples" else value}}))
    assert tool.header_params == []


def test_header_param_value_reads_the_exact_property_path() -> None:
    param = HeaderParam(("target", "zone"), "Zone", "string")
    assert param.value({"target": {"zone": "z1"}}) == "z1"
    assert param.value({"target": {"zone": None}}) is None
    assert param.value({"target": {}}) is None
    assert param.value({}) is None
    assert param.value(None) is None
    assert param.value({"target": "not-an-object"}) is None
    assert param.value({"target": ["zone"]}) is None
    assert HeaderParam(("n",), "N", "integer").value({"n": 0}) == 0
    assert HeaderParam(("b",), "B", "boolean").value({"b": False}) is False


# -- the name: an HTTP token, no control characters, unique case-insensitively ----------------------------
@pytest.mark.parametrize("name", ["Region", "region", "X-Trace_Id.v2", "a", "0", "!#$%&'*+-.^_`|~",
                                  "A" * 200])
def test_http_token_names_are_allowed(name: str) -> None:
    assert register(schema({"p": prop(name)})).header_params[0].header == name


@pytest.mark.parametrize("name", [
    pytest.param("", id="empty"),
    pytest.param("Re gion", id="space"),
    pytest.param(" Region", id="leading-space"),
    pytest.param("a\tb", id="tab"),
    pytest.param("x\r\ny", id="crlf"),
    pytest.param("Region\r", id="cr"),
    pytest.param("Region\n", id="lf"),
    pytest.param("\nRegion", id="leading-lf"),
    pytest.param("nul\x00", id="nul"),
    pytest.param("del\x7f", id="del"),
    pytest.param("Région", id="non-ascii"),
    pytest.param("a:b", id="colon"),
    pytest.param("a/b", id="slash"),
    pytest.param("(x)", id="parens"),
    pytest.param("a,b", id="comma"),
    pytest.param('"q"', id="quotes"),
    pytest.param("a@b", id="at"),
    pytest.param("{x}", id="braces"),
    pytest.param("a=b", id="equals"),
    pytest.param(42, id="number"),
    pytest.param(None, id="null"),
    pytest.param(True, id="boolean"),
    pytest.param(["Region"], id="list"),
])
def test_names_that_are_not_http_tokens_are_refused(name: Any) -> None:
    with pytest.raises(ValueError, match=r"tool t: x-mcp-header .* is not an HTTP token"):
        register(schema({"p": prop(name)}))


@pytest.mark.parametrize(("first", "second"), [("Region", "Region"), ("Region", "region"), ("region", "REGION"),
                                               ("Dry-Run", "dry-run")])
def test_names_must_be_unique_case_insensitively(first: str, second: str) -> None:
    with pytest.raises(ValueError, match=r"declared twice \(case-insensitively\)"):
        register(schema({"a": prop(first), "b": prop(second)}))


def test_duplicates_are_found_across_nesting_levels() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        register(schema({"a": prop("Zone"), "b": schema({"c": prop("ZONE")})}))


def test_different_names_are_fine() -> None:
    assert [p.header for p in register(schema({"a": prop("A"), "b": prop("B-A")})).header_params] == ["A", "B-A"]


# -- the type: string, integer or boolean only --------------------------------------------------------------
@pytest.mark.parametrize("kind", [
    pytest.param("number", id="number"),
    pytest.param("object", id="object"),
    pytest.param("array", id="array"),
    pytest.param("null", id="null"),
    pytest.param(None, id="no-type"),
    pytest.param(["string", "null"], id="type-list"),
])
def test_other_types_are_refused(kind: Any) -> None:
    with pytest.raises(ValueError, match="needs type string, integer or boolean"):
        register(schema({"p": prop("P", kind)}))


def test_a_float_parameter_is_refused_when_written_as_a_function() -> None:
    server = MCPServer("header-params")
    with pytest.raises(ValueError, match=r"tool ratio: x-mcp-header 'Ratio' needs type string, integer or boolean"):
        @server.tool()
        def ratio(value: Annotated[float, param_header("Ratio")]) -> str:
            return str(value)
    assert "ratio" not in server.tools


def test_an_optional_parameter_is_refused_as_it_has_no_single_primitive_type() -> None:
    """``int | None`` becomes ``anyOf``: not one of the three types, so not a valid declaration."""
    server = MCPServer("header-params")
    with pytest.raises(ValueError, match="needs type string, integer or boolean"):
        @server.tool()
        def maybe(count: Annotated[int | None, param_header("Count")] = None) -> str:
            return str(count)


def test_the_safe_integer_limit_is_javascripts() -> None:
    assert MAX_SAFE_INTEGER == 2**53 - 1


# -- reachability: a chain of properties keys only -----------------------------------------------------------
UNREACHABLE = [
    pytest.param({"type": "object", KEYWORD: "Root"}, id="the-schema-root"),
    pytest.param(schema({"list": {"type": "array", "items": prop("Item")}}), id="items"),
    pytest.param(schema({"list": {"type": "array", "items": schema({"x": prop("Item")})}}), id="through-items"),
    pytest.param(schema({"list": {"type": "array", "prefixItems": [prop("First")]}}), id="prefix-items"),
    pytest.param(schema({"choice": {"anyOf": [prop("A"), {"type": "integer"}]}}), id="anyOf"),
    pytest.param(schema({"choice": {"oneOf": [schema({"x": prop("A")})]}}), id="through-oneOf"),
    pytest.param(schema({}, allOf=[schema({"x": prop("A")})]), id="allOf-at-the-root"),
    pytest.param(schema({"x": {"not": prop("A")}}), id="not"),
    pytest.param(schema({}, **{"if": schema({"x": prop("A")})}), id="if"),
    pytest.param(schema({}, then=schema({"x": prop("A")})), id="then"),
    pytest.param(schema({}, **{"else": schema({"x": prop("A")})}), id="else"),
    pytest.param(schema({"x": {"$ref": "#/$defs/zone"}}, **{"$defs": {"zone": prop("Zone")}}), id="$ref-to-$defs"),
    pytest.param(schema({}, additionalProperties=prop("Extra")), id="additionalProperties"),
    pytest.param(schema({}, patternProperties={"^x": prop("Pattern")}), id="patternProperties"),
    pytest.param(schema({"m": {"type": "object", "additionalProperties": prop("Value")}}), id="nested-map-values"),
    pytest.param(schema({}, dependentSchemas={"x": schema({"y": prop("Dep")})}), id="dependentSchemas"),
]


@pytest.mark.parametrize("input_schema", UNREACHABLE)
def test_a_declaration_not_reached_through_properties_only_is_refused(input_schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"tool t: x-mcp-header at .* is not reachable through 'properties' only"):
        register(input_schema)


class Target(BaseModel):
    zone: Annotated[str, param_header("Zone")]


def test_a_nested_pydantic_model_goes_through_ref_and_is_refused() -> None:
    server = MCPServer("header-params")
    with pytest.raises(ValueError, match=r"x-mcp-header at \$defs/Target/properties/zone is not reachable"):
        @server.tool()
        def deploy(target: Target) -> str:
            return target.zone


def test_a_refused_tool_is_not_registered_and_the_others_stay() -> None:
    server = MCPServer("header-params")
    server.tool("good", input_schema=schema({"a": prop("A")}))(_any)
    with pytest.raises(ValueError, match="not an HTTP token"):
        server.tool("bad", input_schema=schema({"a": prop("A B")}))(_any)
    assert list(server.tools) == ["good"]
