"""The server of the dot-segment tests (``tests.support.notes_server:server``): a child whose template
``notes://{+path}`` would read any path it is given, mounted under ``kid``, and a template of the parent's own,
``files://{+path}``. Each answers with the path its handler got, so a test sees what reached it."""

from __future__ import annotations

from wiremcp import MCPServer

child = MCPServer("notes")


@child.resource("notes://{+path}")
def note(path: str) -> str:
    return f"note at {path}"


server = MCPServer("notes-parent")
server.mount(child, prefix="kid")


@server.resource("files://{+path}")
def file(path: str) -> str:
    return f"file at {path}"
