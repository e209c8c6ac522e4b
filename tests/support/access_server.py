"""The server of ``tests/e2e/test_access.py``: one component of each kind (a skill too) behind the scope ``secret:use``,
its public twin, completions for both prompts and both templates, and a tool that announces resource updates.

Served by ``uvicorn app:asgi`` with static tokens (``WIREMCP_AUTH_STATIC_TOKENS``) for one subject, ``alice``,
under two tokens: ``wide`` holds ``secret:use``, ``narrow`` does not.
"""

from __future__ import annotations

from wiremcp import Context, MCPServer

SCOPE = "secret:use"
server = MCPServer("access", "1.0.0")


@server.tool(scopes=[SCOPE], task_support="optional")
async def secret_tool() -> str:
    """Needs secret:use; may run as a task (both eras)."""
    return "secret answer"


@server.tool(task_support="optional")
async def public_tool() -> str:
    """Anyone may call it, as a task too."""
    return "public answer"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announce that the resource at ``uri`` changed."""
    ctx.server.resource_updated(uri)
    return f"touched {uri}"


@server.prompt(scopes=[SCOPE])
async def secret_prompt(topic: str) -> str:
    """Needs secret:use."""
    return f"secret {topic}"


@server.prompt()
async def public_prompt(topic: str) -> str:
    return f"public {topic}"


@server.resource("secret://doc", scopes=[SCOPE])
def secret_doc() -> str:
    return "secret doc"


@server.resource("secret://docs/{id}", scopes=[SCOPE])
def secret_docs(id: str) -> str:
    return f"secret doc {id}"


@server.resource("public://doc")
def public_doc() -> str:
    return "public doc"


@server.resource("public://docs/{id}")
def public_docs(id: str) -> str:
    return f"public doc {id}"


server.add_skill("---\nname: vault\ndescription: Needs secret:use.\n---\nOpen the vault.\n",
                 files={"docs/combination.md": "12-34-56"}, prefix="secret", scopes=[SCOPE])
server.add_skill("---\nname: lobby\ndescription: Anyone may read it.\n---\nWait here.\n", prefix="public")


@server.completion(prompt="secret_prompt", argument="topic")
@server.completion(prompt="public_prompt", argument="topic")
@server.completion(resource_template="secret://docs/{id}", argument="id")
@server.completion(resource_template="public://docs/{id}", argument="id")
def complete(value: str, arguments: dict[str, str]) -> list[str]:
    return [value + "1", value + "2"]
