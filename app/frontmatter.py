"""The YAML frontmatter of a ``SKILL.md`` (Agent Skills), read as JSON: the ``---`` block at its top, parsed
with YAML 1.2's core schema (``yes``, ``on``, ``2024-01-01`` and ``012`` stay what a YAML 1.2 reader, and a
JSON host, takes them for: strings and the integer 12), and the Agent Skills naming rules.

A skill's listing entry carries this object verbatim (SEP-2640: "identical in content to the frontmatter of the
SKILL.md it describes"), so a host that parses the file itself must get the same object: only values JSON
has are accepted.
"""

from __future__ import annotations

import math
import re
from typing import Any

from wiremcp.types import JSONObject

NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
"""A skill name: 1-64 characters, lowercase letters, digits and hyphens, no hyphen first, last or twice."""
MAX_DESCRIPTION = 1024
RESERVED_METADATA = "io.modelcontextprotocol/"
"""Keys of ``metadata`` under this prefix are reserved for MCP extensions (none defined yet)."""

_BLOCK = re.compile(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)")


class FrontmatterError(ValueError):
    """A ``SKILL.md`` whose frontmatter is missing, not YAML, or not what the Agent Skills spec asks."""


def read(markdown: str) -> JSONObject:
    """The frontmatter of ``markdown`` (a ``SKILL.md``) as a JSON object, checked: ``name`` and ``description``
    present and well-formed, nothing JSON cannot carry, no reserved ``metadata`` keys."""
    block = _BLOCK.match(markdown.removeprefix("\ufeff"))
    if block is None:
        raise FrontmatterError("SKILL.md must begin with YAML frontmatter between '---' lines")
    try:
        value = _load(block.group(1))
    except Exception as exc:  # the YAML library's own errors, said in one line
        problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
        said = f"{problem} (line {mark.line + 2} of SKILL.md)" if problem and mark else str(exc).strip().splitlines()[0]
        raise FrontmatterError(f"SKILL.md frontmatter is not valid YAML: {said}") from None
    if not isinstance(value, dict):
        raise FrontmatterError("SKILL.md frontmatter must be a mapping of fields")
    _json_only(value, "frontmatter")
    name, description = value.get("name"), value.get("description")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise FrontmatterError(f"SKILL.md name {name!r} must be 1-64 lowercase letters, digits and single hyphens, "
                               "not starting or ending with a hyphen")
    if not isinstance(description, str) or not description.strip() or len(description) > MAX_DESCRIPTION:
        raise FrontmatterError(f"SKILL.md description must be a non-empty string of at most {MAX_DESCRIPTION} "
                               "characters")
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        reserved = sorted(key for key in metadata if key.startswith(RESERVED_METADATA))
        if reserved:
            raise FrontmatterError(f"SKILL.md metadata keys {reserved} use the prefix {RESERVED_METADATA!r}, "
                                   "which is reserved for MCP extensions")
    return value


def _json_only(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise FrontmatterError(f"SKILL.md {where} has a key that is not a string: {key!r}")
            _json_only(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_only(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise FrontmatterError(f"SKILL.md {where} is {value}, which JSON cannot carry")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise FrontmatterError(f"SKILL.md {where} is a {type(value).__name__}, which JSON cannot carry")


_loader: Any = None


def _load(text: str) -> Any:
    global _loader
    if _loader is None:
        _loader = _core_schema_loader()
    import yaml

    return yaml.load(text, Loader=_loader)


def _core_schema_loader() -> Any:
    """PyYAML's safe loader with YAML 1.2's core schema in place of YAML 1.1's implicit types."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class CoreSchemaLoader(base):  # type: ignore[misc, valid-type]
        pass

    CoreSchemaLoader.yaml_implicit_resolvers = {}
    resolve = CoreSchemaLoader.add_implicit_resolver  # PyYAML calls .match: \Z, not $, ends the whole value
    resolve("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)\Z"), list("tTfF"))
    resolve("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z"), list("-+0123456789"))
    resolve("tag:yaml.org,2002:float", re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"),
        list("-+0123456789."))
    resolve("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)\Z"), ["~", "n", "N", ""])

    def integer(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)

    def boolean(loader: Any, node: Any) -> bool:
        return bool(loader.construct_scalar(node).lower() == "true")

    CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", integer)
    CoreSchemaLoader.add_constructor("tag:yaml.org,2002:bool", boolean)
    return CoreSchemaLoader
