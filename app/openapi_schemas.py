"""An OpenAPI document's schemas as JSON Schema 2020-12, for tools' input and output schemas
(``wiremcp.openapi``).

- ``$ref``s: local ones (``#/...``, JSON pointers) only. A schema one names is converted once per tool schema and
  put in the ``defs`` the caller gives (to go at the root of the tool's schema, as ``$defs``), under its name
  (``#/components/schemas/Pet`` as ``Pet``; other characters than ``A-Za-z0-9_.-`` as ``_``, a name taken by
  another ref gets ``_2``); the ``$ref`` points at ``#/$defs/<Name>``. ``root`` inlines the ref at the top of a
  body or a response (an object body is spread into arguments), and ``finish`` inlines a definition used once
  and not recursive, so ``$defs`` holds the ones used twice or more, and those that refer back to themselves.
  A chain of ``$ref``s between other objects (parameters, request bodies, responses) is followed, and one that
  comes back to itself is a ``DocumentError``.
- OpenAPI 3.0: ``nullable: true`` adds ``null`` to the ``type`` (and to an ``enum``), or, without a ``type``,
  makes the schema ``anyOf`` it and ``null``; a boolean ``exclusiveMinimum``/``exclusiveMaximum`` becomes the
  number of its ``minimum``/``maximum``; ``nullable``, ``discriminator``, ``xml``, ``externalDocs`` and ``example``
  go. 3.1's schemas are JSON Schema already (its type arrays kept as they are).
- ``x-`` extensions are dropped in both.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote

NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_.-]+")
"""What a tool name (or a ``$defs`` key made here) may not have."""
_DROPPED_30 = frozenset({"nullable", "discriminator", "xml", "externalDocs", "example"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMAS = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
                      "unevaluatedItems", "unevaluatedProperties", "additionalItems"})


class DocumentError(ValueError):
    """The document cannot be read as tools: the message says what is wrong, and where."""


class Schemas:
    """The ``$ref``s and schemas of ``document`` (an OpenAPI 3.0 one when ``v30``)."""

    def __init__(self, document: Mapping[str, Any], *, v30: bool) -> None:
        self.document = document
        self.v30 = v30
        self._keys: dict[str, str] = {}

    # -- references --------------------------------------------------------------------------------------
    def target(self, ref: str, where: str) -> Any:
        if not ref.startswith("#"):
            raise DocumentError(f"{where}: $ref {ref!r} is outside this document (only local refs, #/..., are read)")
        node: Any = self.document
        for part in ref[2:].split("/") if ref != "#" else []:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise DocumentError(f"{where}: $ref {ref!r} points at nothing in the document")
        return node

    def deref(self, node: Any, where: str) -> Any:
        """``node`` (a parameter, a request body, a response, a path item) with its chain of ``$ref``s followed."""
        seen: set[str] = set()
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise DocumentError(f"{where}: $ref {ref!r} refers to itself")
            seen.add(ref)
            node = self.target(ref, where)
        return node

    # -- schemas ---------------------------------------------------------------------------------------
    def schema(self, node: Any, where: str, defs: dict[str, Any]) -> Any:
        """``node`` as JSON Schema 2020-12; the schemas its ``$ref``s name land in ``defs`` (converted once)."""
        if isinstance(node, list):
            return [self.schema(n, where, defs) for n in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            extra = self.schema(siblings, where, defs) if siblings else {}
            key = self._key(ref)
            if key not in defs:
                defs[key] = {}  # taken before it is made: the refs back to it stop here
                defs[key] = self.schema(self.target(ref, where), where, defs)
            return {"$ref": f"#/$defs/{key}", **extra}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key.startswith("x-") or (self.v30 and key in _DROPPED_30):
                continue
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {k: self.schema(v, where, defs) for k, v in value.items()}
            elif (key in _SCHEMA_LISTS and isinstance(value, list)) or key in _SCHEMAS:
                out[key] = self.schema(value, where, defs)
            else:
                out[key] = value
        return self._from_30(node, out) if self.v30 else out

    def root(self, node: Any, where: str, defs: dict[str, Any], *, recursive: bool = True) -> Any:
        """``schema``, with a ``$ref`` at the top (only there) inlined: the schema of a body or a response. One to
        a schema that refers back to itself stays a ``$ref`` unless ``recursive``."""
        out = self.schema(node, where, defs)
        seen: set[str] = set()
        while isinstance(out, dict) and isinstance(out.get("$ref"), str) and out["$ref"].startswith("#/$defs/"):
            key = out["$ref"].removeprefix("#/$defs/")
            if key in seen or (not recursive and _reaches(defs, key, key)):
                break
            seen.add(key)
            inlined = defs[key]
            extra = {k: v for k, v in out.items() if k != "$ref"}
            if not isinstance(inlined, dict):
                return inlined
            out = {**inlined, **extra}
        return out

    @staticmethod
    def finish(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with ``defs`` as its ``$defs``: those used once and not recursive inlined where used, the
        others kept, each once (the order they were met in)."""
        reached: list[str] = []
        todo = [key for key in _def_refs(schema) if key in defs]
        while todo:  # the definitions the schema uses, through any chain of them (others, left by root, go)
            key = todo.pop()
            if key not in reached:
                reached.append(key)
                todo.extend(k for k in _def_refs(defs[key]) if k in defs)
        uses = Counter([*_def_refs(schema), *(k for key in reached for k in _def_refs(defs[key]))])
        inline = {key for key in reached if uses[key] == 1 and not _reaches(defs, key, key)}

        def put(node: Any) -> Any:
            if isinstance(node, list):
                return [put(n) for n in node]
            if not isinstance(node, dict):
                return node
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in inline:
                inlined = put(defs[ref.removeprefix("#/$defs/")])
                extra = {k: put(v) for k, v in node.items() if k != "$ref"}
                return {**inlined, **extra} if isinstance(inlined, dict) else inlined
            return {k: put(v) for k, v in node.items()}

        out: dict[str, Any] = put(schema)
        kept = {key: put(value) for key, value in defs.items() if key in reached and key not in inline}
        if kept:
            out["$defs"] = {**out.get("$defs", {}), **kept}
        return out

    @staticmethod
    def _from_30(node: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(out.get(bound), bool) and out.pop(bound) and limit in out:
                out[bound] = out.pop(limit)
        if node.get("nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
                if isinstance(out.get("enum"), list) and None not in out["enum"]:
                    out["enum"] = [*out["enum"], None]
            elif kind is None:
                return {"anyOf": [out, {"type": "null"}]}
        return out

    def _key(self, ref: str) -> str:
        if ref not in self._keys:
            base = NOT_IN_NAMES.sub("_", ref.rsplit("/", 1)[-1]) or "schema"
            key, n, taken = base, 1, set(self._keys.values())
            while key in taken:
                n += 1
                key = f"{base}_{n}"
            self._keys[ref] = key
        return self._keys[ref]


def _def_refs(node: Any) -> Iterator[str]:
    """The ``$defs`` keys the ``#/$defs/<key>`` refs in ``node`` name, one for each ref."""
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _def_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _def_refs(value)


def _reaches(defs: Mapping[str, Any], start: str, goal: str) -> bool:
    """Whether ``defs[start]``'s refs lead to ``goal`` (through any chain of them)."""
    todo, seen = [start], set()
    while todo:
        for key in _def_refs(defs.get(todo.pop())):
            if key == goal:
                return True
            if key not in seen:
                seen.add(key)
                todo.append(key)
    return False
