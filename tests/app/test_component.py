"""``wiremcp.component``: what tools, resources and prompts have in common: a user function with its
name, title, description (by default its docstring), icons, ``_meta`` and scopes; its parameters less the
``Context``; how it is called (sync functions on a worker thread, the context passed if it wants it)."""

from __future__ import annotations

import threading

from wiremcp.component import Component
from wiremcp.context import Context


def _component(fn: object, **fields: object) -> Component:
    values: dict[str, object] = {"name": None, "title": None, "description": None, "icons": None, "meta": None,
                                 "scopes": None, **fields}
    return Component(fn, **values)  # type: ignore[arg-type]


def summarize(text: str, ctx: Context, limit: int = 3) -> str:
    """Summarize a text.

    In a few words."""
    return " ".join(text.split()[:limit])


def test_the_defaults_come_from_the_function() -> None:
    component = _component(summarize)
    assert component.name == "summarize"
    assert component.description == "Summarize a text.\n\nIn a few words."
    assert (component.title, component.icons, component.meta, component.scopes) == (None, None, None, [])


def test_given_fields_win_and_only_those_set_are_described() -> None:
    icons = [{"src": "https://example.com/icon.png"}]
    component = _component(summarize, name="short", title="Short", description="Shorten.", icons=icons,
                           meta={"x": 1}, scopes=["mcp:tools"])
    assert (component.name, component.scopes) == ("short", ["mcp:tools"])
    assert component._describe({"name": "short"}) == {"name": "short", "title": "Short", "description": "Shorten.",
                                                      "icons": icons, "_meta": {"x": 1}}
    assert _component(summarize, description="")._describe({"name": "summarize"}) == {"name": "summarize"}

    def undocumented() -> None:
        return None

    assert _component(undocumented).description is None


def test_the_context_is_not_a_parameter() -> None:
    assert [p.name for p in _component(summarize)._parameters()] == ["text", "limit"]


async def test_a_sync_function_runs_where_it_is_marked_to_and_gets_the_context_it_asks_for() -> None:
    calls: list[tuple[str, object, bool]] = []
    loop_thread = threading.get_ident()
    marker = object()

    def sync(text: str, ctx: Context) -> str:
        calls.append((text, ctx, threading.get_ident() == loop_thread))
        return text.upper()

    async def without_context(text: str) -> str:
        calls.append((text, None, threading.get_ident() == loop_thread))
        return text[::-1]

    assert await _component(sync)._invoke({"text": "hi"}, marker) == "HI"
    assert await _component(sync, blocking=True)._invoke({"text": "ho"}, marker) == "HO"
    assert await _component(without_context)._invoke({"text": "abc"}, marker) == "cba"
    # not marked: on the loop's thread; marked blocking: on a worker's
    assert calls == [("hi", marker, True), ("ho", marker, False), ("abc", None, True)]
