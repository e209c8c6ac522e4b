"""A remote child: another MCP server, reached over Streamable HTTP or launched on stdio, served as an ``MCPServer``
whose tools, resources, resource templates, prompts, completions and skills are the upstream's (its tasks followed by
``wiremcp.transports.upstream_tasks``, its skills copied by ``wiremcp.transports.upstream_skills``), for a gateway to mount
(``gateway.mount(remote(url), prefix="x")``) under its own policy: its middleware, scopes, rate limits and audit
apply to them as to its own.

The child's lifespan (``wiremcp.lifespan``) keeps a link to the upstream (``wiremcp.transports.upstream_link``):
when the gateway starts serving, the upstream is reached, its catalog listed and served here as the upstream
describes it; when it says a list changed, that list is read again (and the gateway's clients hear of it); when
the connection is lost, the link connects again (a launched server is started again) and the catalog is read
afresh. A call, a read, a prompt or a completion is sent on as the caller made it, with what the upstream sends
about it relayed to the caller, and answered with what the upstream answered (its JSON-RPC error is the
caller's). When the gateway stops, the link closes (a launched upstream exits).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import httpx

from wiremcp.completions import Completer, Completion
from wiremcp.component import definition_site
from wiremcp.context import Context
from wiremcp.errors import DefinitionError
from wiremcp.mount import mounted_first
from wiremcp.prompts import Prompt
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.resources import Resource
from wiremcp.server import MCPServer
from wiremcp.skill_set import Source
from wiremcp.skills import SCHEME, SkillError
from wiremcp.tools import TaskSupport, Tool, ToolResult
from wiremcp.transports.upstream import Client, Failed, is_url
from wiremcp.transports.upstream_callers import CallerToken
from wiremcp.transports.upstream_link import LEVELS, UpstreamLink
from wiremcp.transports.upstream_skills import offers_skills, read_skills
from wiremcp.types import JSONObject
from wiremcp.uritemplate import UriTemplate

log = logging.getLogger("wiremcp.gateway")

PROTOCOL_META = "io.modelcontextprotocol/"
"""The prefix of the ``_meta`` keys the protocol itself puts on a result (the stateless era's ``serverInfo``)."""
KINDS = ("tools", "prompts", "resources")
REMOTES: weakref.WeakSet[MCPServer] = weakref.WeakSet()
"""The servers ``remote`` made."""


def remote(url: str | None = None, *, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
           headers: Mapping[str, str] | None = None, auth: httpx.Auth | None = None,
           caller_token: CallerToken | None = None, name: str | None = None, protocol: str = "auto",
           timeout: float = 30.0) -> MCPServer:
    """The server at ``url`` (Streamable HTTP; ``headers`` sent with every request, ``auth`` an ``httpx.Auth`` that
    authenticates them) or the one ``command`` launches (stdio; ``env`` added to the gateway's environment), as a
    child to mount. ``caller_token``: calls go to ``url`` with the caller's own token, which this async function
    of the request's context gives (``wiremcp.auth.oauth.upstream_token``: the caller's token at the provider
    that signed them in), the gateway's ``headers``/``auth`` serving to list what the upstream offers
    (``wiremcp.transports.upstream_callers``). ``timeout``: how long one request to it may take. ``name``: what
    the logs and the health report call it (by default the URL or the command)."""
    if (url is None) == (command is None):
        raise DefinitionError(f"{definition_site()}: remote() takes a url or a command: one of them")
    if caller_token is not None and (url is None or not callable(caller_token)):
        raise DefinitionError(f"{definition_site()}: remote(caller_token=...) is for a url, and takes an async "
                              "function of the request's context that gives the caller's token (e.g. upstream_token)")
    if isinstance(command, str):
        raise DefinitionError(f"{definition_site()}: remote(command=...) takes the command as a list of its words, "
                              "e.g. ['npx', '-y', 'pkg']")
    if url is not None and not is_url(url):
        raise DefinitionError(f"{definition_site()}: remote({url!r}): the URL must start with http:// or https://")
    target: str | list[str] = url if url is not None else [str(word) for word in command or ()]
    if isinstance(target, list) and not target:
        raise DefinitionError(f"{definition_site()}: remote(command=...) needs the command to run, as a list of its "
                              "words")
    label = name or (url if url is not None else " ".join(target))
    defined_at = definition_site()
    environment = {**os.environ, **env} if env is not None else None

    @contextlib.asynccontextmanager
    async def connected(server: MCPServer) -> AsyncIterator[UpstreamLink]:
        catalog = Catalog(server, named=name is not None)
        link = catalog.link = UpstreamLink(str(label), target, protocol=protocol, headers=headers, timeout=timeout,
                                           env=environment, on_connect=catalog.read_all, on_notice=catalog.heard,
                                           auth=auth, caller_token=caller_token)
        running = asyncio.create_task(link.run())
        try:
            await link.attempted.wait()
            if link.client is None and isinstance(link.failure, OSError):  # the command cannot be run at all
                raise DefinitionError(f"{defined_at}: remote {label}: cannot run {target[0]}: "
                                      f"{link.failure.strerror or link.failure}")
            if link.client is None and isinstance(link.failure, DefinitionError):  # its names clash with others'
                raise link.failure
            yield link
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
            await catalog.close()

    made = MCPServer(str(label), lifespan=connected)
    made.from_upstream = True
    REMOTES.add(made)
    return made


def is_remote(server: MCPServer) -> bool:
    """Whether ``server`` was made by ``remote``."""
    return server in REMOTES


def readiness_details(server: MCPServer) -> dict[str, Callable[[], object]] | None:
    """What ``/readyz`` reports of the upstreams of ``server``'s remote children (None: it has none): each by
    name, ``connected`` or ``down`` (``UpstreamLink.health``). A down upstream does not make the gateway unready:
    its other upstreams and its own components are still served."""
    if not any(is_remote(served) for served in mounted_first(server)):
        return None

    def upstreams() -> dict[str, object]:
        return {link.name: link.health() for link in upstream_links(server)}

    return {"upstreams": upstreams}


def upstream_links(server: MCPServer) -> list[UpstreamLink]:
    """The links of the remote children served by ``server`` (itself one, or mounted in it at any depth) that are
    running now."""
    return [served.lifespan_state for served in mounted_first(server) if isinstance(served.lifespan_state, UpstreamLink)]


class Catalog:
    """What the upstream serves, served by ``server``: read at each connection, and again when a list changes."""

    def __init__(self, server: MCPServer, named: bool) -> None:
        self.server = server
        self.named = named
        """Whether ``remote`` was given the name to serve it by."""
        self.link: UpstreamLink
        self._reading: dict[str, asyncio.Task[None]] = {}
        self._stale: set[str] = set()
        self._skills: list[Source] = []
        """The upstream's skills, served from their copies."""

    async def read_all(self, client: Client) -> None:
        """Everything the upstream serves, and how it introduces itself (its version, title and instructions;
        its name too, unless ``remote`` was given one): what a client of the child served on its own sees."""
        info, server = client.server_info, self.server
        if not self.named and isinstance(info.get("name"), str):
            server.name = info["name"]
        for field in ("version", "title", "description"):
            if isinstance(info.get(field), str):
                setattr(server, field, info[field])
        server.instructions = client.instructions
        for kind in KINDS:
            await self._read(client, kind)

    def heard(self, message: JSONObject) -> None:
        """A notification that belongs to no call: a list that changed is read again, an updated resource is
        announced, a log message goes to the gateway's log."""
        method = str(message.get("method") or "")
        given = message.get("params")
        params: JSONObject = given if isinstance(given, dict) else {}
        kind = method.removeprefix("notifications/").removesuffix("/list_changed")
        if kind in KINDS and method.endswith("/list_changed"):
            self._reread(kind)
        elif method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            self.server.resource_updated(params["uri"])
        elif method == "notifications/message":
            log.log(LEVELS.get(str(params.get("level")), logging.INFO), "upstream %s: %s", self.link.name,
                    params.get("data"))

    def _reread(self, kind: str) -> None:
        """Read ``kind`` again, once more after a read in progress if it changed meanwhile."""
        if kind in self._reading:
            self._stale.add(kind)
            return
        self._reading[kind] = task = asyncio.create_task(self._reread_now(kind))
        task.add_done_callback(lambda _: self._reading.pop(kind, None))

    async def _reread_now(self, kind: str) -> None:
        while True:
            client = self.link.client
            if client is None:
                return  # read again at the next connection
            try:
                await self._read(client, kind)
            except Failed as exc:
                log.warning("upstream %s: listing %s: %s", self.link.name, kind, exc)
            if kind not in self._stale:
                return
            self._stale.discard(kind)

    async def _read(self, client: Client, kind: str) -> None:
        offered = isinstance(client.capabilities.get(kind), dict)
        if kind == "tools":
            tools = await client.list_all("tools/list", "tools") if offered else []
            made_tools = {str(t["name"]): self._tool(t, client) for t in tools if t.get("name")}
            self._replace(self.server.defined_tools, made_tools, kind)
        elif kind == "prompts":
            prompts = await client.list_all("prompts/list", "prompts") if offered else []
            made = {str(p["name"]): self._prompt(p) for p in prompts if p.get("name")}
            self._replace(self.server.prompts, made, kind)
        else:
            static = await client.list_all("resources/list", "resources") if offered else []
            templates = await client.list_all("resources/templates/list", "resourceTemplates") if offered else []
            skills = await read_skills(client, self.link.name)
            own = offers_skills(client)  # its skills' files are served from their copies, not read through
            resources = self.server.resources
            self._drop_skills()
            resources.static.clear()
            resources.static.update({str(r["uri"]): self._resource(r) for r in static
                                     if r.get("uri") and not (own and str(r["uri"]).startswith(SCHEME))})
            resources.templates.clear()
            for described in templates:
                made_template = self._template(described)
                if made_template is not None:
                    resources.templates[made_template.uri] = made_template
            for skill in skills:
                try:
                    self._skills.append(self.server.skill_set.add_source(Source(None, [], False, None, made=skill)))
                except SkillError as exc:
                    log.warning("upstream %s: skill not served: %s", self.link.name, exc)
            self.server.list_changed("resources")
        if kind != "tools":  # completers follow the prompts' arguments and the templates' variables
            self._complete(client)

    def _replace(self, served: dict[str, Any], made: Mapping[str, Any], kind: str) -> None:
        served.clear()
        served.update(made)
        self.server.list_changed(kind)

    def _drop_skills(self) -> None:
        for source in self._skills:
            self.server.skill_set.drop(source)
        self._skills = []

    async def close(self) -> None:
        for task in list(self._reading.values()):
            task.cancel()
        self._drop_skills()
        for served in (self.server.defined_tools, self.server.prompts, self.server.resources.static,
                       self.server.resources.templates, self.server.completers):
            served.clear()
        for kind in (*KINDS, "completions"):
            self.server.list_changed(kind)

    # -- the components, each sent on to the upstream ------------------------------------------------------
    def _tool(self, described: JSONObject, client: Client) -> Tool:
        name, link = str(described["name"]), self.link
        support = _task_support(described, client)

        async def forward(ctx: Context, **arguments: Any) -> ToolResult:
            result = await link.call_tool(name, arguments, ctx, support)
            return ToolResult(list(result.get("content") or []), result.get("structuredContent"),
                              is_error=bool(result.get("isError")), meta=_own_meta(result))

        # A call becomes a task when the upstream makes it one (or at once, for a 2025-11-25 caller asking)
        return Tool(forward, name=name, title=described.get("title"), description=described.get("description"),
                    annotations=described.get("annotations"), icons=described.get("icons"),
                    input_schema=described.get("inputSchema") or {"type": "object"},
                    output_schema=described.get("outputSchema"), meta=_own_meta(described),
                    task_support=support, task_start="handler")

    def _prompt(self, described: JSONObject) -> Prompt:
        name, link = str(described["name"]), self.link

        async def forward(ctx: Context, **arguments: str) -> list[JSONObject]:
            result = await link.call("prompts/get", {"name": name, "arguments": arguments}, ctx)
            return [m for m in result.get("messages") or [] if isinstance(m, dict)]

        given = described.get("arguments")
        arguments = [a for a in given if isinstance(a, dict) and isinstance(a.get("name"), str)] \
            if isinstance(given, list) else []
        return Prompt(forward, name=name, title=described.get("title"), description=described.get("description"),
                      icons=described.get("icons"), meta=_own_meta(described), arguments=arguments)

    def _resource(self, described: JSONObject) -> Resource:
        size = described.get("size")
        return ReadThrough(str(described["uri"]), self.link, size=size if isinstance(size, int) else None,
                           **_resource_fields(described))

    def _template(self, described: JSONObject) -> Resource | None:
        try:
            return ReadThrough(str(described.get("uriTemplate")), self.link, **_resource_fields(described))
        except ValueError as exc:  # one the gateway cannot match URIs against: not served, said in the log
            log.warning("upstream %s: resource template not served: %s", self.link.name, exc)
            return None

    def _complete(self, client: Client) -> None:
        """A completer for every prompt argument and template variable, when the upstream completes them."""
        completers = self.server.completers
        completers.clear()
        if isinstance(client.capabilities.get("completions"), dict):
            for prompt in self.server.prompts.values():
                for argument in prompt.arguments:
                    key = ("ref/prompt", prompt.name, str(argument["name"]))
                    completers[key] = self._completer({"type": "ref/prompt", "name": prompt.name}, key[2])
            for resource in self.server.resources.templates.values():
                assert resource.template is not None
                for variable in resource.template.variables:
                    key = ("ref/resource", resource.uri, variable)
                    completers[key] = self._completer({"type": "ref/resource", "uri": resource.uri}, variable)
        self.server.list_changed("completions")

    def _completer(self, ref: JSONObject, argument: str) -> Completer:
        link = self.link

        async def complete(value: str, arguments: dict[str, str]) -> Completion:
            params: JSONObject = {"ref": ref, "argument": {"name": argument, "value": value}}
            if arguments:
                params["context"] = {"arguments": arguments}
            found = (await link.call("completion/complete", params)).get("completion")
            found = found if isinstance(found, dict) else {}
            total, more = found.get("total"), found.get("hasMore")
            return Completion([str(v) for v in found.get("values") or []], total if isinstance(total, int) else None,
                              more if isinstance(more, bool) else None)

        return Completer(complete)


def _task_support(described: JSONObject, client: Client) -> TaskSupport:
    """Whether a tool of the upstream's may run as a task: as its ``execution.taskSupport`` says (2025-11-25); in
    the stateless era, where the upstream decides per call, any of its tools may when it offers the tasks
    extension."""
    offered = client.capabilities
    if client.stateless:
        extensions = offered.get("extensions")
        return "optional" if isinstance(extensions, dict) and TASKS_EXTENSION in extensions else "forbidden"
    execution, calls = described.get("execution"), offered.get("tasks")
    for key in ("requests", "tools", "call"):  # the upstream runs tools/call as tasks
        calls = calls.get(key) if isinstance(calls, dict) else None
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if isinstance(calls, dict) and support in ("optional", "required") else "forbidden"


def _own_meta(described: JSONObject) -> JSONObject | None:
    """``_meta`` less the protocol's own keys (the upstream's envelope, e.g. its ``serverInfo``)."""
    meta = described.get("_meta")
    kept = {k: v for k, v in meta.items() if not k.startswith(PROTOCOL_META)} if isinstance(meta, dict) else {}
    return kept or None


def _resource_fields(described: JSONObject) -> dict[str, Any]:
    return {"name": described.get("name"), "title": described.get("title"),
            "description": described.get("description"), "mime_type": described.get("mimeType"),
            "annotations": described.get("annotations"), "icons": described.get("icons"),
            "meta": _own_meta(described)}


async def _unused(**variables: str) -> None:
    """The function a ``ReadThrough`` is registered with: its reads go to the upstream instead."""


class ReadThrough(Resource):
    """A resource (or template) of the upstream, read from it at each read. The contents the upstream gives for
    the URI asked carry the URI read here (a mounted child's URIs are the gateway's); others are as given."""

    def __init__(self, uri: str, link: UpstreamLink, **fields: Any) -> None:
        super().__init__(uri, _unused, **fields)
        self.link = link
        self.upstream = UriTemplate(uri)
        """The upstream's URI template (or URI): what a read here asks the upstream for."""

    def watch(self, uri: str) -> None:
        """A client subscribed to ``uri``: the link subscribes to the upstream's resource (once), whose updates
        come back as the gateway's."""
        variables = self.template.match(uri) if self.template is not None else {}
        if variables is not None:
            self.link.watch(self.upstream.expand(variables) if self.upstream.is_template else self.upstream.template)

    async def read(self, uri: str, variables: dict[str, str], ctx: Context) -> list[JSONObject]:
        asked = self.upstream.expand(variables) if self.upstream.is_template else self.upstream.template
        result = await self.link.call("resources/read", {"uri": asked}, ctx)
        return [{**content, "uri": uri} if content.get("uri") == asked else content
                for content in result.get("contents") or [] if isinstance(content, dict)]
