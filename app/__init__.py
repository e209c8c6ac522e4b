"""wiremcp: Model Context Protocol servers over Streamable HTTP and stdio from one definition.

The public names are re-exported here. ``wiremcp.asgi`` (the default deployment) is built
lazily on first access so that importing the core never imports the transports.

This folder (``app/`` in the repository) is the package ``wiremcp``. Imported by its folder's name,
as ``uvicorn app:asgi`` does from the repository root, it is only a door to ``wiremcp``: the same
objects, and no submodule can be found under the name ``app``, so no module is ever loaded twice.
"""

from __future__ import annotations

from typing import Any

from wiremcp.audit import AuditLog
from wiremcp.backend import Backend
from wiremcp.completions import Completion
from wiremcp.content import Audio, EmbeddedResource, Image, ResourceLink, text
from wiremcp.context import Context, ElicitResult
from wiremcp.errors import (
    ClientError,
    ClientTimeout,
    CompletionError,
    DefinitionError,
    InvalidParams,
    MCPError,
    MissingClientCapability,
    PromptError,
    RateLimited,
    ResourceError,
    ResourceNotFound,
    ToolError,
)
from wiremcp.header_params import param_header
from wiremcp.input_required import InputRequired
from wiremcp.middleware import Call, CallNext, Middleware
from wiremcp.principal import Principal
from wiremcp.prompts import Message, assistant, user
from wiremcp.rate_limits import RateLimit
from wiremcp.response_limit import ResponseSizeLimit
from wiremcp.runtime import Runtime
from wiremcp.server import MCPServer
from wiremcp.task_runner import TaskSettings
from wiremcp.timing import Timing
from wiremcp.tool_search import ToolSearch
from wiremcp.tools import ToolResult
from wiremcp.transforms import Arg

__all__ = [
    "Arg",
    "Audio",
    "AuditLog",
    "Backend",
    "Call",
    "CallNext",
    "ClientError",
    "ClientTimeout",
    "Completion",
    "CompletionError",
    "Context",
    "DefinitionError",
    "ElicitResult",
    "EmbeddedResource",
    "Image",
    "InputRequired",
    "InvalidParams",
    "MCPError",
    "MCPServer",
    "Message",
    "Middleware",
    "MissingClientCapability",
    "Principal",
    "PromptError",
    "RateLimit",
    "RateLimited",
    "ResourceError",
    "ResourceLink",
    "ResourceNotFound",
    "ResponseSizeLimit",
    "Runtime",
    "TaskSettings",
    "Timing",
    "ToolError",
    "ToolResult",
    "ToolSearch",
    "assistant",
    "param_header",
    "text",
    "user",
]


def __getattr__(name: str) -> Any:
    if name != "asgi":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import wiremcp

    if wiremcp.__dict__ is not globals():  # the door: the one deployment of the process
        return wiremcp.asgi
    from wiremcp import composition

    value = globals()["asgi"] = composition.part("asgi")()  # the composition root's default deployment
    return value


if __name__ != "wiremcp":
    __path__.clear()  # the door has no submodules: ``app.server`` is never a second ``wiremcp.server``
