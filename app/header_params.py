"""Tool parameters mirrored into HTTP headers (``x-mcp-header``, stateless era).

A tool marks a parameter with ``Annotated[str, param_header("Region")]`` (or writes
``"x-mcp-header": "Region"`` in a hand-written schema) and clients send its value as
``Mcp-Param-Region`` too. Clients drop a tool whose declarations break the rules, so
the rules are checked when the tool is registered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from pydantic.fields import FieldInfo

from wiremcp.types import JSONObject

KEYWORD = "x-mcp-header"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TYPES = ("string", "integer", "boolean")
_VALUES = frozenset({"default", "const", "enum", "examples"})
MAX_SAFE_INTEGER = 2**53 - 1


def param_header(name: str) -> Any:
    """Mark a tool parameter to travel as the ``Mcp-Param-{name}`` header as well (use in ``Annotated``)."""
    info: FieldInfo = Field(json_schema_extra={KEYWORD: name})
    return info


@dataclass(frozen=True, slots=True)
class HeaderParam:
    path: tuple[str, ...]
    """The chain of ``properties`` keys from the schema root to the parameter."""
    header: str
    """The header's name after ``Mcp-Param-``."""
    type: str

    def value(self, arguments: Any) -> Any:
        """The parameter's value in a call's arguments (None if absent)."""
        for key in self.path:
            if not isinstance(arguments, dict):
                return None
            arguments = arguments.get(key)
        return arguments


def _occurrences(node: Any, path: tuple[str, ...], names: bool = False) -> list[tuple[tuple[str, ...], Any, Any]]:
    """Every ``x-mcp-header`` in a schema: (path of keys to it, its value, the schema holding it). The keys of
    a ``properties`` map are names (``names``), and instance values (``default``, ...) are data, not schemas."""
    found: list[tuple[tuple[str, ...], Any, Any]] = []
    if isinstance(node, dict):
        if KEYWORD in node and not names:
            found.append((path, node[KEYWORD], node))
        for key, child in node.items():
            if not names and key in _VALUES:
                continue
            found.extend(_occurrences(child, (*path, key), not names and key == "properties"))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found.extend(_occurrences(child, (*path, str(index))))
    return found


def header_params(schema: JSONObject, tool: str) -> list[HeaderParam]:
    """The header parameters an input schema declares; ValueError if a declaration breaks the rules."""
    params: list[HeaderParam] = []
    seen: set[str] = set()
    for path, name, holder in _occurrences(schema, ()):
        where = "/".join(path) or "the schema root"
        if len(path) < 2 or any(path[i] != "properties" for i in range(0, len(path), 2)) or len(path) % 2:
            raise ValueError(f"tool {tool}: x-mcp-header at {where} is not reachable through 'properties' only")
        if not isinstance(name, str) or not name or not _TOKEN.fullmatch(name):
            raise ValueError(f"tool {tool}: x-mcp-header {name!r} at {where} is not an HTTP token")
        if name.lower() in seen:
            raise ValueError(f"tool {tool}: x-mcp-header {name!r} is declared twice (case-insensitively)")
        kind = holder.get("type")
        if kind not in _TYPES:
            raise ValueError(f"tool {tool}: x-mcp-header {name!r} needs type string, integer or boolean, not {kind!r}")
        seen.add(name.lower())
        params.append(HeaderParam(tuple(path[1::2]), name, kind))
    return params
