"""An OpenAPI document (3.0 or 3.1) read as tools: one ``Operation`` per operation, with the tool's name, input and
output schemas, and where each argument goes in the request. Reading the document is all this module does (no
I/O): ``wiremcp.transports.openapi`` calls the API.

- **Names**: the ``operationId``, else the method and the path (``get_pets_petId``), with every run of characters
  a tool name may not have (outside ``A-Za-z0-9_.-``) as ``_``, cut to 128; a name taken already gets ``_2``, ``_3``.
- **Arguments**: the path, query, header and cookie parameters (the operation's over its path's), then the JSON
  request body: an object body with ``properties`` is spread (each property an argument), any other is one
  argument ``body``. A name taken by an earlier argument (in that order) gets its location as a suffix
  (``id_query``, ``id_header``, ``id_body``).
- **Output**: the schema of the first 2xx response with JSON content; one that is not an object travels as
  ``{"result": value}``.
- **Schemas**: as JSON Schema 2020-12 (``wiremcp.openapi_schemas``: a schema a ``$ref`` names is in the tool
  schema's ``$defs`` once, or inlined where it is used only once and does not refer back to itself; 3.0's
  ``nullable`` as a ``null`` type).

A document that cannot be read so raises ``DocumentError``, one line naming what is wrong and where.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wiremcp.openapi_schemas import NOT_IN_NAMES, DocumentError, Schemas
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.openapi")

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
LOCATIONS = ("path", "query", "header", "cookie")
FILTERS = ("tags", "paths", "operations")
"""What ``include=``/``exclude=`` select by: shell-style patterns over tags, path templates, operation ids or names."""
MAX_NAME = 128
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})  # the spec: such parameters are ignored


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a tool: its ``name`` in the tool's input, where it goes (``path``, ``query``, ``header``,
    ``cookie``, ``body``: a property of the body, ``payload``: the whole body) and its name there (``wire``)."""

    name: str
    location: str
    wire: str
    explode: bool = True
    """A list in the query as the key repeated (``explode``, the default), or as one comma-separated value."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the document, as a tool."""

    name: str
    method: str
    """Upper case: ``GET``."""
    path: str
    """The path template as the document writes it: ``/pets/{petId}``."""
    operation_id: str | None
    tags: tuple[str, ...]
    description: str | None
    input_schema: JSONObject
    output_schema: JSONObject | None
    wrapped: bool
    """The answer is not an object: it travels as ``{"result": value}``."""
    arguments: tuple[Argument, ...]
    body_media: str | None
    """The request body's media type (``application/json``, or form fields), None without one."""
    annotations: JSONObject


def check_filters(given: Any, what: str) -> dict[str, tuple[str, ...]]:
    """``include=`` or ``exclude=`` as given: a mapping of ``tags``, ``paths`` and ``operations`` to patterns."""
    if given is None:
        return {}
    if not isinstance(given, Mapping) or not all(k in FILTERS for k in given):
        raise DocumentError(f"{what}= takes a mapping of {', '.join(FILTERS)} to lists of patterns, "
                            f"e.g. {{'tags': ['pets']}}, not {given!r}")
    out: dict[str, tuple[str, ...]] = {}
    for key, patterns in given.items():
        if isinstance(patterns, str) or not isinstance(patterns, Sequence) \
                or not all(isinstance(p, str) for p in patterns):
            raise DocumentError(f"{what}={{{key!r}: ...}} takes a list of patterns, not {patterns!r}")
        out[key] = tuple(patterns)
    return out


def operations(document: Any, *, include: Any = None, exclude: Any = None) -> list[Operation]:
    """Every operation of ``document`` that ``include`` selects (all, without it) and ``exclude`` does not."""
    chosen, left_out = check_filters(include, "include"), check_filters(exclude, "exclude")
    reader = _Reader(document)
    found: list[Operation] = []
    names: set[str] = set()
    for path, method, described, shared in reader.walk():
        where = f"{method.upper()} {path}"
        op_id = described.get("operationId")
        if op_id is not None and not isinstance(op_id, str):
            raise DocumentError(f"{where}: its operationId must be a string, not {op_id!r}")
        tags = described.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise DocumentError(f"{where}: its tags must be a list of strings, not {tags!r}")
        name = _unique(_tool_name(op_id or "_".join([method, *re.findall(r"[^/{}]+", path)])), names)
        keys = {"tags": tags, "paths": [path], "operations": [x for x in (op_id, name) if x]}
        if (chosen and not _matches(chosen, keys)) or _matches(left_out, keys):
            continue
        made = reader.operation(name, method, path, described, shared, tags, where)
        if made is not None:
            names.add(name)
            found.append(made)
    return found


def _matches(filters: Mapping[str, tuple[str, ...]], keys: Mapping[str, list[str]]) -> bool:
    return any(fnmatch.fnmatchcase(value, pattern) for kind, patterns in filters.items()
               for pattern in patterns for value in keys[kind])


def _tool_name(raw: str) -> str:
    return NOT_IN_NAMES.sub("_", raw).strip("_")[:MAX_NAME] or "operation"


def _unique(name: str, taken: set[str]) -> str:
    made, n = name, 1
    while made in taken:
        n += 1
        made = f"{name[:MAX_NAME - len(str(n)) - 1]}_{n}"
    return made


def _description(described: Mapping[str, Any]) -> str | None:
    parts = [str(described[k]).strip() for k in ("summary", "description") if isinstance(described.get(k), str)]
    parts = [p for i, p in enumerate(parts) if p and p not in parts[:i]]
    return "\n\n".join(parts) or None


def _annotations(method: str) -> JSONObject:
    if method in ("get", "head", "options"):
        return {"readOnlyHint": True}
    if method == "delete":
        return {"destructiveHint": True, "idempotentHint": True}
    return {"idempotentHint": True} if method == "put" else {}


def _json_media(content: Any) -> tuple[str, Any] | None:
    """The JSON media type of a ``content`` object and its media object (form fields second best)."""
    if not isinstance(content, Mapping):
        return None
    kinds = [str(k) for k in content]
    for media in kinds:
        base = media.split(";")[0].strip().lower()
        if base == "application/json" or base.endswith("+json"):
            return media, content[media]
    for media in kinds:
        if media.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            return media, content[media]
    return None


class _Reader(Schemas):
    """The document, its operations read."""

    def __init__(self, document: Any) -> None:
        if not isinstance(document, Mapping):
            raise DocumentError(f"it must be a JSON object, not {type(document).__name__}")
        version = document.get("openapi")
        if not isinstance(version, str) or not re.match(r"3\.[01]\.\d", version):
            if "swagger" in document:
                raise DocumentError(f"Swagger {document.get('swagger')} is not read: give an OpenAPI 3.0 or 3.1 "
                                    "document (convert it first)")
            raise DocumentError(f"its 'openapi' version is {version!r}: an OpenAPI 3.0.x or 3.1.x document is read")
        super().__init__(document, v30=version.startswith("3.0."))

    def walk(self) -> Iterator[tuple[str, str, Mapping[str, Any], list[Any]]]:
        paths = self.document.get("paths", {})
        if not isinstance(paths, Mapping):
            raise DocumentError(f"its 'paths' must be an object, not {type(paths).__name__}")
        for path, item in paths.items():
            if not isinstance(path, str) or not path.startswith("/"):
                raise DocumentError(f"path {path!r}: a path must start with /")
            item = self.deref(item, path)
            if not isinstance(item, Mapping):
                raise DocumentError(f"path {path}: its path item must be an object")
            shared = item.get("parameters") or []
            for method in METHODS:
                described = item.get(method)
                if described is None:
                    continue
                if not isinstance(described, Mapping):
                    raise DocumentError(f"{method.upper()} {path}: an operation must be an object")
                yield path, method, described, shared

    # -- operations ------------------------------------------------------------------------------------
    def operation(self, name: str, method: str, path: str, described: Mapping[str, Any], shared: Any,
                  tags: list[str], where: str) -> Operation | None:
        defs: dict[str, Any] = {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        arguments: list[Argument] = []

        def add(wanted: str, location: str, wire: str, schema: Any, needed: bool, explode: bool = True) -> None:
            suffix = "body" if location == "payload" else location
            name = wanted if wanted not in properties else _unique(f"{wanted}_{suffix}", set(properties))
            properties[name] = schema
            arguments.append(Argument(name, location, wire, explode))
            if needed:
                required.append(name)

        for param in self._parameters(shared, described.get("parameters"), where):
            add(param["name"], param["in"], param["name"], self._parameter_schema(param, where, defs),
                param["in"] == "path" or param.get("required") is True,
                param.get("explode", param.get("style", "form") == "form") is not False)
        missing = [v for v in re.findall(r"{([^}]+)}", path) if ("path", v) not in
                   {(a.location, a.wire) for a in arguments}]
        if missing:
            raise DocumentError(f"{where}: the path's {{{missing[0]}}} has no path parameter")
        media = self._body(described.get("requestBody"), where, defs, add)
        if media is False:
            log.warning("OpenAPI operation %s (%s) not served: its request body is neither JSON nor form fields",
                        name, where)
            return None
        input_schema: JSONObject = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        input_schema = self.finish(input_schema, defs)
        kept = input_schema.get("$defs", {})
        for prop, spec in input_schema["properties"].items():  # a ref's description, for the reader and search
            named = kept.get(spec["$ref"].removeprefix("#/$defs/")) \
                if isinstance(spec, dict) and isinstance(spec.get("$ref"), str) else None
            if isinstance(named, dict) and isinstance(named.get("description"), str) and "description" not in spec:
                input_schema["properties"][prop] = {**spec, "description": named["description"]}
        output, wrapped = self._output(described.get("responses"), where)
        return Operation(name, method.upper(), path, described.get("operationId"), tuple(tags),
                         _description(described), input_schema, output, wrapped, tuple(arguments),
                         media if isinstance(media, str) and media else None, _annotations(method))

    def _parameters(self, shared: Any, own: Any, where: str) -> list[Mapping[str, Any]]:
        found: dict[tuple[str, str], Mapping[str, Any]] = {}
        for given in (shared, own or []):
            if not isinstance(given, list):
                raise DocumentError(f"{where}: its parameters must be a list")
            for param in given:
                param = self.deref(param, where)
                if not isinstance(param, Mapping) or not isinstance(param.get("name"), str) \
                        or param.get("in") not in LOCATIONS:
                    raise DocumentError(f"{where}: a parameter needs a name and an 'in' of {', '.join(LOCATIONS)}: "
                                        f"{param!r}"[:300])
                if param["in"] == "header" and param["name"].lower() in _IGNORED_HEADERS:
                    continue
                found[(param["name"], param["in"])] = param
        return sorted(found.values(), key=lambda p: LOCATIONS.index(p["in"]))

    def _parameter_schema(self, param: Mapping[str, Any], where: str, defs: dict[str, Any]) -> Any:
        given = param.get("schema")
        if given is None:
            media = _json_media(param.get("content"))
            given = media[1].get("schema") if media is not None and isinstance(media[1], Mapping) else None
        schema = self.schema(given if given is not None else {}, f"{where} parameter {param['name']}", defs)
        if isinstance(schema, dict) and isinstance(param.get("description"), str) and "description" not in schema:
            schema = {**schema, "description": param["description"]}
        return schema

    def _body(self, given: Any, where: str, defs: dict[str, Any], add: Any) -> str | bool:
        """The body's arguments added; its media type ('' without a body, False when none can be sent)."""
        body = self.deref(given, where)
        if body is None:
            return ""
        if not isinstance(body, Mapping):
            raise DocumentError(f"{where}: its requestBody must be an object")
        found = _json_media(body.get("content"))
        needed = body.get("required") is True
        if found is None:
            return False if needed else ""
        media, described = found
        raw = described.get("schema", {}) if isinstance(described, Mapping) else {}
        schema = self.root(raw, f"{where} requestBody", defs, recursive=False)
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(schema, dict) and schema.get("type") == "object" and isinstance(props, dict) and props \
                and not any(k in schema for k in ("allOf", "anyOf", "oneOf", "$ref")):
            inner = schema.get("required") or []
            for prop, prop_schema in props.items():
                add(prop, "body", prop, prop_schema, needed and prop in inner)
        else:
            add("body", "payload", "", schema, needed)
        return media

    def _output(self, responses: Any, where: str) -> tuple[JSONObject | None, bool]:
        if not isinstance(responses, Mapping):
            return None, False
        codes = sorted(str(c) for c in responses if re.fullmatch(r"2\d\d", str(c)))
        codes += [str(c) for c in responses if str(c).upper() == "2XX"]
        for code in codes:
            response = self.deref(responses.get(code, responses.get(int(code)) if code.isdigit() else None), where)
            found = _json_media(response.get("content")) if isinstance(response, Mapping) else None
            if found is None or not isinstance(found[1], Mapping) or "schema" not in found[1]:
                continue
            defs: dict[str, Any] = {}
            schema = self.root(found[1]["schema"], f"{where} response {code}", defs)
            if isinstance(schema, dict) and schema.get("type") == "object":
                out: JSONObject = dict(schema)
                wrapped = False
            else:
                out, wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True
            return self.finish(out, defs), wrapped
        return None, False
