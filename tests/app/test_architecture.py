"""The protocol core stays free of the edges: only the composition root imports transports or auth."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


EDGES = ("wiremcp.transports", "wiremcp.auth")
COMPOSITION_ROOT = "wiremcp.transports.serving.deployment"
"""The one module that wires the edges around the core; the core loads it lazily, to serve."""
ENTRY_POINT = "__main__.py"
"""``python -m wiremcp``: the command line's entry, not a part of the core."""


def _module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(p for p in APP.rglob("*.py") if p.name != ENTRY_POINT),
                         ids=lambda p: p.relative_to(APP).as_posix())
def test_core_module_imports_no_edge(path: Path) -> None:
    """The core imports no edge; only inside a function, and only the composition root, to serve."""
    edges = {m for m in _imported_modules(path) if m.startswith(EDGES)}
    assert not {m for m in _module_level_imports(path) if m.startswith(EDGES)}, f"{path.name} imports {sorted(edges)}"
    assert edges <= {COMPOSITION_ROOT}, f"{path.name} imports {sorted(edges - {COMPOSITION_ROOT})}"


COMPOSITION = ("wiremcp.transports.serving",)
"""The composition root, settings and the command line: they import the edges, so no edge may import them."""


@pytest.mark.parametrize("path", sorted((APP.parent / "auth").rglob("*.py")), ids=lambda p: p.name)
def test_auth_depends_on_the_core_only(path: Path) -> None:
    """Authentication is ASGI middleware over the core's ``Principal``: it imports no transport."""
    wrong = {m for m in _imported_modules(path) if m.startswith(("wiremcp.transports", *COMPOSITION))}
    assert not wrong, f"auth/{path.name} imports {sorted(wrong)}"


@pytest.mark.parametrize("path", sorted(p for p in (APP.parent / "transports").rglob("*.py") if "serving" not in p.parts),
                         ids=lambda p: p.name)
def test_transports_depend_on_the_core_and_not_on_auth(path: Path) -> None:
    """A transport reads who is calling from the core's ``Principal`` in the ASGI scope, whoever put it there."""
    wrong = {m for m in _imported_modules(path) if m.startswith(("wiremcp.auth", *COMPOSITION))}
    assert not wrong, f"transports/{path.name} imports {sorted(wrong)}"


def test_importing_auth_loads_no_transport() -> None:
    code = ("import sys, wiremcp.auth.middleware, wiremcp.auth.jwt_verifier, wiremcp.auth.introspection\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith('wiremcp.transports'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=APP.parent).stdout.strip()
    assert out == ""


def test_importing_the_core_loads_no_transport() -> None:
    code = (
        "import sys, wiremcp, wiremcp.server, wiremcp.dispatcher, wiremcp.logs\n"
        "edges = ('wiremcp.transports', 'wiremcp.auth', 'uvicorn', 'starlette', 'prometheus_client', 'opentelemetry')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(edges))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=APP.parent).stdout.strip()
    assert out == ""


def test_asgi_is_built_lazily_from_the_composition_root() -> None:
    code = "import wiremcp, sys\nasgi = wiremcp.asgi\nprint('wiremcp.transports.http_app' in sys.modules, callable(asgi))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=APP.parent).stdout.strip()
    assert out == "True True"


def test_the_default_deployment_loads_no_redis_client_unless_configured() -> None:
    """``app:asgi`` without ``WIREMCP_REDIS_URL`` starts without importing redis (cold start)."""
    code = "import sys, wiremcp\nwiremcp.asgi\nprint(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'redis')))\n"
    env = {k: v for k, v in os.environ.items() if k != "WIREMCP_REDIS_URL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=APP.parent, env=env).stdout.strip()
    assert out == ""


def test_every_access_decision_is_made_in_app_access() -> None:
    """Components' scopes are checked in one module that every method goes through (``app/access.py``):
    no other module of the core or the transports calls ``authorize`` or imports ``wiremcp.scopes``."""
    offenders = []
    for path in sorted([*APP.glob("*.py"), *(APP.parent / "transports").glob("*.py")]):
        if path.name in ("access.py", "scopes.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            calls = isinstance(node, ast.Name | ast.Attribute) and "authorize" in (
                getattr(node, "id", None), getattr(node, "attr", None))
            imports = isinstance(node, ast.ImportFrom) and node.module == "wiremcp.scopes"
            if calls or imports:
                offenders.append(f"{path.parent.name}/{path.name}:{getattr(node, 'lineno', 0)}")
    assert not offenders, offenders


MAX_LINES = 400
"""Past this, a module is asking to be split: one concept per module."""


def test_no_module_is_over_the_limit() -> None:
    sources = [p for folder in ("app", "transports", "auth") for p in (APP.parent / folder).rglob("*.py")]
    long = {str(p.relative_to(APP.parent)): n for p in sources if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long
