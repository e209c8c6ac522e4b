"""Resources: static URIs and RFC 6570 templates, and how a read becomes ``contents``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from wiremcp import access
from wiremcp.component import Component, duplicate
from wiremcp.content import resource_contents
from wiremcp.errors import MCPError, ResourceError, ResourceNotFound, ToolError
from wiremcp.failures import internal_error
from wiremcp.input_required import InputRequired
from wiremcp.types import JSONObject
from wiremcp.unavailable import Unavailable
from wiremcp.uritemplate import UriTemplate, has_dot_segments

if TYPE_CHECKING:
    from wiremcp.context import Context



class Resource(Component):
    """A resource at a fixed URI, or (with ``template`` set) a family of them."""

    __slots__ = ("_adapters", "annotations", "cache", "listed", "mime_type", "size", "template", "uri")

    def __init__(self, uri: str, fn: Callable[..., Any], *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, size: int | None = None,
                 annotations: JSONObject | None = None, icons: list[JSONObject] | None = None,
                 meta: JSONObject | None = None, scopes: list[str] | None = None, ttl_ms: int | None = None,
                 cache_scope: str | None = None, listed: bool = True, blocking: bool | None = None) -> None:
        super().__init__(fn, name=name, title=title, description=description, icons=icons, meta=meta,
                         scopes=scopes, blocking=blocking)
        if (ttl_ms is not None and ttl_ms < 0) or cache_scope not in (None, "public", "private"):
            raise ValueError(f"resource {uri}: ttl_ms must be >= 0 and cache_scope 'public' or 'private'")
        if has_dot_segments(uri):
            raise ValueError(f"resource {uri}: a resource URI has no '.' or '..' path segments (no read could reach it)")
        self.cache: JSONObject = {}
        """Caching hints for reads of this resource (stateless era), overriding the server's."""
        if ttl_ms is not None:
            self.cache["ttlMs"] = ttl_ms
        if cache_scope is not None:
            self.cache["cacheScope"] = cache_scope
        self.uri = uri
        self.listed = listed
        """Whether ``resources/list`` shows it (a skill's supporting files are read by URI, not listed)."""
        self.mime_type = mime_type
        self.size = size
        self.annotations = annotations
        template = UriTemplate(uri)
        self.template = template if template.is_template else None
        hints = self._hints
        parameters = self._parameters()
        params = [p.name for p in parameters if p.kind is not p.VAR_KEYWORD]
        expected = template.variables
        takes_all = len(params) < len(parameters)  # ``**variables``: every variable the others do not name
        if set(params) != set(expected) and not (takes_all and set(params) <= set(expected)):
            raise TypeError(f"resource {uri}: function parameters {params} must be the template variables {expected}")
        self._adapters: dict[str, TypeAdapter[Any]] = {
            p: TypeAdapter(hints[p]) for p in params if p in hints and hints[p] is not str
        }

    def to_wire(self) -> JSONObject:
        out: JSONObject = {"uriTemplate": self.uri} if self.template else {"uri": self.uri}
        out["name"] = self.name
        self._describe(out)
        for key, value in (("mimeType", self.mime_type), ("annotations", self.annotations)):
            if value:
                out[key] = value
        if self.size is not None and self.template is None:
            out["size"] = self.size
        return out

    def watch(self, uri: str) -> None:
        """A client subscribed to ``uri`` (this resource, or one of this template's): nothing to do for a resource
        whose changes the server announces itself (``server.resource_updated``). One that learns of them from
        elsewhere (a gateway's, from its upstream) starts listening for them here."""

    async def read(self, uri: str, variables: dict[str, str], ctx: Context) -> list[JSONObject]:
        kwargs: dict[str, Any] = {}
        for key, value in variables.items():
            adapter = self._adapters.get(key)
            try:
                kwargs[key] = adapter.validate_strings(value) if adapter else value
            except ValidationError:
                raise ResourceNotFound(uri) from None
        try:
            value = await self._invoke(kwargs, ctx)
            if isinstance(value, InputRequired):
                raise value
        except (MCPError, InputRequired, Unavailable):  # not now: 503, to be retried
            raise
        except ToolError as exc:  # words meant for the client, whichever kind raised them
            raise ResourceError(str(exc) or f"Error reading resource {uri}") from None
        except Exception as exc:
            raise internal_error(f"Error reading resource {uri}", exc, details=ctx.server.error_details) from None
        return self._contents(uri, value)

    def _contents(self, uri: str, value: Any) -> list[JSONObject]:
        items = value if isinstance(value, list) else [value]
        out: list[JSONObject] = []
        for item in items:
            if isinstance(item, str):
                out.append(resource_contents(uri, item, None, self.mime_type or "text/plain"))
            elif isinstance(item, bytes):
                out.append(resource_contents(uri, None, item, self.mime_type or "application/octet-stream"))
            elif isinstance(item, dict) and "uri" in item and ("text" in item or "blob" in item):
                out.append(item)
            else:
                if isinstance(item, BaseModel):
                    item = item.model_dump(mode="json")
                out.append(resource_contents(uri, orjson.dumps(item).decode(), None, self.mime_type or "application/json"))
        return out


class Resources:
    """The server's resources and templates, in registration order."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.static: dict[str, Resource] = {}
        self.templates: dict[str, Resource] = {}
        self._on_change = on_change

    def add(self, resource: Resource, *, replace: bool = False) -> None:
        """Serve ``resource``; one already at its URI is refused with a ``DefinitionError`` naming where each
        is defined, unless ``replace``."""
        served = self.templates if resource.template else self.static
        first = served.get(resource.uri)
        if first is not None and first is not resource and not replace:
            raise duplicate("resource template" if resource.template else "resource", resource.uri,
                            first.defined_at, resource.defined_at, "another URI")
        served[resource.uri] = resource
        self._on_change()

    def remove(self, uri: str) -> None:
        if self.static.pop(uri, None) is None and self.templates.pop(uri, None) is None:
            raise KeyError(uri)
        self._on_change()

    def replace(self, removed: list[str], added: list[Resource]) -> None:
        """Take away the static resources at ``removed`` and add ``added``, as one change."""
        for uri in removed:
            self.static.pop(uri, None)
        for resource in added:
            self.static[resource.uri] = resource
        self._on_change()

    def listed(self) -> list[Resource]:
        """What ``resources/list`` shows: the static resources, less those read by URI only."""
        return [resource for resource in self.static.values() if resource.listed]

    def find_static(self, uri: str) -> Resource | None:
        return self.static.get(uri)

    def __bool__(self) -> bool:
        return bool(self.static or self.templates)

    def find(self, uri: str) -> tuple[Resource, dict[str, str]] | None:
        """The resource at ``uri``: a static one, or the first template that matches it, with its variables.
        None for a URI with dot segments (``..``, ``%2e%2e``): no template ever sees one, mounted or not."""
        if has_dot_segments(uri):
            return None
        resource = self.static.get(uri)
        if resource is not None:
            return resource, {}
        for candidate in self.templates.values():
            assert candidate.template is not None
            variables = candidate.template.match(uri)
            if variables is not None:
                return candidate, variables
        return None

    async def read(self, uri: Any, ctx: Context) -> JSONObject:
        """A ``resources/read`` result for ``uri``, read as the caller (``access`` decides whether it may)."""
        resource, variables = access.resource(uri, ctx)
        contents = await resource.read(uri, variables, ctx)
        if not contents:
            raise ResourceNotFound(uri)
        if ctx.stateless and resource.cache:
            return {"contents": contents, **resource.cache}
        return {"contents": contents}

