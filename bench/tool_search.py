"""Tool search over a large catalog: what a client reads, how often the right tool is found, how long a search takes.

    .venv/bin/python bench/tool_search.py                # the table, as bench/README.md records it
    .venv/bin/python bench/tool_search.py --misses       # and the labelled queries whose tools were not found

The catalog: three real public OpenAPI documents, committed under ``bench/openapi/`` (``bench/README.md`` says
where each comes from), each served with ``from_openapi`` and mounted under a prefix: 562 tools. Measured:

* **tokens**: the ``tools`` of a full ``tools/list`` (one page) against the search tool's definition plus one
  5-tool search answer (its text block; ``structuredContent`` holds the same JSON), the mean over the labelled
  queries. Counted with the GPT-2 byte-level BPE (the ``tokenizers`` package, ``bench/gpt2-tokenizer.json``);
* **recall@5** on ``bench/tool_search_queries.json`` (written once, by hand, before the first run; never tuned
  to): per query, the share of its relevant tools among the 5 answered, averaged; and the share of queries
  whose first answer is relevant;
* **latency**: a ``search_tools`` call through the in-memory ``Client`` (the JSON encoding and the dispatcher
  included), median and 95th percentile over the labelled queries, at 562 tools and at 5,620 (the same
  documents mounted ten times, where a copy of a relevant tool counts as relevant); and the time the first search
  takes to index the catalog.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from tokenizers import Tokenizer

if __package__ in (None, ""):  # run as a script: ``python bench/tool_search.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import machine_line
from wiremcp import MCPServer, ToolSearch
from wiremcp.transports import Client, from_openapi

HERE = Path(__file__).resolve().parent
DOCUMENTS = {"petstore": "petstore.json", "box": "box.json", "asana": "asana.json"}
QUERIES = HERE / "tool_search_queries.json"
LIMIT = 5


def children() -> dict[str, MCPServer]:
    """One server per document (no call is made: the client points nowhere)."""
    client = httpx.AsyncClient(base_url="http://127.0.0.1:9")
    return {prefix: from_openapi(json.loads((HERE / "openapi" / name).read_text()), client=client)
            for prefix, name in DOCUMENTS.items()}


def catalog(served: dict[str, MCPServer], copies: int, search: bool) -> MCPServer:
    """The documents' servers mounted under their prefixes (``box_...``), and ``copies - 1`` more times through a
    server of their own each (``copy2_box_...``), searched or listed."""
    server = MCPServer("catalog", page_size=100_000, tool_search=ToolSearch(limit=LIMIT) if search else None)
    for copy in range(copies):
        into = server if copy == 0 else MCPServer(f"copy{copy + 1}")
        for prefix, child in served.items():
            into.mount(child, prefix)
        if into is not server:
            server.mount(into, f"copy{copy + 1}")
    return server


def _original(name: str) -> str:
    """A copy's tool by the name of the tool it copies (``copy2_box_get_users``: ``box_get_users``)."""
    return name.split("_", 1)[1] if name.startswith("copy") else name


def tokens(tokenizer: Tokenizer, value: Any) -> int:
    return len(tokenizer.encode(orjson.dumps(value).decode()).ids)


async def measure(served: dict[str, MCPServer], copies: int, queries: list[dict[str, Any]],
                  tokenizer: Tokenizer | None, misses: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    searched = catalog(served, copies, search=True)
    out["tools"] = len(searched.tools) - 1
    async with Client(searched) as client:
        listed = await client.list_tools()
        (definition,) = [t for t in listed if t["name"] == "search_tools"]
        started = time.perf_counter()
        await client.call_tool("search_tools", {"query": "warm up: index the catalog"})
        out["index_s"] = time.perf_counter() - started
        timings: list[float] = []
        answers: list[dict[str, Any]] = []
        recall: list[float] = []
        first: list[bool] = []
        for query in queries:
            started = time.perf_counter()
            answer = await client.call_tool("search_tools", {"query": query["query"]})
            timings.append(time.perf_counter() - started)
            answers.append(answer)
            names = [_original(t["name"]) for t in answer["structuredContent"]["tools"]]
            relevant = set(query["tools"])
            recall.append(len(relevant & set(names)) / len(relevant))
            first.append(bool(names) and names[0] in relevant)
            if misses and not relevant & set(names):
                print(f"  miss: {query['query']!r}: wanted {sorted(relevant)}, got {names}", file=sys.stderr)
    out["median_ms"] = statistics.median(timings) * 1000
    out["p95_ms"] = statistics.quantiles(timings, n=20)[-1] * 1000
    out["recall"] = statistics.mean(recall)
    out["first"] = sum(first) / len(first)
    if tokenizer is not None:
        listing = catalog(served, copies, search=False)
        async with Client(listing) as client:
            full = await client.list_tools()
        out["list_tokens"] = tokens(tokenizer, full)
        out["list_bytes"] = len(orjson.dumps(full))
        out["search_tool_tokens"] = tokens(tokenizer, definition)
        out["answer_tokens"] = statistics.mean(len(tokenizer.encode(a["content"][0]["text"]).ids) for a in answers)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--misses", action="store_true", help="print the queries whose tools were not found")
    args = parser.parse_args()
    queries = json.loads(QUERIES.read_text())
    tokenizer = Tokenizer.from_file(str(HERE / "gpt2-tokenizer.json"))
    started = time.perf_counter()
    served = children()
    print(f"{machine_line()}\nthe documents read into {sum(len(s.tools) for s in served.values())} tools in "
          f"{time.perf_counter() - started:.1f} s; {len(queries)} labelled queries\n")
    small = await measure(served, 1, queries, tokenizer, args.misses)
    large = await measure(served, 10, queries, None, False)
    print(f"| catalog | tools/list | search tool + one {LIMIT}-tool answer | saved |")
    print("|---|---|---|---|")
    searching = small["search_tool_tokens"] + small["answer_tokens"]
    print(f"| {small['tools']} tools | {small['list_tokens']:,} tokens ({small['list_bytes'] / 1000:,.0f} kB) | "
          f"{small['search_tool_tokens']:,} + {small['answer_tokens']:,.0f} = {searching:,.0f} tokens | "
          f"{1 - searching / small['list_tokens']:.1%} |")
    print(f"\n| catalog | recall@{LIMIT} | first answer relevant | first search (indexing) | search, median | "
          "search, p95 |")
    print("|---|---|---|---|---|---|")
    for row in (small, large):
        print(f"| {row['tools']:,} tools | {row['recall']:.1%} | {row['first']:.1%} | {row['index_s'] * 1000:,.0f} ms | "
              f"{row['median_ms']:.2f} ms | {row['p95_ms']:.2f} ms |")
    print("\n(at 5,620 tools a copy of a relevant tool counts as relevant: the copies are the same tools under "
          "other prefixes)")


if __name__ == "__main__":
    asyncio.run(main())
