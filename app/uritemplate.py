"""Matching URIs against RFC 6570 templates (the expressions resource templates use).

Supported: simple ``{var}``, reserved ``{+var}``, fragment ``{#var}``, path segments
``{/var}``, labels ``{.var}``, and query ``{?a,b}`` / ``{&a}`` expressions.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote

_EXPR = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,*%]+)\}")
_SEGMENT_SEPARATORS = re.compile(r"[/\\]")
DECODINGS = 3
"""How many times a path is percent-decoded when looking for dot segments (``%252e`` is ``%2e`` once decoded,
and a handler may decode again)."""
_VARNAME = re.compile(r"[A-Za-z0-9_.%]+")


def has_dot_segments(uri: str) -> bool:
    """Whether the path of ``uri`` has a ``.`` or ``..`` segment, written out or percent-encoded (``%2e%2e``,
    ``.%2E``, ``..%2f``), with ``/`` or ``\\`` between segments. Such a URI names something else than it seems
    to once resolved (RFC 3986, 5.2.4), and a template would hand the segment to its handler as part of a
    variable: ``notes://kid/../vault/doc`` would reach ``notes://kid/{+path}`` with ``../vault/doc``."""
    path = uri.partition("?")[0].partition("#")[0]
    for _ in range(DECODINGS):
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    return any(segment in (".", "..") for segment in _SEGMENT_SEPARATORS.split(path))


_ABSOLUTE = re.compile(r"[/\\]|[A-Za-z]:[/\\]")
"""The start of an absolute path: a separator, or a drive (``C:/``, ``c:\\``)."""


def is_absolute_path(value: str) -> bool:
    """Whether ``value``, percent-decoded as many times as ``has_dot_segments`` decodes, starts as an absolute
    path does. A template's variable never holds one: ``docs:///etc/passwd`` would give ``docs://{+path}`` the
    path ``/etc/passwd``, and ``folder / "/etc/passwd"`` is ``/etc/passwd`` (so is ``%2Fetc`` for ``{name}``)."""
    for _ in range(DECODINGS):
        if _ABSOLUTE.match(value):
            return True
        decoded = unquote(value)
        if decoded == value:
            return False
        value = decoded
    return bool(_ABSOLUTE.match(value))


_RESERVED = ":/?#[]@!$&'()*+,;="
"""What ``{+var}`` and ``{#var}`` leave as they are (RFC 6570, 3.2.3)."""


class UriTemplate:
    __slots__ = ("_pattern", "_pieces", "_query_vars", "template", "variables")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._query_vars: list[str] = []
        self._pieces: list[tuple[str, str, list[str]]] = []
        """The template as (literal text before, operator, variable names), and a last piece for what follows."""
        parts: list[str] = []
        pos = 0
        query_seen = False
        for match in _EXPR.finditer(template):
            if query_seen:
                raise ValueError(f"{template}: a query expression must come last")
            parts.append(re.escape(template[pos:match.start()]))
            op, names = match.group(1), [n.rstrip("*") for n in match.group(2).split(",")]
            self._pieces.append((template[pos:match.start()], op, names))
            for name in names:
                if not _VARNAME.fullmatch(name) or name in self.variables or name in self._query_vars:
                    raise ValueError(f"{template}: bad or repeated variable {name!r}")
            if op in ("?", "&"):
                self._query_vars.extend(names)
                query_seen = True
                parts.append(r"(?:[?&](?P<__query>.*))?")
            else:
                if len(names) != 1:
                    raise ValueError(f"{template}: only one variable per {{{op}...}} expression is supported")
                name = names[0]
                self.variables.append(name)
                group = f"(?P<{_group(name)}>{_value_pattern(op)})"
                prefix = {"#": "#", "/": "/", ".": r"\.", ";": ";" + re.escape(name) + "="}.get(op, "")
                parts.append(prefix + group)
            pos = match.end()
        if "{" in template[pos:] or "}" in template[pos:]:
            raise ValueError(f"{template}: unbalanced braces")
        parts.append(re.escape(template[pos:]))
        self._pieces.append((template[pos:], "", []))
        self._pattern = re.compile("".join(parts))
        self.variables.extend(self._query_vars)

    @property
    def is_template(self) -> bool:
        return bool(self.variables)

    def match(self, uri: str) -> dict[str, str] | None:
        found = self._pattern.fullmatch(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        for name in self.variables:
            if name in self._query_vars:
                continue
            raw = found.group(_group(name))
            if is_absolute_path(raw):  # no variable starts outside where the template points
                return None
            values[name] = unquote(raw)
        if self._query_vars:
            query = found.groupdict().get("__query") or ""
            for key, value in parse_qsl(query, keep_blank_values=True):
                if key in self._query_vars:
                    values[key] = value
        return values


    def expand(self, values: dict[str, str]) -> str:
        """The URI for ``values`` (RFC 6570 expansion, for the expressions ``match`` reads): what ``match``
        took apart, put back together. A variable without a value is left out, as the RFC says."""
        out: list[str] = []
        for literal, op, names in self._pieces:
            out.append(literal)
            given = [(name, values[name]) for name in names if values.get(name) is not None]
            if not given:
                continue
            safe = _RESERVED if op in ("+", "#") else ""
            if op in ("?", "&"):
                out.append(op + "&".join(f"{name}={quote(value, safe='')}" for name, value in given))
            elif op == ";":
                out.append("".join(f";{name}={quote(value, safe='')}" if value else f";{name}" for name, value in given))
            else:
                out.append(op.replace("+", "") + ",".join(quote(value, safe=safe) for _, value in given))
        return "".join(out)


def _group(name: str) -> str:
    return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _value_pattern(op: str) -> str:
    if op in ("+", "#"):
        return r"[^?#]*?" if op == "+" else r".*"
    # "." is unreserved (left as is by simple expansion); only a label expression ends at one
    return r"[^/?#&,.;]+" if op == "." else r"[^/?#&,;]+"


def is_template(uri: str) -> bool:
    return bool(_EXPR.search(uri))
