"""The protocol core stays free of the edges: only the composition root imports transports or auth."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"


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
    """The core imports no edge, not even inside a function: it reaches the composition root through the
    package's entry points (``wiremcp.serving``), so that no import, however late, closes a loop through it."""
    edges = {m for m in _imported_modules(path) if m.startswith(EDGES)}
    assert not edges, f"{path.name} imports {sorted(edges)}"


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


REDIS = "wiremcp.transports.redis"
"""The Redis implementations of the core's store interfaces and of its ``ReplicaLink``."""


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("path", sorted((APP.parent / "transports" / "redis").rglob("*.py")), ids=lambda p: p.name)
def test_the_redis_package_depends_on_the_core_only(path: Path) -> None:
    """The Redis package implements interfaces of the core (``SessionStore``, ``EventStore``, ``TaskStore``,
    ``SubscriptionBus``, ``ReplicaLink``): it imports the core and its own modules, no other transport, no auth."""
    wrong = {m for m in _imported_modules(path) if m.startswith(EDGES) and not _within(m, REDIS)}
    assert not wrong, f"transports/redis/{path.name} imports {sorted(wrong)}"


def test_only_the_composition_root_imports_the_redis_package() -> None:
    """The transports use the core's interfaces (``ReplicaLink``, the stores), whatever implements them: only
    the composition root names the Redis package, to build it when ``WIREMCP_REDIS_URL`` is set."""
    root = APP.parent / "transports" / "serving" / "deployment.py"
    package = APP.parent / "transports" / "redis"
    sources = [p for folder in ("app", "transports", "auth") for p in (APP.parent / folder).rglob("*.py")]
    offenders = {str(p.relative_to(APP.parent)): sorted(names) for p in sources
                 if p != root and package not in p.parents
                 and (names := {m for m in _imported_modules(p) if _within(m, REDIS)})}
    assert not offenders, offenders


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


SOURCES = ("app", "transports", "auth")
CLIENTS = ("transports/memory.py", "transports/upstream.py")
"""Clients: they choose the era they speak and write it into ``_meta``; they tell no inbound message's era."""


def _uses(path: Path, names: set[str]) -> set[str]:
    """The functions of ``path`` (``module`` at module level) that refer to any of ``names``."""
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if (isinstance(child, ast.Name) and child.id in names) or (
                    isinstance(child, ast.Attribute) and child.attr in names):
                found.add(where)
            visit(child, where)

    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            visit(node, node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else "module")
    return found


def _sources() -> list[Path]:
    return sorted(p for folder in SOURCES for p in (APP.parent / folder).rglob("*.py")
                  if p.relative_to(APP.parent).as_posix() not in CLIENTS)


def test_the_era_of_a_message_is_told_in_one_function() -> None:
    """``wiremcp.inbound.classify`` tells the eras apart, once per message, where a transport hands it in
    (``_meta``'s protocol version, or over HTTP the version header outside a session);
    everything after reads ``Inbound.stateless`` and ``Context.stateless``. The envelope's version is read
    again only to check it (``wiremcp.envelope``, and against its header in ``wiremcp.mirrored_headers``)."""
    told = {"META_VERSION", "is_stateless", "STATELESS_VERSIONS"}
    allowed = {"app/inbound.py": {"classify"}, "app/envelope.py": {"require_fields", "envelope"},
               "app/mirrored_headers.py": {"check"}, "app/protocol.py": {"module", "is_stateless"}}
    offenders = {rel: sorted(where - allowed.get(rel, set())) for p in _sources()
                 if (where := _uses(p, told)) - allowed.get(rel := p.relative_to(APP.parent).as_posix(), set())}
    assert not offenders, offenders


def _calls(path: Path, names: set[str]) -> list[int]:
    """The lines of ``path`` that call any of ``names`` (a function or a method)."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.Call) and (getattr(node.func, "id", None) in names
                                               or getattr(node.func, "attr", None) in names)]


def test_every_request_enters_the_core_through_one_function() -> None:
    """Every transport and era hands a classified request to ``wiremcp.entry.serve`` (a batch's requests
    too, through ``serve_batch``): only there is a ``Context`` built and the dispatcher asked."""
    offenders = {rel: lines for p in _sources()
                 if (rel := p.relative_to(APP.parent).as_posix()) != "app/entry.py"
                 and (lines := _calls(p, {"Context", "dispatch"}))}
    assert not offenders, offenders
    assert _calls(APP / "entry.py", {"Context", "dispatch"})


def _core_imports(path: Path) -> set[str]:
    """The core modules ``path`` imports when it runs (at module level or in a function), leaving out what it
    imports for type checking only (under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
                   for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "wiremcp":
                found.update(f"wiremcp.{a.name}" for a in node.names if (APP / f"{a.name}.py").exists())
            elif node.module.startswith("wiremcp."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("wiremcp."))
    return {m for m in found if not m.startswith(EDGES)}


def test_the_core_imports_no_module_that_imports_it_back() -> None:
    """The core's modules, as they run, form no import circle (type annotations aside): the server definition
    knows its ``Runtime``, the runtime the dispatcher and the task runner, and nothing below imports back."""
    graph = {f"wiremcp.{p.stem}": _core_imports(p) for p in APP.glob("*.py") if p.stem != "__init__"}
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for dependency in sorted(graph[module]):
            if dependency in path:
                cycles.append([*path[path.index(dependency):], dependency])
            elif len(path) < len(graph):
                visit(dependency, [*path, dependency])

    for start in sorted(graph):
        visit(start, [start])
    assert not cycles, cycles[:5]
