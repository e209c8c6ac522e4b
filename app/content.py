"""Content blocks (text, image, audio, embedded resource, resource link) and helpers to build them.

Blocks are plain dicts in wire shape; the classes here are conveniences a handler
may return instead of writing the dicts by hand.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from wiremcp.types import JSONObject

CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _with_extras(block: JSONObject, annotations: JSONObject | None, meta: JSONObject | None) -> JSONObject:
    if annotations:
        block["annotations"] = annotations
    if meta:
        block["_meta"] = meta
    return block


def text(value: str, *, annotations: JSONObject | None = None, meta: JSONObject | None = None) -> JSONObject:
    return _with_extras({"type": "text", "text": value}, annotations, meta)


@dataclass(slots=True)
class Image:
    """Image content; ``data`` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str = "image/png"
    annotations: JSONObject | None = None

    def to_content(self) -> JSONObject:
        return _with_extras({"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}, self.annotations, None)


@dataclass(slots=True)
class Audio:
    """Audio content; ``data`` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str = "audio/wav"
    annotations: JSONObject | None = None

    def to_content(self) -> JSONObject:
        return _with_extras({"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}, self.annotations, None)


@dataclass(slots=True)
class EmbeddedResource:
    """A resource's contents carried inline: give ``text`` or ``blob`` (bytes)."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    annotations: JSONObject | None = None

    def to_content(self) -> JSONObject:
        return _with_extras({"type": "resource", "resource": resource_contents(self.uri, self.text, self.blob, self.mime_type)},
                            self.annotations, None)


@dataclass(slots=True)
class ResourceLink:
    """A link to a resource the client may read later."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: JSONObject | None = None
    meta: JSONObject | None = field(default=None)

    def to_content(self) -> JSONObject:
        block: JSONObject = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.title is not None:
            block["title"] = self.title
        if self.description is not None:
            block["description"] = self.description
        if self.mime_type is not None:
            block["mimeType"] = self.mime_type
        if self.size is not None:
            block["size"] = self.size
        return _with_extras(block, self.annotations, self.meta)


def resource_contents(uri: str, text: str | None, blob: bytes | str | None, mime_type: str | None) -> JSONObject:
    contents: JSONObject = {"uri": uri}
    if mime_type is not None:
        contents["mimeType"] = mime_type
    if blob is not None:
        contents["blob"] = _b64(blob)
    else:
        contents["text"] = text if text is not None else ""
    return contents


ContentLike = Image | Audio | EmbeddedResource | ResourceLink


def is_content_block(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


def to_block(value: Any) -> JSONObject | None:
    """One content block for a helper object, a wire-shaped dict, or a string; else None."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Image | Audio | EmbeddedResource | ResourceLink):
        return value.to_content()
    if is_content_block(value):
        block: JSONObject = value
        return block
    return None
