"""Prompts: arguments from the signature, validation, rendered messages."""

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from tests.support.failures import masked_error
from wiremcp import Context, EmbeddedResource, Image, MCPError, MCPServer, assistant, user
from wiremcp.errors import INVALID_PARAMS
from wiremcp.prompts import Prompt
from wiremcp.transports.memory import Client


class Note(BaseModel):
    text: str


def _server() -> MCPServer:
    server = MCPServer("p")

    @server.prompt(title="Review code")
    def review(code: Annotated[str, Field(description="The code to review")],
               language: str = Field("python", description="Its language"), focus: str = "") -> str:
        """Ask for a code review."""
        return f"Review this {language} code{' for ' + focus if focus else ''}:\n{code}"

    @server.prompt()
    async def dialogue(topic: str, ctx: Context) -> list[Any]:
        return [user(f"Tell me about {topic}"), assistant("Sure."),
                {"role": "user", "content": {"type": "text", "text": f"({ctx.method})"}},
                {"role": "assistant", "content": "plain string content"}]

    @server.prompt()
    def rich() -> list[Any]:
        return [user(Image(b"img", "image/jpeg")), user(EmbeddedResource("test://doc", text="doc body")), Note(text="n")]

    @server.prompt()
    def simple() -> str:
        return "Just a message"

    @server.prompt()
    def failing() -> str:
        raise RuntimeError("secret detail")

    @server.prompt()
    def bad_content() -> Any:
        return 42

    return server


@pytest.mark.spec("2025-11-25/server/prompts#listing-prompts")
async def test_arguments_from_signature() -> None:
    async with Client(_server()) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
    assert prompts["review"] == {
        "name": "review",
        "title": "Review code",
        "description": "Ask for a code review.",
        "arguments": [
            {"name": "code", "description": "The code to review", "required": True},
            {"name": "language", "description": "Its language", "required": False},
            {"name": "focus", "required": False},
        ],
    }
    # the context parameter is not an argument
    assert prompts["dialogue"]["arguments"] == [{"name": "topic", "required": True}]
    assert "arguments" not in prompts["simple"]


def test_required_field_without_default() -> None:
    def p(a: str = Field(description="needed")) -> str:
        return a

    assert Prompt(p).arguments == [{"name": "a", "description": "needed", "required": True}]


def test_variadic_parameters_are_rejected() -> None:
    def p(*args: str) -> str:
        return ""

    with pytest.raises(TypeError):
        Prompt(p)


@pytest.mark.spec("2025-11-25/server/prompts#getting-a-prompt")
async def test_get_renders_messages() -> None:
    async with Client(_server()) as client:
        result = await client.get_prompt("review", {"code": "print(1)", "focus": "style"})
    assert result == {
        "description": "Ask for a code review.",
        "messages": [{"role": "user", "content": {"type": "text",
                                                  "text": "Review this python code for style:\nprint(1)"}}],
    }


async def test_field_default_is_used_when_the_argument_is_omitted() -> None:
    async with Client(_server()) as client:
        result = await client.get_prompt("review", {"code": "x"})
    assert result["messages"][0]["content"]["text"] == "Review this python code:\nx"


async def test_message_shapes() -> None:
    async with Client(_server()) as client:
        dialogue = await client.get_prompt("dialogue", {"topic": "owls"})
        rich = await client.get_prompt("rich")
        simple = await client.get_prompt("simple")
    assert dialogue["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Tell me about owls"}},
        {"role": "assistant", "content": {"type": "text", "text": "Sure."}},
        {"role": "user", "content": {"type": "text", "text": "(prompts/get)"}},
        {"role": "assistant", "content": {"type": "text", "text": "plain string content"}},
    ]
    assert rich["messages"] == [
        {"role": "user", "content": {"type": "image", "data": "aW1n", "mimeType": "image/jpeg"}},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "test://doc", "text": "doc body"}}},
        {"role": "user", "content": {"type": "text", "text": '{"text":"n"}'}},
    ]
    assert simple == {"messages": [{"role": "user", "content": {"type": "text", "text": "Just a message"}}]}


@pytest.mark.spec("2025-11-25/server/prompts#error-handling")
@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("review", {}, "Missing required arguments for prompt review: code"),
        ("review", {"language": "go"}, "code"),
        ("review", {"code": "x", "extra": "y"}, "Unknown argument for prompt review: extra"),
        ("review", {"code": 5}, "must be a string"),
        ("nope", {}, "Unknown prompt: nope"),
    ],
)
async def test_invalid_get_is_invalid_params(name: str, arguments: dict[str, Any], fragment: str) -> None:
    async with Client(_server()) as client:
        response = await client.request_raw("prompts/get", {"name": name, "arguments": arguments})
    assert response["error"]["code"] == INVALID_PARAMS
    assert fragment in response["error"]["message"]


@pytest.mark.parametrize("params", [{"name": "simple", "arguments": ["a"]}, {"arguments": {}}, {"name": ""}])
async def test_malformed_get_params(params: dict[str, Any]) -> None:
    async with Client(_server()) as client:
        response = await client.request_raw("prompts/get", params)
    assert response["error"]["code"] == INVALID_PARAMS


@pytest.mark.spec("2025-11-25/server/prompts#error-handling")
@pytest.mark.parametrize("name", ["failing", "bad_content"])
async def test_a_failing_prompt_is_an_internal_error_without_details(name: str) -> None:
    async with Client(_server()) as client:
        response = await client.request_raw("prompts/get", {"name": name})
    masked_error(response["error"], f"Error rendering prompt {name}")


async def test_remove_prompt() -> None:
    server = _server()
    server.remove_prompt("simple")
    async with Client(server) as client:
        names = [p["name"] for p in await client.list_prompts()]
    assert "simple" not in names
    with pytest.raises(KeyError):
        server.remove_prompt("simple")


async def test_a_prompt_given_its_arguments_takes_them_as_keywords() -> None:
    """``Prompt(arguments=...)``: the arguments as listed (a gateway's remote prompt), checked as any prompt's."""
    async def render(**arguments: str) -> str:
        return ", ".join(f"{key}={value}" for key, value in sorted(arguments.items()))

    server = MCPServer("t")
    server.add_prompt(Prompt(render, name="remote", arguments=[
        {"name": "first-name", "description": "Not an identifier", "required": True}, {"name": "tone"}]))
    async with Client(server) as client:
        (listed,) = await client.list_prompts()
        got = await client.get_prompt("remote", {"first-name": "Ada"})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("remote", {"tone": "warm"})
    assert listed["arguments"] == [{"name": "first-name", "description": "Not an identifier", "required": True},
                                   {"name": "tone", "required": False}]
    assert got["messages"][0]["content"]["text"] == "first-name=Ada"
    assert missing.value.code == INVALID_PARAMS


def test_a_prompt_given_its_arguments_needs_a_function_that_takes_them_all() -> None:
    def fixed(name: str) -> str:
        return name

    with pytest.raises(TypeError, match="takes them as \\*\\*arguments"):
        Prompt(fixed, arguments=[{"name": "name"}])
    with pytest.raises(TypeError, match="an object with a name"):
        Prompt(lambda **kw: "", arguments=[{"description": "no name"}])
