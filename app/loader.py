"""Find a server given as ``MODULE:ATTR``."""

from __future__ import annotations

import importlib
import os
import sys

from app.server import MCPServer


def load_server(spec: str) -> MCPServer:
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ValueError(f"expected MODULE:ATTR, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # like uvicorn: modules in the working directory are found
    module = importlib.import_module(module_name)
    obj = getattr(module, attr or "server", None)
    if obj is None:
        raise ValueError(f"module {module_name!r} has no attribute {attr or 'server'!r}")
    if callable(obj) and not isinstance(obj, MCPServer):
        obj = obj()
    if not isinstance(obj, MCPServer):
        raise TypeError(f"{spec} is a {type(obj).__name__}, not an MCPServer")
    return obj
