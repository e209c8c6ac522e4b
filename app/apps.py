"""MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``): a tool names an interactive view, a ``ui://`` HTML
resource served as ``text/html;profile=mcp-app``, in its ``_meta.ui``; hosts that support apps render the
tool's results in it, in a sandboxed iframe, and let it call the server's tools.

What the server side of the extension is (the 2026-01-26 stable spec, ``modelcontextprotocol/ext-apps``):

- the tool's ``_meta.ui``: ``resourceUri`` and, when given, ``visibility`` (``model``: the agent sees and calls it;
  ``app``: only the view does; default both). The flat ``_meta["ui/resourceUri"]`` of earlier hosts is sent too;
- the resource's ``_meta.ui``, in its listing and on every read: the origins its Content Security Policy may
  allow (``connectDomains``, ``resourceDomains``, ``frameDomains``, ``baseUriDomains``), the browser
  ``permissions`` it asks for, a dedicated ``domain``, ``prefersBorder``;
- the extension declared (``capabilities.extensions``, no settings) once a tool or resource uses it.

Origins are checked as they are registered: a scheme, a host (``*.`` allowed first) and a port at most, so that
nothing a host joins into a CSP header can add a directive of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from wiremcp.types import JSONObject

EXTENSION = "io.modelcontextprotocol/ui"
MIME_TYPE = "text/html;profile=mcp-app"
SCHEME = "ui://"
Visibility = Literal["model", "app"]
Permission = Literal["camera", "microphone", "geolocation", "clipboardWrite"]
PERMISSIONS: tuple[str, ...] = ("camera", "microphone", "geolocation", "clipboardWrite")
LEGACY_KEY = "ui/resourceUri"
"""The flat ``_meta`` key earlier hosts read (deprecated by the spec, still sent alongside ``_meta.ui``)."""

_ORIGIN = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                     r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?")
_DOMAIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")
"""Patterns are matched with ``fullmatch``: ``$`` would let a value end with a newline."""


def tool_meta(ui: str, visibility: Sequence[Visibility] | None, meta: JSONObject | None) -> JSONObject:
    """A tool's ``_meta`` with its view: ``meta``'s own keys, ``ui`` and the legacy key."""
    require_ui_uri(ui, "a tool's ui")
    if meta and ("ui" in meta or LEGACY_KEY in meta):
        raise ValueError("give the view as ui= (and visibility=), not in meta")
    entry: JSONObject = {"resourceUri": ui}
    if visibility is not None:
        seen = list(dict.fromkeys(visibility))
        if not seen or any(v not in ("model", "app") for v in seen):
            raise ValueError(f"visibility must name 'model', 'app' or both, not {list(visibility)!r}")
        entry["visibility"] = seen
    return {**(meta or {}), "ui": entry, LEGACY_KEY: ui}


def view_of(tool_meta_value: JSONObject | None) -> str | None:
    """The ``ui://`` resource a tool's ``_meta`` names, if any."""
    ui = (tool_meta_value or {}).get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    return uri if isinstance(uri, str) else None


def resource_meta(*, connect_domains: Iterable[str] | None = None, resource_domains: Iterable[str] | None = None,
                  frame_domains: Iterable[str] | None = None, base_uri_domains: Iterable[str] | None = None,
                  permissions: Iterable[Permission] | None = None, domain: str | None = None,
                  prefers_border: bool | None = None) -> JSONObject:
    """A view's ``_meta.ui`` (empty when nothing is asked for), every origin and permission checked."""
    csp: JSONObject = {}
    for key, origins in (("connectDomains", connect_domains), ("resourceDomains", resource_domains),
                         ("frameDomains", frame_domains), ("baseUriDomains", base_uri_domains)):
        if origins is None:
            continue
        listed = [origins] if isinstance(origins, str) else list(origins)
        bad = [o for o in listed if not isinstance(o, str) or not _ORIGIN.fullmatch(o)]
        if bad:
            raise ValueError(f"{key}: {bad[0]!r} is not an origin such as 'https://api.example.com' or "
                             "'https://*.example.com'")
        csp[key] = listed
    ui: JSONObject = {}
    if csp:
        ui["csp"] = csp
    if permissions is not None:
        asked = [permissions] if isinstance(permissions, str) else list(permissions)
        unknown = [p for p in asked if p not in PERMISSIONS]
        if unknown:
            raise ValueError(f"permissions: {unknown[0]!r} is not one of {', '.join(PERMISSIONS)}")
        if asked:
            ui["permissions"] = {p: {} for p in dict.fromkeys(asked)}
    if domain is not None:
        if not isinstance(domain, str) or not _DOMAIN.fullmatch(domain):
            raise ValueError(f"domain: {domain!r} is not a host name")
        ui["domain"] = domain
    if prefers_border is not None:
        ui["prefersBorder"] = bool(prefers_border)
    return ui


def reader(uri: str, html: str | None, file: str | Path | None, ui: JSONObject) -> Callable[[], Any]:
    """What reads the view: the HTML given, or the file's current content (read again on every read, so an
    edited view is served as it is now); the contents carry ``_meta.ui``."""
    if (html is None) == (file is None):
        raise ValueError("give the view's HTML as html= or file=, one of them")
    meta = {"_meta": {"ui": ui}} if ui else {}
    if html is not None:
        contents = {"uri": uri, "mimeType": MIME_TYPE, "text": html, **meta}

        async def inline() -> JSONObject:
            return contents

        return inline
    path = Path(file)  # type: ignore[arg-type]
    if not path.is_file():
        raise ValueError(f"{path}: no such file")

    def from_file() -> JSONObject:
        return {"uri": uri, "mimeType": MIME_TYPE, "text": path.read_text(encoding="utf-8"), **meta}

    return from_file


def require_ui_uri(uri: str, what: str) -> None:
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or len(uri) == len(SCHEME):
        raise ValueError(f"{what} must be a ui:// URI, not {uri!r}")


def supports_apps(client_capabilities: JSONObject) -> bool:
    """Whether the client declared the extension with the HTML view type (else a tool's text is all it shows)."""
    extensions = client_capabilities.get("extensions")
    settings = extensions.get(EXTENSION) if isinstance(extensions, dict) else None
    types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(types, list) and MIME_TYPE in types
