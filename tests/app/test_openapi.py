"""``wiremcp.openapi``: an OpenAPI document read as tools (names, arguments, schemas, filters), and the one-line
errors of documents that cannot be."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from tests.support.petstore import TREE, TREE_DOCUMENT
from wiremcp.openapi import Argument, operations
from wiremcp.openapi_schemas import DocumentError


def document(paths: dict[str, Any], version: str = "3.1.0", **more: Any) -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "T", "version": "1"}, "paths": paths, **more}


def ok(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema or {"type": "object"}}}}}


def test_a_30_document_with_nullable_and_a_recursive_ref() -> None:
    (op,) = operations(TREE_DOCUMENT)
    assert (op.name, op.method, op.path, op.description) == ("getTree", "GET", "/tree", "The tree")
    assert op.input_schema == {"type": "object", "properties": {"depth": {"type": ["integer", "null"]}}}
    node = {"type": "object", "required": ["name", "children"], "properties": {
        "name": {"type": "string"}, "note": {"type": ["string", "null"]},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
    assert op.output_schema == {**node, "$defs": {"Node": node}}
    assert not op.wrapped
    assert op.output_schema is not None
    checker = jsonschema.Draft202012Validator(op.output_schema)
    assert not list(checker.iter_errors(TREE))
    bad = {"name": "root", "children": [{"name": 1, "children": []}]}
    assert list(checker.iter_errors(bad))
    assert op.annotations == {"readOnlyHint": True}


def test_a_recursive_body_stays_one_argument_with_its_defs() -> None:
    doc = copy.deepcopy(TREE_DOCUMENT)
    doc["paths"] = {"/tree": {"put": {"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}, "responses": ok()}}}
    (op,) = operations(doc)
    assert op.name == "put_tree"
    assert op.input_schema["properties"] == {"body": {"$ref": "#/$defs/Node"}}
    assert op.input_schema["required"] == ["body"]
    assert "Node" in op.input_schema["$defs"]
    assert op.arguments == (Argument("body", "payload", ""),)
    assert op.annotations == {"idempotentHint": True}
    jsonschema.Draft202012Validator.check_schema(op.input_schema)


def test_31_type_arrays_are_kept_and_refs_inlined() -> None:
    doc = document({"/pets/{id}": {"get": {
        "operationId": "get pet!", "parameters": [{"name": "id", "in": "path", "schema": {"type": "integer"},
                                                  "description": "the pet"}],
        "responses": ok({"$ref": "#/components/schemas/Pet"})}}},
        components={"schemas": {"Pet": {"type": "object", "properties": {"tag": {"type": ["string", "null"]}},
                                        "x-internal": True}}})
    (op,) = operations(doc)
    assert op.name == "get_pet"
    assert op.input_schema == {"type": "object", "properties": {"id": {"type": "integer", "description": "the pet"}},
                               "required": ["id"]}
    assert op.output_schema == {"type": "object", "properties": {"tag": {"type": ["string", "null"]}}}
    assert not op.wrapped


def test_a_component_referenced_n_times_is_in_each_tool_schema_once() -> None:
    user = {"type": "object", "description": "Someone", "required": ["id"],
            "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
    ref = {"$ref": "#/components/schemas/User"}
    doc = document({"/tasks": {"post": {
        "parameters": [{"name": "by", "in": "query", "schema": {"$ref": "#/components/schemas/Id"}}],
        "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewTask"}}}},
        "responses": ok({"$ref": "#/components/schemas/Task"})}}}, components={"schemas": {
            "User": user, "Id": {"type": "string", "minLength": 3},
            "NewTask": {"type": "object", "properties": {"owner": ref, "followers": {"type": "array", "items": ref}}},
            "Task": {"type": "object", "properties": {"owner": ref, "creator": ref, "assignee": ref,
                                                      "followers": {"type": "array", "items": ref}}}}})
    (op,) = operations(doc)
    assert op.output_schema is not None
    assert op.output_schema["$defs"] == {"User": user}  # four refs, one definition
    assert op.output_schema["properties"]["assignee"] == {"$ref": "#/$defs/User"}
    assert str(op.output_schema).count("Someone") == 1
    assert op.input_schema == {"type": "object", "properties": {  # Id, used once, is inlined
        "by": {"type": "string", "minLength": 3},
        "owner": {"$ref": "#/$defs/User", "description": "Someone"},  # its description, for search and the reader
        "followers": {"type": "array", "items": {"$ref": "#/$defs/User"}}}, "$defs": {"User": user}}
    arguments = jsonschema.Draft202012Validator(op.input_schema)
    assert arguments.is_valid({"by": "ann", "owner": {"id": "1"}, "followers": [{"id": "2"}]})
    assert not arguments.is_valid({"followers": [{"name": "no id"}]})
    assert not arguments.is_valid({"by": "a"})
    output = jsonschema.Draft202012Validator(op.output_schema)
    assert output.is_valid({"owner": {"id": "1"}, "creator": {"id": "2", "name": "Bo"}})
    assert not output.is_valid({"assignee": {"id": 3}})


def test_names_clashing_across_locations_get_their_location() -> None:
    doc = document({"/items/{id}": {
        "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
        "post": {"parameters": [{"name": "id", "in": "query", "schema": {"type": "string"}},
                                {"name": "id", "in": "header", "schema": {"type": "string"}},
                                {"name": "Authorization", "in": "header", "schema": {"type": "string"}}],
                 "requestBody": {"content": {"application/json": {"schema": {
                     "type": "object", "required": ["id"],
                     "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}}},
                 "responses": {"201": {"description": "made"}}}}})
    (op,) = operations(doc)
    assert [(a.name, a.location, a.wire) for a in op.arguments] == [
        ("id", "path", "id"), ("id_query", "query", "id"), ("id_header", "header", "id"),
        ("id_body", "body", "id"), ("name", "body", "name")]
    assert op.input_schema["required"] == ["id"]  # the body is optional, so are its properties
    assert op.output_schema is None
    assert op.body_media == "application/json"


def test_tool_names_are_sanitized_and_made_unique() -> None:
    doc = document({"/a/{x}": {"parameters": [{"name": "x", "in": "path"}], "get": {"responses": ok()},
                               "post": {"operationId": "get_a_x", "responses": ok()}}})
    assert [op.name for op in operations(doc)] == ["get_a_x", "get_a_x_2"]
    long = document({"/x": {"get": {"operationId": "o" * 300, "responses": ok()}}})
    assert len(operations(long)[0].name) == 128


def test_operations_are_chosen_by_tag_path_or_id() -> None:
    doc = document({
        "/pets": {"get": {"operationId": "listPets", "tags": ["pets"], "responses": ok()},
                  "post": {"operationId": "addPet", "tags": ["pets", "write"], "responses": ok()}},
        "/admin/users": {"get": {"operationId": "listUsers", "tags": ["admin"], "responses": ok()}}})

    def names(**filters: Any) -> list[str]:
        return [op.name for op in operations(doc, **filters)]

    assert names() == ["listPets", "addPet", "listUsers"]
    assert names(include={"tags": ["pets"]}) == ["listPets", "addPet"]
    assert names(exclude={"tags": ["write"], "paths": ["/admin/*"]}) == ["listPets"]
    assert names(include={"operations": ["list*"]}, exclude={"operations": ["listUsers"]}) == ["listPets"]
    with pytest.raises(DocumentError, match="include= takes a mapping of tags, paths, operations"):
        names(include={"tag": ["pets"]})
    with pytest.raises(DocumentError, match="takes a list of patterns"):
        names(exclude={"tags": "pets"})


def test_an_operation_whose_body_cannot_be_sent_is_left_out(caplog: pytest.LogCaptureFixture) -> None:
    doc = document({"/upload": {"post": {"operationId": "upload", "requestBody": {"required": True, "content": {
        "multipart/form-data": {"schema": {"type": "object"}}}}, "responses": ok()}}})
    assert operations(doc) == []
    assert "upload" in caplog.text


@pytest.mark.parametrize(("doc", "said"), [
    ([], "it must be a JSON object, not list"),
    ({"swagger": "2.0"}, "Swagger 2.0 is not read"),
    ({"openapi": "4.0.0"}, "its 'openapi' version is '4.0.0'"),
    (document({"pets": {}}), "path 'pets': a path must start with /"),
    (document({"/p/{id}": {"get": {"responses": ok()}}}), "GET /p/{id}: the path's {id} has no path parameter"),
    (document({"/p": {"get": {"parameters": [{"name": "q"}], "responses": ok()}}}), "a parameter needs a name"),
    (document({"/p": {"get": {"responses": ok({"$ref": "other.yaml#/Pet"})}}}), "is outside this document"),
    (document({"/p": {"get": {"responses": ok({"$ref": "#/components/schemas/Nope"})}}}), "points at nothing"),
    (document({"/p": {"$ref": "#/paths/~1p"}}), "refers to itself"),
    (document({"/p": {"get": {"operationId": 3, "responses": ok()}}}), "operationId must be a string"),
])
def test_a_document_that_cannot_be_read_is_one_line_naming_what(doc: Any, said: str) -> None:
    with pytest.raises(DocumentError) as raised:
        operations(doc)
    assert said in str(raised.value)
    assert "\n" not in str(raised.value)
