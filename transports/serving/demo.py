"""The bundled demo server, served when no other is named (``WIREMCP_SERVER``)."""

from __future__ import annotations

import datetime
import hashlib
from typing import Annotated, TypedDict

from pydantic import BaseModel, Field

from wiremcp import Context, MCPServer, user

server = MCPServer(
    "wiremcp-demo", "0.1.0", title="wiremcp demo",
    instructions="A small demo server: text statistics, hashing, a notes resource and a review prompt.",
)

_NOTES: dict[str, str] = {"welcome": "Welcome to wiremcp. Notes live in memory; add one with the add_note tool."}


class TextStats(TypedDict):
    words: int
    chars: int
    lines: int


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def text_stats(text: str) -> TextStats:
    """Count the words, characters and lines in a text."""
    return {"words": len(text.split()), "chars": len(text), "lines": len(text.splitlines()) or (1 if text else 0)}


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def digest(text: str, algorithm: Annotated[str, Field(pattern="^(sha256|sha1|md5|blake2b)$")] = "sha256") -> str:
    """Hash a text with sha256 (default), sha1, md5 or blake2b; returns the hex digest."""
    return hashlib.new(algorithm, text.encode()).hexdigest()


@server.tool(annotations={"readOnlyHint": True})
def now() -> str:
    """The current UTC time in ISO 8601."""
    return datetime.datetime.now(datetime.UTC).isoformat()


class Note(BaseModel):
    title: str = Field(description="A short title")
    body: str = Field(description="The note itself")


@server.tool(annotations={"destructiveHint": False})
async def add_note(name: Annotated[str, Field(pattern=r"^[a-z0-9_-]{1,40}$")], body: str, ctx: Context) -> str:
    """Store a note in memory; it becomes readable as notes://NAME."""
    created = name not in _NOTES
    _NOTES[name] = body
    await ctx.info(f"stored note {name}")
    if not created:
        ctx.server.resource_updated(f"notes://{name}")
    return f"notes://{name}"


@server.resource("notes://{name}", name="note", mime_type="text/plain")
def read_note(name: str) -> str:
    """A note stored with add_note."""
    if name not in _NOTES:
        from wiremcp.errors import ResourceNotFound

        raise ResourceNotFound(f"notes://{name}")
    return _NOTES[name]


@server.resource("notes://index", name="notes", mime_type="application/json")
def notes_index() -> list[str]:
    """The names of all notes."""
    import orjson

    return [orjson.dumps(sorted(_NOTES)).decode()]


@server.prompt()
def review(text: Annotated[str, Field(description="The text to review")], tone: str = "friendly") -> list[object]:
    """Ask the model to review a text."""
    return [user(f"Please review the following text in a {tone} tone:\n\n{text}")]


@server.completion(prompt="review", argument="tone")
def complete_tone(value: str, arguments: dict[str, str]) -> list[str]:
    return [t for t in ("friendly", "formal", "blunt", "playful") if t.startswith(value)]
