"""``wiremcp.definitions``: every decorator of ``MCPServer`` written bare or with options, what cannot be
registered as written refused in one ``DefinitionError`` line naming the ``file:line`` of the definition, and a
second component under a name or URI already registered refused naming both places, unless ``replace=True``."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from wiremcp import DefinitionError, MCPServer
from wiremcp.prompts import Prompt
from wiremcp.tools import Tool
from wiremcp.transports.memory import Client

HERE = __file__


def line_of(fn: Callable[..., Any]) -> str:
    """``file:line`` of ``fn``'s first line (its first decorator's)."""
    return f"{HERE}:{inspect.getsourcelines(fn)[1]}"


def refused(raised: pytest.ExceptionInfo[DefinitionError]) -> str:
    message = str(raised.value)
    assert "\n" not in message, message
    return message


# -- bare and with options ------------------------------------------------------------------------------------


async def test_a_bare_tool_and_a_bare_prompt_are_registered_and_served() -> None:
    server = MCPServer("s")

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.tool("twice", title="Twice")
    def double(x: int) -> int:
        return 2 * x

    assert add.__name__ == "add"  # the function itself, not a decorator
    assert list(server.tools) == ["add", "twice"]
    assert list(server.prompts) == ["greet"]
    async with Client(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["add", "twice"]
        assert (await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"] == {"result": 5}
        got = await client.get_prompt("greet", {"name": "Ada"})
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello Ada"}}]


def test_a_bare_resource_is_refused_at_the_function() -> None:
    server = MCPServer("s")
    with pytest.raises(DefinitionError) as raised:
        @server.resource  # type: ignore[arg-type]
        def notes() -> str:
            return ""
    message = refused(raised)
    assert re.fullmatch(re.escape(HERE) + r":\d+: resource .*notes: a resource needs its URI, as in "
                        r'@server\.resource\("notes://\{name\}"\)', message), message


def test_a_bare_completion_is_refused_saying_what_it_needs() -> None:
    server = MCPServer("s")
    with pytest.raises(DefinitionError) as raised:
        @server.completion
        def tones(value: str, arguments: dict[str, str]) -> list[str]:
            return []
    assert refused(raised).startswith(f"{HERE}:")
    assert "completion: give argument= and exactly one of prompt= or resource_template=" in str(raised.value)


# -- misuse -------------------------------------------------------------------------------------------------------


def _generator() -> Iterator[str]:
    yield "x"


async def _async_generator() -> AsyncIterator[str]:
    yield "x"


@pytest.mark.parametrize(("register", "says"), [
    (lambda s: s.tool()(42), "tool: 42 is not a function"),
    (lambda s: s.prompt()("hello"), "prompt: 'hello' is not a function"),
    (lambda s: s.resource("r://x")(None), "resource: None is not a function"),
    (lambda s: s.tool(42), "tool: its name must be a string, not 42"),
    (lambda s: s.tool(name=42), "tool: its name must be a string, not 42"),
    (lambda s: s.prompt(b"p"), "prompt: its name must be a string, not b'p'"),
    (lambda s: s.tool()(_generator), "tool _generator: a generator function (it yields)"),
    (lambda s: s.prompt()(_async_generator), "prompt _async_generator: a generator function (it yields)"),
    (lambda s: s.resource(42), "resource: its URI must be a string, not 42"),
    (lambda s: s.completion(argument="a", prompt="p")(lambda: []), "takes (value, arguments)"),
    (lambda s: s.completion(argument="a")(lambda v, a: []), "exactly one of prompt= or resource_template="),
    (lambda s: s.add_middleware(42), "middleware 42 is not callable"),
    (lambda s: s.mount(42), "mount: 42 is not an MCPServer"),
])
def test_a_misuse_is_one_definition_error_naming_the_file_and_line(register: Callable[[MCPServer], Any],
                                                                     says: str) -> None:
    with pytest.raises(DefinitionError) as raised:
        register(MCPServer("s"))
    message = refused(raised)
    assert message.startswith(f"{HERE}:"), message
    assert says in message, message


def test_a_misused_function_is_located_at_its_own_line() -> None:
    with pytest.raises(DefinitionError) as raised:
        MCPServer("s").tool()(_generator)
    assert refused(raised).startswith(f"{line_of(_generator)}: tool _generator: ")


# -- duplicates ----------------------------------------------------------------------------------------------------


def test_a_second_tool_of_a_name_is_refused_naming_both_places() -> None:
    server = MCPServer("s")

    @server.tool
    def add(a: int) -> int:
        return a

    def plus(a: int) -> int:
        return a + 1

    with pytest.raises(DefinitionError) as raised:
        server.tool(name="add")(plus)
    assert refused(raised) == (f"{line_of(plus)}: tool add is already defined at {line_of(add)}; give one another "
                               "name, or pass replace=True to replace it")
    assert server.tools["add"]._fn is add

    @server.tool(name="add", replace=True)
    def replacing(a: int) -> int:
        return a + 2

    assert server.tools["add"]._fn is replacing


def test_duplicate_prompts_resources_templates_completions_and_views_are_refused_unless_replaced() -> None:
    server = MCPServer("s")
    server.prompt("p")(lambda: "one")
    server.resource("r://a")(lambda: "one")
    server.resource("r://{x}")(lambda x: x)
    server.completion(prompt="p", argument="a")(lambda v, a: [])
    server.app("ui://v", "<p>one</p>")
    attempts: list[tuple[Callable[[], object], str]] = [(lambda: server.prompt("p")(lambda: "two"), "prompt p"),
                        (lambda: server.resource("r://a")(lambda: "two"), "resource r://a"),
                        (lambda: server.resource("r://{x}")(lambda x: x), "resource template r://{x}"),
                        (lambda: server.completion(prompt="p", argument="a")(lambda v, a: []), "completion of a for p"),
                        (lambda: server.app("ui://v", "<p>two</p>"), "resource ui://v"),
                        (lambda: server.add_prompt(Prompt(lambda: "x", name="p")), "prompt p")]
    for again, kind in attempts:
        with pytest.raises(DefinitionError) as raised:
            again()
        message = refused(raised)
        assert re.fullmatch(re.escape(HERE) + r":\d+: " + re.escape(kind) + r" is already defined at "
                            + re.escape(HERE) + r":\d+; give one another \w+, or pass replace=True to replace it",
                            message), message
    server.prompt("p", replace=True)(lambda: "two")
    server.resource("r://a", replace=True)(lambda: "two")
    server.resource("r://{x}", replace=True)(lambda x: x)
    server.completion(prompt="p", argument="a", replace=True)(lambda v, a: ["two"])
    server.app("ui://v", "<p>two</p>", replace=True)
    server.add_tool(Tool(lambda: 1, name="t"))
    server.add_tool(Tool(lambda: 2, name="t"), replace=True)
    with pytest.raises(DefinitionError, match="tool t is already defined"):
        server.add_tool(Tool(lambda: 3, name="t"))


def test_a_second_mount_names_the_first() -> None:
    parent, child = MCPServer("parent"), MCPServer("child")
    parent.mount(child, "c"); first = inspect.currentframe().f_lineno  # type: ignore[union-attr]  # noqa: E702
    with pytest.raises(DefinitionError) as raised:
        parent.mount(child, "d")
    assert refused(raised).endswith(f"is mounted already at {HERE}:{first}; pass replace=True to replace that mount")
