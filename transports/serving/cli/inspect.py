"""``wiremcp list`` and ``wiremcp call``: what a server offers, and one tool call, from the shell.

TARGET is an ``http(s)://`` URL (Streamable HTTP) or a server spec, launched with ``wiremcp stdio``.
The client (``wiremcp.transports.upstream``, with httpx) is imported only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import json
import sys
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from wiremcp.errors import METHOD_NOT_FOUND
from wiremcp.transports.serving.settings import ConfigError

if TYPE_CHECKING:
    from wiremcp.transports.upstream import Client

PROTOCOLS = ("auto", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26")
KINDS = (("tools", "tools/list", "tools", "Tools"),
         ("resources", "resources/list", "resources", "Resources"),
         ("resourceTemplates", "resources/templates/list", "resources", "Resource templates"),
         ("prompts", "prompts/list", "prompts", "Prompts"))
"""(key of the listing, list method, server capability, heading)."""
TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
    "string": lambda v: isinstance(v, str),
}


def register(commands: argparse._SubParsersAction[Any]) -> None:
    listing = commands.add_parser("list", help="list a server's tools, resources and prompts",
                                  description="List what a server offers: tools (with their arguments), "
                                  "resources, resource templates and prompts.")
    _target_arguments(listing)
    listing.add_argument("--json", action="store_true", help="print one JSON object with the listed items as sent")
    listing.set_defaults(run=run_list)

    call = commands.add_parser("call", help="call one tool of a server",
                               description="Call one tool; each key=value argument is typed by the tool's "
                               "input schema (a string as written; numbers, booleans, objects, arrays as JSON).")
    _target_arguments(call)
    call.add_argument("tool", metavar="TOOL", help="the tool's name")
    call.add_argument("pairs", nargs="*", metavar="key=value", help="one argument of the tool")
    call.add_argument("--args", metavar="JSON", help="all the arguments as one JSON object (key=value goes over it)")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")
    call.set_defaults(run=run_call)


def _target_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("target", metavar="TARGET", help="an http(s):// URL of a Streamable HTTP endpoint, or a "
                         "server spec (MODULE[:ATTR] or path/to/server.py[:ATTR]) to launch on stdio")
    command.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                         help="an HTTP header for every request to a URL, e.g. 'Authorization: Bearer TOKEN' "
                         "(repeatable)")
    command.add_argument("--protocol", choices=PROTOCOLS, default="auto",
                         help="the protocol revision (default: auto, 2026-07-28 if the server speaks it)")
    command.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                         help="how long to wait for each answer (default: %(default)g)")
    command.add_argument("--app-dir", metavar="DIR", help="look for a MODULE:ATTR spec's module in DIR too")


def _headers(args: argparse.Namespace) -> dict[str, str]:
    from wiremcp.transports.upstream import is_url

    if args.header and not is_url(args.target):
        raise ConfigError("--header applies only to a URL target (a launched server reads its environment)")
    if args.timeout <= 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    return header_lines(args.header)


def header_lines(lines: list[str]) -> dict[str, str]:
    """``--header 'Name: value'`` options as headers; one that is not is the user's mistake."""
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            raise ConfigError(f"--header {line!r} is not 'Name: value'")
        headers[name.strip()] = value.strip()
    return headers


def _run(work: Coroutine[Any, Any, int]) -> int:
    from wiremcp.transports.upstream import Failed

    try:
        return asyncio.run(work)
    except Failed as exc:
        if str(exc):  # empty when the launched server printed its own error
            sys.stderr.write(f"wiremcp: error: {exc}\n")
        return exc.status


def _connect(args: argparse.Namespace, headers: dict[str, str]) -> AbstractAsyncContextManager[Client]:
    from wiremcp.transports.serving.cli import package_version
    from wiremcp.transports.serving.cli.serve import stdio_command
    from wiremcp.transports.upstream import connect, is_url

    target = args.target if is_url(args.target) else stdio_command(args.target, args.app_dir)
    return connect(target, protocol=args.protocol, headers=headers, timeout=args.timeout,
                   client_info={"name": "wiremcp", "version": package_version()})


# -- list ---------------------------------------------------------------------------------------------
def run_list(args: argparse.Namespace) -> int:
    return _run(_list(args, _headers(args)))


async def _list(args: argparse.Namespace, headers: dict[str, str]) -> int:
    from wiremcp.transports.upstream import RPCError

    async with _connect(args, headers) as client:
        listing: dict[str, Any] = {"protocolVersion": client.version, "serverInfo": client.server_info}
        advertised = []
        for key, method, capability, _ in KINDS:
            listing[key] = []
            if capability not in client.capabilities:
                continue  # not offered: not asked
            try:
                listing[key] = await client.list_all(method, key)
            except RPCError as exc:
                if exc.code != METHOD_NOT_FOUND:  # an older server without resources/templates/list
                    raise
                continue
            advertised.append(key)
    sys.stdout.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n" if args.json
                     else _describe(listing, advertised))
    return 0


def _first_line(text: Any) -> str:
    lines = text.strip().splitlines() if isinstance(text, str) else []
    return lines[0].strip() if lines else ""


def _summary(item: dict[str, Any]) -> str:
    annotations = item.get("annotations")
    title = item.get("title") or (annotations.get("title") if isinstance(annotations, dict) else None)
    return " — ".join(part for part in (title, _first_line(item.get("description"))) if isinstance(part, str) and part)


def _type_name(schema: Any, defs: Any = None) -> str:
    """A property's type as the listing shows it: ``integer``, ``string|null``; an enum by its values
    (``red|green``), also behind a ``$ref`` to the input schema's ``$defs`` (pydantic's Enum classes)."""
    if not isinstance(schema, dict):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict):
        return _type_name(defs.get(ref.removeprefix("#/$defs/")), defs)
    if isinstance(schema.get("enum"), list):
        return "|".join(v if isinstance(v, str) else json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return schema["const"] if isinstance(schema["const"], str) else json.dumps(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(_type_name(s, defs) for s in schema[key])
    return "object" if "$ref" in schema else "any"


def _tool_arguments(tool: dict[str, Any]) -> list[str]:
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    required = schema.get("required") if isinstance(schema, dict) else None
    defs = schema.get("$defs") if isinstance(schema, dict) else None
    lines = []
    for name, prop in properties.items():
        flags = ", required" if isinstance(required, list) and name in required else ""
        about = _first_line(prop.get("description")) if isinstance(prop, dict) else ""
        lines.append(f"{name}: {_type_name(prop, defs)}{flags}" + (f" — {about}" if about else ""))
    return lines


def _prompt_arguments(prompt: dict[str, Any]) -> list[str]:
    lines = []
    for argument in prompt.get("arguments") or ():
        if isinstance(argument, dict):
            about = _first_line(argument.get("description"))
            lines.append(f"{argument.get('name')}{', required' if argument.get('required') else ''}"
                         + (f" — {about}" if about else ""))
    return lines


def _describe(listing: dict[str, Any], advertised: list[str]) -> str:
    info = listing["serverInfo"]
    name = " ".join(str(info[k]) for k in ("name", "version") if info.get(k)) or "(unnamed server)"
    out = [f"{name}" + (f" ({info['title']})" if info.get("title") else "") + f", protocol {listing['protocolVersion']}"]
    for key, _, _, heading in KINDS:
        if key not in advertised:
            continue
        items = listing[key]
        out.append(f"\n{heading}:" + ("" if items else " none"))
        for item in items:
            head = {"resources": "uri", "resourceTemplates": "uriTemplate"}.get(key, "name")
            label = str(item.get(head))
            if head != "name" and item.get("name"):
                label += f"  {item['name']}" + (f" ({item['mimeType']})" if item.get("mimeType") else "")
            summary = _summary(item)
            out.append(f"  {label}" + (f" — {summary}" if summary else ""))
            details = _tool_arguments(item) if key == "tools" else _prompt_arguments(item) if key == "prompts" else []
            out += [f"      {line}" for line in details]
    return "\n".join(out) + "\n"


# -- call -----------------------------------------------------------------------------------------------
def run_call(args: argparse.Namespace) -> int:
    headers = _headers(args)
    base: Any = {}
    if args.args is not None:
        try:
            base = json.loads(args.args)
        except ValueError:
            base = None
        if not isinstance(base, dict):
            raise ConfigError("--args must be a JSON object, e.g. '{\"text\": \"hello\"}'")
    pairs = []
    for pair in args.pairs:
        key, equals, raw = pair.partition("=")
        if not equals or not key:
            raise ConfigError(f"{pair!r} is not a key=value argument")
        pairs.append((key, raw))
    return _run(_call(args, headers, base, pairs))


def coerce(key: str, raw: str, schema: Any) -> Any:
    """``raw`` as the type the tool's input schema gives ``key``: a string as written, anything else as JSON."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    prop = properties.get(key) if isinstance(properties, dict) else None
    kind = prop.get("type") if isinstance(prop, dict) else None
    kinds = [kind] if isinstance(kind, str) else [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []
    if kinds == ["string"]:
        return raw
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
        parsed = False
    else:
        parsed = True
    if not kinds:
        return value  # not in the schema, or untyped: JSON if it parses, else the text
    if parsed and any(TYPE_CHECKS.get(k, lambda _: True)(value) for k in kinds):
        return int(value) if "integer" in kinds and isinstance(value, float) else value
    if "string" in kinds:
        return raw
    raise ConfigError(f"argument {key!r} must be {' or '.join(kinds)}, not {raw!r}")


async def _call(args: argparse.Namespace, headers: dict[str, str], base: dict[str, Any],
                pairs: list[tuple[str, str]]) -> int:
    from wiremcp.transports.upstream import param_headers

    async with _connect(args, headers) as client:
        schema: Any = None
        if "tools" in client.capabilities:
            tools = await client.list_all("tools/list", "tools")
            schema = next((tool.get("inputSchema") for tool in tools if tool.get("name") == args.tool), None)
        arguments = {**base, **{key: coerce(key, raw, schema) for key, raw in pairs}}
        mirrored = param_headers(schema, arguments) if client.stateless else {}  # x-mcp-header, over HTTP
        result = await client.request("tools/call", {"name": args.tool, "arguments": arguments}, headers=mirrored)
    return _show(args, result)


def _show(args: argparse.Namespace, result: dict[str, Any]) -> int:
    asking = result.get("resultType") == "input_required"  # stateless era: a question we cannot answer
    failed = asking or result.get("isError") is True
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    elif failed:
        if not asking:
            sys.stderr.write(_content_text(result) or "the tool reported an error\n")
    elif "structuredContent" in result:
        sys.stdout.write(json.dumps(result["structuredContent"], indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_content_text(result))
    if asking:
        requests = result.get("inputRequests")
        asked = sorted({str(r.get("method")) for r in (requests.values() if isinstance(requests, dict) else ())
                        if isinstance(r, dict)})
        sys.stderr.write(f"wiremcp: error: the tool {args.tool} asks for input the command line cannot give"
                         + (f" ({', '.join(asked)})" if asked else "") + "\n")
    return 1 if failed else 0


def _content_text(result: dict[str, Any]) -> str:
    """The text blocks as they are, every other block summarised in one line."""
    lines = []
    for block in result.get("content") or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            lines.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            try:
                size = f", {len(base64.b64decode(str(block.get('data', ''))))} bytes"
            except (binascii.Error, ValueError):
                size = ""
            lines.append(f"[{kind} {block.get('mimeType', '?')}{size}]")
        elif kind == "resource":
            resource = block.get("resource")
            resource = resource if isinstance(resource, dict) else {}
            mime = f" {resource['mimeType']}" if resource.get("mimeType") else ""
            lines.append(f"[resource {resource.get('uri', '?')}{mime}]")
        elif kind == "resource_link":
            lines.append(f"[resource link {block.get('uri', '?')}]")
        else:
            lines.append(f"[{kind} block]")
    return "".join(line + "\n" for line in lines)
