"""mcpwire: Model Context Protocol servers over Streamable HTTP and stdio from one definition.

The public names are re-exported here. ``app.asgi`` (the default deployment) is built
lazily on first access so that importing the core never imports the transports.
"""

from __future__ import annotations

from typing import Any

from app.completions import Completion
from app.content import Audio, EmbeddedResource, Image, ResourceLink, text
from app.context import Context, ElicitResult
from app.errors import ClientError, ClientTimeout, MCPError, MissingClientCapability, ToolError
from app.header_params import param_header
from app.mrtr import InputRequired
from app.prompts import Message, assistant, user
from app.server import MCPServer
from app.tools import ToolResult

__all__ = [
    "Audio",
    "ClientError",
    "ClientTimeout",
    "Completion",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "Image",
    "InputRequired",
    "MCPError",
    "MCPServer",
    "Message",
    "MissingClientCapability",
    "ResourceLink",
    "ToolError",
    "ToolResult",
    "assistant",
    "param_header",
    "text",
    "user",
]


def __getattr__(name: str) -> Any:
    if name == "asgi":
        from app.deployment import build_asgi

        value = build_asgi()
        globals()["asgi"] = value
        return value
    raise AttributeError(f"module 'app' has no attribute {name!r}")
