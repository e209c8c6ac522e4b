"""The smallest useful server: one tool that counts words and characters.

    wiremcp stdio examples.word_count:server
"""

from typing import TypedDict

from wiremcp import MCPServer

server = MCPServer("word_count", "1.0.0", title="Word count")


class Counts(TypedDict):
    words: int
    chars: int


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
def word_count(text: str) -> Counts:
    """Count the words and characters in a text."""
    return {"words": len(text.split()), "chars": len(text)}
