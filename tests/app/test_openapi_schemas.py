"""``wiremcp.openapi_schemas``: an OpenAPI document's schemas as JSON Schema 2020-12: a schema a ``$ref`` names
kept once in ``$defs`` (inlined where used once and not recursive), 3.0's keywords turned into JSON Schema's."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from wiremcp.openapi_schemas import DocumentError, Schemas


def schemas(components: dict[str, Any], *, v30: bool = False) -> Schemas:
    return Schemas({"openapi": "3.0.3" if v30 else "3.1.0", "components": {"schemas": components}}, v30=v30)


def test_a_ref_is_a_ref_into_defs_and_root_inlines_the_top_one_with_its_siblings() -> None:
    found = schemas({"Pet": {"type": "object", "properties": {"tag": {"$ref": "#/components/schemas/Tag"}}},
                     "Tag": {"type": "string", "x-internal": True}})
    defs: dict[str, Any] = {}
    given = {"$ref": "#/components/schemas/Pet", "description": "a pet"}
    assert found.schema(given, "here", defs) == {"$ref": "#/$defs/Pet", "description": "a pet"}
    assert defs == {"Pet": {"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}}},
                    "Tag": {"type": "string"}}
    defs = {}
    out = found.root(given, "here", defs)
    assert out == {"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}}, "description": "a pet"}
    assert Schemas.finish(out, defs) == \
        {"type": "object", "properties": {"tag": {"type": "string"}}, "description": "a pet"}


def test_a_component_used_n_times_is_in_defs_once() -> None:
    tag = {"type": "object", "description": "A label", "properties": {"name": {"type": "string", "maxLength": 9}}}
    found = schemas({"Tag": tag, "Pet": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
        "main": {"$ref": "#/components/schemas/Tag"}, "old": {"$ref": "#/components/schemas/Tag"}}}})
    defs: dict[str, Any] = {}
    schema = found.schema({"type": "object", "properties": {
        "pet": {"$ref": "#/components/schemas/Pet"}, "extra": {"$ref": "#/components/schemas/Tag"}}}, "here", defs)
    out = Schemas.finish(schema, defs)
    assert out["$defs"] == {"Tag": tag}  # Pet, used once, is inlined; Tag, used four times, is there once
    assert out["properties"]["pet"]["properties"]["main"] == {"$ref": "#/$defs/Tag"}
    assert str(out).count("maxLength") == 1
    checker = jsonschema.Draft202012Validator(out)
    assert checker.is_valid({"pet": {"tags": [{"name": "a"}], "main": {"name": "b"}}, "extra": {}})
    assert not checker.is_valid({"pet": {"tags": [{"name": "much too long"}]}})


def test_schemas_that_refer_back_to_each_other_stay_refs_into_defs() -> None:
    found = schemas({
        "Person": {"type": "object", "properties": {"employer": {"$ref": "#/components/schemas/Company"},
                                                    "name": {"$ref": "#/components/schemas/Name"}}},
        "Company": {"type": "object", "properties": {"staff": {"type": "array",
                                                               "items": {"$ref": "#/components/schemas/Person"}}}},
        "Name": {"type": "string"}})
    defs: dict[str, Any] = {}
    out = Schemas.finish(found.schema({"type": "array", "items": {"$ref": "#/components/schemas/Person"}}, "here",
                                      defs), defs)
    assert out == {"type": "array", "items": {"$ref": "#/$defs/Person"}, "$defs": {
        "Person": {"type": "object", "properties": {"employer": {"$ref": "#/$defs/Company"}, "name": {"type": "string"}}},
        "Company": {"type": "object", "properties": {"staff": {"type": "array", "items": {"$ref": "#/$defs/Person"}}}}}}
    checker = jsonschema.Draft202012Validator(out)
    assert checker.is_valid([{"name": "Ann", "employer": {"staff": [{"name": "Bo"}]}}])
    assert not checker.is_valid([{"employer": {"staff": [{"name": 3}]}}])


def test_defs_names_are_sanitized_and_kept_apart() -> None:
    found = schemas({"A thing": {"type": "string"}, "A_thing": {"type": "integer"}})
    defs: dict[str, Any] = {}
    out = found.schema({"anyOf": [{"$ref": "#/components/schemas/A thing"}, {"$ref": "#/components/schemas/A_thing"}]},
                       "here", defs)
    assert out == {"anyOf": [{"$ref": "#/$defs/A_thing"}, {"$ref": "#/$defs/A_thing_2"}]}
    assert defs == {"A_thing": {"type": "string"}, "A_thing_2": {"type": "integer"}}


def test_values_are_not_read_as_schemas() -> None:
    found = schemas({})
    given = {"type": "object", "default": {"$ref": "not a ref"}, "enum": [{"$ref": "#/nowhere"}]}
    assert found.schema(given, "here", {}) == given


def test_30_keywords_become_json_schema() -> None:
    found = schemas({"Thing": {"type": "string"}, "Bound": {"type": "integer", "maximum": 5, "exclusiveMaximum": True,
                                                            "nullable": True}}, v30=True)

    def converted(schema: dict[str, Any]) -> Any:
        return found.schema(schema, "here", {})

    assert converted({"type": "number", "minimum": 0, "exclusiveMinimum": True, "example": 3}) == \
        {"type": "number", "exclusiveMinimum": 0}
    assert converted({"type": "number", "maximum": 9, "exclusiveMaximum": False}) == {"type": "number", "maximum": 9}
    assert converted({"type": "string", "enum": ["red"], "nullable": True}) == \
        {"type": ["string", "null"], "enum": ["red", None]}
    assert converted({"allOf": [{"$ref": "#/components/schemas/Thing"}], "nullable": True}) == \
        {"anyOf": [{"allOf": [{"$ref": "#/$defs/Thing"}]}, {"type": "null"}]}
    defs: dict[str, Any] = {}  # and inside the definitions a ref names
    assert found.schema({"$ref": "#/components/schemas/Bound"}, "here", defs) == {"$ref": "#/$defs/Bound"}
    assert defs == {"Bound": {"type": ["integer", "null"], "exclusiveMaximum": 5}}
    assert converted({"type": "object", "discriminator": {"propertyName": "kind"}, "xml": {}}) == {"type": "object"}


def test_31_keeps_what_is_json_schema_already() -> None:
    given = {"type": ["string", "null"], "examples": ["a"], "exclusiveMinimum": 1}
    assert schemas({}).schema(given, "here", {}) == given


def test_refs_between_other_objects_are_followed_and_a_loop_is_an_error() -> None:
    found = Schemas({"components": {"parameters": {"A": {"$ref": "#/components/parameters/B"},
                                                   "B": {"name": "q", "in": "query"},
                                                   "C": {"$ref": "#/components/parameters/C"}}}}, v30=False)
    assert found.deref({"$ref": "#/components/parameters/A"}, "GET /x") == {"name": "q", "in": "query"}
    with pytest.raises(DocumentError, match="GET /x: \\$ref '#/components/parameters/C' refers to itself"):
        found.deref({"$ref": "#/components/parameters/C"}, "GET /x")


def test_json_pointers_are_unescaped() -> None:
    found = Schemas({"paths": {"/a/b": {"x": 1}}, "list": [{"y": 2}]}, v30=False)
    assert found.target("#/paths/~1a~1b", "here") == {"x": 1}
    assert found.target("#/list/0", "here") == {"y": 2}
    with pytest.raises(DocumentError, match="points at nothing"):
        found.target("#/list/1", "here")
