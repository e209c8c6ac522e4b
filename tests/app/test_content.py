"""``wiremcp.content``: content blocks in wire shape: ``text``, the helper classes (``Image``, ``Audio``,
``EmbeddedResource``, ``ResourceLink``) a handler may return instead of writing the dicts, and
``to_block``, which turns what a handler returns into one block."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from wiremcp.content import (
    Audio,
    EmbeddedResource,
    Image,
    ResourceLink,
    is_content_block,
    resource_contents,
    text,
    to_block,
)

TOOLS = "2025-11-25/server/tools"


@pytest.mark.spec(f"{TOOLS}#text-content")
def test_text_with_annotations_and_meta_only_when_given() -> None:
    assert text("hi") == {"type": "text", "text": "hi"}
    assert text("hi", annotations={"priority": 1}, meta={"k": "v"}) == {
        "type": "text", "text": "hi", "annotations": {"priority": 1}, "_meta": {"k": "v"}}
    assert text("hi", annotations={}, meta={}) == {"type": "text", "text": "hi"}


@pytest.mark.spec(f"{TOOLS}#image-content")
@pytest.mark.spec(f"{TOOLS}#audio-content")
def test_binary_content_is_base64_unless_it_already_is() -> None:
    png = b"\x89PNG\r\n"
    assert Image(png).to_content() == {"type": "image", "data": base64.b64encode(png).decode(), "mimeType": "image/png"}
    assert Image("aGk=", "image/jpeg").to_content() == {"type": "image", "data": "aGk=", "mimeType": "image/jpeg"}
    assert Audio(b"RIFF", annotations={"audience": ["user"]}).to_content() == {
        "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": {"audience": ["user"]}}


@pytest.mark.spec(f"{TOOLS}#embedded-resources")
def test_an_embedded_resource_carries_text_or_a_blob() -> None:
    assert EmbeddedResource("file:///a.txt", text="A", mime_type="text/plain").to_content() == {
        "type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}}
    assert EmbeddedResource("file:///a.bin", blob=b"\x00\x01").to_content() == {
        "type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAE="}}
    assert resource_contents("file:///empty", None, None, None) == {"uri": "file:///empty", "text": ""}


@pytest.mark.spec(f"{TOOLS}#tool-result")
def test_a_resource_link_has_only_the_fields_given() -> None:
    assert ResourceLink("file:///a.txt", "a").to_content() == {"type": "resource_link", "uri": "file:///a.txt",
                                                               "name": "a"}
    assert ResourceLink("file:///a.txt", "a", title="A", description="The letter", mime_type="text/plain", size=0,
                        annotations={"priority": 0.5}, meta={"k": 1}).to_content() == {
        "type": "resource_link", "uri": "file:///a.txt", "name": "a", "title": "A", "description": "The letter",
        "mimeType": "text/plain", "size": 0, "annotations": {"priority": 0.5}, "_meta": {"k": 1}}


@pytest.mark.parametrize(("value", "block"), [
    ("hello", {"type": "text", "text": "hello"}),
    (Image("aGk="), {"type": "image", "data": "aGk=", "mimeType": "image/png"}),
    (ResourceLink("r://x", "x"), {"type": "resource_link", "uri": "r://x", "name": "x"}),
    ({"type": "audio", "data": "x", "mimeType": "audio/ogg"}, {"type": "audio", "data": "x", "mimeType": "audio/ogg"}),
    ({"type": "video", "data": "x"}, None),
    ({"text": "no type"}, None),
    (42, None),
    (None, None),
])
def test_to_block_takes_strings_helpers_and_wire_shaped_blocks_only(value: Any, block: Any) -> None:
    assert to_block(value) == block
    assert is_content_block(value) is (isinstance(value, dict) and block is not None)
