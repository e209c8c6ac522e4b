"""How the core reaches the composition root without importing it: the installed package declares the
root's parts as entry points (group ``wiremcp.serving``, in ``pyproject.toml``), and the core finds them by
name through the package's metadata. ``MCPServer.run`` asks for ``run`` and ``wiremcp.asgi`` for ``asgi``;
both are ``wiremcp.transports.serving.deployment``'s, which no module of the core imports.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

GROUP = "wiremcp.serving"


def part(name: str) -> Any:
    """The composition root's part the installed package declares under ``name`` (loaded on first use)."""
    for entry in entry_points(group=GROUP, name=name):
        return entry.load()
    raise RuntimeError(f"no {GROUP!r} entry point {name!r}: wiremcp is not installed as a package "
                       "(pip install wiremcp, or pip install -e . in a checkout)")
