"""Tool search: a large catalog offered through a search tool instead of listed whole (``ToolSearch``).

``MCPServer(..., tool_search=ToolSearch(pinned=[...]))`` (or ``server.mount(child, "gh", tool_search=...)`` for one
mounted server's tools) serves a tool, ``search_tools`` (a mount's: ``<prefix>_search_tools``), that takes a query
and answers with the definitions of the best-matching tools; ``tools/list`` then shows that tool and the pinned
ones instead of every tool it covers. ``tools/call`` is not restricted to what was listed: a tool found is called
by its name as usual. What a search answers is filtered for the caller by ``wiremcp.access``, exactly as a list is
(the caller's views and scopes); a search over the whole catalog is shown to every caller, whatever their views.

The ranking is BM25 (the ``bm25s`` library, the ``search`` extra) over each tool's name (split on ``_ - .`` and
camelCase), title, description and parameter names and descriptions; an ``Embedder`` (any object with an
``embed(texts)`` method) adds a ranking by cosine similarity, fused with BM25's by reciprocal rank.

The index follows the catalog: each search compares the server's tools version (``MCPServer.tools_version``, one
more at every change of its tools, mounted and remote children's included) with its snapshot's, and indexes the
tools anew when they differ. A snapshot is immutable and replaced whole, so no search waits on a lock.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import logging
import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson

from wiremcp import access
from wiremcp.component import definition_site
from wiremcp.context import Context
from wiremcp.errors import DefinitionError
from wiremcp.threads import run_sync
from wiremcp.tools import Tool, ToolResult
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.mount import Mount
    from wiremcp.server import MCPServer

MAX_LIMIT = 50
"""The most tools one search answers with."""

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@runtime_checkable
class Embedder(Protocol):
    """What turns texts into vectors for the embedding ranker: one vector (of one length) per text. No model
    ships with wiremcp: wrap the one you have (a local model, an embeddings API)."""

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


class ToolSearch:
    """How a catalog is offered through search: ``pinned``, the tools (names or shell-style patterns, as the
    server, or a mounted child, names them) listed beside the search tool; ``name``, the search tool's;
    ``limit``, how many tools a search answers with unless the caller asks for another number (1 to 50);
    ``embedder``, an optional ``Embedder`` whose ranking is fused with BM25's. A mistake is one
    ``DefinitionError`` line naming where it was made."""

    def __init__(self, *, pinned: Sequence[str] = (), name: str = "search_tools", limit: int = 5,
                 embedder: Embedder | None = None) -> None:
        where = definition_site()
        if isinstance(pinned, str) or not all(isinstance(p, str) and p for p in pinned):
            raise DefinitionError(f"{where}: ToolSearch: pinned takes a list of tool names or patterns, e.g. "
                                  f"[{pinned!r}]" if isinstance(pinned, str) else
                                  f"{where}: ToolSearch: pinned must be a list of non-empty strings")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise DefinitionError(f"{where}: ToolSearch: name {name!r} must be 1 to 64 letters, digits, '_', '.' or '-'")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise DefinitionError(f"{where}: ToolSearch: limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")
        if embedder is not None and not isinstance(embedder, Embedder):
            raise DefinitionError(f"{where}: ToolSearch: embedder {embedder!r} has no embed(texts) method")
        if importlib.util.find_spec("bm25s") is None:
            raise DefinitionError(f"{where}: ToolSearch needs the bm25s package: pip install 'wiremcp[search]'")
        self.pinned = tuple(pinned)
        self.name = name
        self.limit = limit
        self.embedder = embedder
        self.defined_at = where

    def __repr__(self) -> str:
        return f"ToolSearch(pinned={list(self.pinned)!r}, name={self.name!r}, limit={self.limit})"


# -- what a tool is, as text ------------------------------------------------------------------------------------
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(("a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "into", "is",
                   "it", "its", "me", "my", "of", "on", "or", "that", "the", "this", "to", "was", "what", "which",
                   "with"))


def words(text: str) -> list[str]:
    """``text`` as search terms: split on anything not a letter or digit and at camelCase humps, lower case,
    without the commonest English words, plurals made singular (``listPets`` -> ``list``, ``pet``)."""
    return [_singular(w) for w in _WORD.findall(_CAMEL.sub(" ", text).lower()) if w not in _STOP]


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def document(tool: Tool) -> list[str]:
    """The terms a tool is found by: its name (twice: names say the most), title, description, and its
    parameters' names and descriptions."""
    terms = words(tool.name) * 2
    terms += words(tool.title or "") + words(tool.description or "")
    properties = tool.input_schema.get("properties")
    if isinstance(properties, dict):
        for key, spec in properties.items():
            terms += words(str(key))
            if isinstance(spec, dict) and isinstance(spec.get("description"), str):
                terms += words(spec["description"])
    return terms


def definition(tool: Tool) -> JSONObject:
    """What a search answers about a tool: enough to call it."""
    out: JSONObject = {"name": tool.name}
    if tool.title:
        out["title"] = tool.title
    if tool.description:
        out["description"] = tool.description
    out["inputSchema"] = tool.input_schema
    return out


# -- the index ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Snapshot:
    """The tools a search covered at one version of the catalog, indexed."""

    version: int
    covered: tuple[Tool, ...]
    bm25: Any
    vectors: tuple[tuple[float, ...], ...] | None

    def ranked(self, query: str, query_vector: Sequence[float] | None) -> list[Tool]:
        """The tools that match ``query`` at all, best first."""
        if not self.covered:
            return []
        terms = words(query)
        scores = [float(s) for s in self.bm25.get_scores(terms)] if terms else [0.0] * len(self.covered)
        order = [i for i in sorted(range(len(scores)), key=lambda i: -scores[i]) if scores[i] > 0]
        if self.vectors is not None and query_vector is not None:
            near = [_cosine(query_vector, v) for v in self.vectors]
            by_vector = [i for i in sorted(range(len(near)), key=lambda i: -near[i]) if near[i] > 0]
            fused: dict[int, float] = {}
            for ranking in (order, by_vector):
                for rank, i in enumerate(ranking):
                    fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
            order = sorted(fused, key=lambda i: -fused[i])
        return [self.covered[i] for i in order]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def build(version: int, tools: tuple[Tool, ...], embedder: Embedder | None) -> Snapshot:
    """Index ``tools`` (on a worker thread: a few thousand take a moment)."""
    import bm25s  # type: ignore[import-untyped]  # the search extra (no type hints); imported when the first search indexes

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets its own to DEBUG: a line on stderr per index
    retriever = bm25s.BM25()
    if tools:
        retriever.index([document(t) or ["_"] for t in tools], show_progress=False)
    vectors = None
    if embedder is not None:
        texts = [" ".join(filter(None, (t.name, t.title, t.description))) for t in tools]
        vectors = tuple(tuple(float(x) for x in v) for v in embedder.embed(texts)) if texts else ()
    return Snapshot(version, tools, retriever, vectors)


# -- a search, served ------------------------------------------------------------------------------------------------
class SearchTool(Tool):
    """The search tool of a ``Searcher``; ``whole_catalog``: it searches all of the server's tools (then every
    caller is shown it, whatever their views: it answers with what their views show)."""

    searcher: Searcher
    whole_catalog: bool


_OUTPUT: JSONObject = {
    "type": "object",
    "properties": {"tools": {"type": "array", "items": {
        "type": "object", "required": ["name", "inputSchema"],
        "properties": {"name": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"},
                       "inputSchema": {"type": "object"}}}}},
    "required": ["tools"],
}


class Searcher:
    """One ``ToolSearch`` at work on ``server``: over all its tools, or (``covers``) those of one mount, named by
    ``name`` (its search tool's name here) and listing ``pinned`` (as served here) beside it."""

    def __init__(self, config: ToolSearch, server: MCPServer, name: str, pinned: Sequence[str],
                 covers: Callable[[], Collection[str]] | None = None, what: str = "this server's tools") -> None:
        self.config = config
        self.server = server
        self.pinned = tuple(pinned)
        self.covers = covers
        self.views_only = False
        """Made for views (``MCPServer.view(..., tool_search=...)``): listed to their callers only."""
        self.mount: Mount | None = None
        """The mount whose tools it covers (``covers``), to be taken away with it."""
        self._snapshot: Snapshot | None = None
        limit = config.limit

        async def search(ctx: Context, query: str, limit: int = limit) -> ToolResult:
            found = [definition(t) for t in await self.search(query, limit, ctx)]
            return ToolResult([orjson.dumps({"tools": found}).decode()], {"tools": found})

        schema: JSONObject = {"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
            "query": {"type": "string", "minLength": 1,
                      "description": "What the tool should do, in a few words (e.g. 'create an issue')"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": limit,
                      "description": "How many tools to answer with"}}}
        tool = SearchTool(search, name=name, title="Search tools",
                          description=f"Search {what} by what they do. Answers with the best matches (name, "
                                      "description, input schema); call a tool found by its name.",
                          input_schema=schema, output_schema=_OUTPUT,
                          annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
        tool.searcher = self
        tool.whole_catalog = covers is None
        tool.defined_at = config.defined_at
        self.tool = tool

    def covered(self) -> tuple[Tool, ...]:
        """The tools this search covers now (never a search tool, nor one a transform keeps out of lists)."""
        tools = self.server.tools.items()
        names = self.covers() if self.covers is not None else None
        return tuple(t for name, t in tools
                     if (names is None or name in names) and t.listed and not isinstance(t, SearchTool))

    def hides(self, tool: Tool) -> bool:
        """Whether ``tools/list`` leaves ``tool`` out (it is found by this search, and not pinned)."""
        if isinstance(tool, SearchTool) or any(fnmatch.fnmatchcase(tool.name, p) for p in self.pinned):
            return False
        return self.covers is None or tool.name in self.covers()

    async def snapshot(self) -> Snapshot:
        """The index of the tools as they are now: the last one, unless the catalog changed since."""
        version = self.server.tools_version
        current = self._snapshot
        if current is None or current.version != version:
            current = await run_sync(build, version, self.covered(), self.config.embedder)
            if self._snapshot is None or self._snapshot.version <= version:
                self._snapshot = current
        return current

    async def search(self, query: str, limit: int, ctx: Context) -> list[Tool]:
        """The ``limit`` tools that best match ``query`` among those the caller may see (``access.visible``)."""
        snapshot = await self.snapshot()
        embedder = self.config.embedder
        vector = (await run_sync(embedder.embed, [query]))[0] if embedder is not None and snapshot.covered else None
        ranked = snapshot.ranked(query, vector)
        return list(access.visible(ranked, ctx, "tools"))[:limit]


def listed(server: MCPServer, ctx: Context) -> list[Tool]:
    """The tools ``tools/list`` shows (before the caller's views and scopes filter them): every tool, less those a
    search covers and does not pin; a caller whose views offer their tools through search, the search tool and
    the views' pinned tools."""
    searchers = server.searchers
    tools = [t for t in server.tools.values() if t.listed]  # a transform may keep one out of lists
    if not searchers:
        return tools
    offered = access.view_searches(ctx)
    if offered:
        names = {search.name for search in offered}
        pinned = [pattern for search in offered for pattern in search.pinned]
        return [t for t in tools if t.name in names if isinstance(t, SearchTool) and t.searcher.covers is None] + [
            t for t in tools if not isinstance(t, SearchTool) and any(fnmatch.fnmatchcase(t.name, p) for p in pinned)]
    hidden = {s.tool.name for s in searchers if s.views_only}
    return [t for t in tools if t.name not in hidden and not any(s.hides(t) for s in searchers if not s.views_only)]
