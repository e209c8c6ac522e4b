"""One import root: the folders ``app/``, ``transports/`` and ``auth/`` are the package ``wiremcp``; ``app``,
seen by its folder's name from the repository root, is only a door to it; the public names are a decision."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import wiremcp
import wiremcp.auth
import wiremcp.transports

ROOT = Path(__file__).resolve().parents[1]


def test_the_public_names() -> None:
    assert wiremcp.__all__ == [
        "Arg", "Audio", "AuditLog", "Backend", "Call", "CallNext", "ClientError", "ClientTimeout", "Completion", "CompletionError",
        "Context", "DefinitionError", "ElicitResult", "EmbeddedResource", "Image", "InputRequired", "InvalidParams",
        "MCPError", "MCPServer", "Message", "Middleware", "MissingClientCapability", "Principal", "PromptError",
        "RateLimit", "RateLimited", "ResourceError", "ResourceLink", "ResourceNotFound", "ResponseSizeLimit",
        "Runtime", "TaskSettings", "Timing", "ToolError", "ToolResult", "ToolSearch", "assistant", "param_header", "text", "user",
    ]
    assert wiremcp.transports.__all__ == ["Client", "ClientCredentials", "HttpOptions", "MCPHttpApp", "from_openapi",
                                          "remote", "serve_stdio"]
    assert wiremcp.auth.__all__ == [
        "WELL_KNOWN", "BearerAuth", "IntrospectionVerifier", "InvalidToken", "JWKSVerifier", "ProtectedResource", "StaticTokenVerifier", "TokenVerifier", "VerifierUnavailable",
    ]


def test_every_public_name_resolves_to_its_home() -> None:
    for package in (wiremcp, wiremcp.transports, wiremcp.auth):
        for name in package.__all__:
            value = getattr(package, name)
            home = getattr(value, "__module__", package.__name__)
            assert home.startswith(package.__name__), (package.__name__, name, home)


def test_the_wheel_maps_the_folders_under_one_root() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"wiremcp": "app", "wiremcp.transports": "transports", "wiremcp.auth": "auth"}
    assert {p.split(".")[0] for p in setuptools["packages"]} == {"wiremcp"}
    folders = {"wiremcp": "app", "wiremcp.transports": "transports", "wiremcp.auth": "auth"}
    found = {".".join([root, *p.parent.relative_to(ROOT / folder).parts])
             for root, folder in folders.items() for p in (ROOT / folder).rglob("__init__.py")}
    assert sorted(setuptools["packages"]) == sorted(found)  # no subpackage left out of the wheel


_DOOR = """
import importlib, sys
import app
import wiremcp
from wiremcp.transports.serving.loader import load_server
server = load_server("app.transports.serving.demo:server")
try:
    importlib.import_module("app.server")
except ModuleNotFoundError:
    second = "refused"
else:
    second = "loaded"
twice = sorted(n for n in sys.modules if n.startswith("app.") and "wiremcp." + n[4:] in sys.modules)
print(app.MCPServer is wiremcp.MCPServer, type(server) is wiremcp.MCPServer, app.asgi is wiremcp.asgi,
      second, twice, sorted(n for n in sys.modules if n.startswith("app.")))
"""


def test_app_from_the_repository_root_is_a_door_to_wiremcp_never_a_second_copy() -> None:
    """``uvicorn app:asgi`` from the repository root: ``app`` re-exports ``wiremcp``; ``app.transports.serving.demo:server``
    resolves to the ``wiremcp`` classes; no module is loaded under both names."""
    out = subprocess.run([sys.executable, "-c", _DOOR], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PATH": "/usr/bin:/bin", "WIREMCP_METRICS": "false"}).stdout.split("\n")[0]
    assert out == "True True True refused [] []"


def test_no_code_imports_the_folders_by_their_own_names() -> None:
    """Everything imports ``wiremcp.*``: a module imported as ``transports.x`` would be a second copy."""
    import ast

    offenders = []
    for folder in ("app", "transports", "auth", "examples", "tests", "bench", "deploy"):
        for path in (ROOT / folder).rglob("*.py"):
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue  # local tool environments (bench/.peers), not the project's code
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""] if node.level == 0 else ["(relative)"]
                else:
                    continue
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {name}" for name in names
                              if name.split(".")[0] in ("app", "transports", "auth")
                              or (name == "(relative)" and folder in ("app", "transports", "auth"))]
    assert not offenders, offenders


LINKS = {"wiremcp": "app", "app/transports": "../transports", "app/auth": "../auth"}
"""The folders as the import root names them: ``wiremcp/`` is ``app/``, and in it ``transports/`` and ``auth/``
are the edges' folders, so that a tool that finds ``wiremcp.x`` by folder name from the repository root (an
editor, a type checker or an import graph without the package installed) finds its file; the code stays where
it is, and the wheel is built from ``package-dir`` alone."""
SOURCES = ("app", "transports", "auth", "examples", "tests", "bench", "deploy")

_ORIGINS = """
import importlib.util, json, sys
print(json.dumps({name: importlib.util.find_spec(name).origin for name in sys.argv[1:]}))
"""


def _wiremcp_modules() -> set[str]:
    """Every ``wiremcp`` module that the repository's code imports by name."""
    import ast

    names: set[str] = set()
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue  # local tool environments (bench/.peers), not the project's code
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names.add(node.module)
    return {name for name in names if name.split(".")[0] == "wiremcp"}


def test_the_folders_are_linked_as_the_import_root_names_them() -> None:
    assert {link: str((ROOT / link).readlink()) for link in LINKS if (ROOT / link).is_symlink()} == LINKS
    assert {(ROOT / link).resolve() for link in LINKS} == {ROOT / "app", ROOT / "transports", ROOT / "auth"}


def test_every_wiremcp_import_finds_its_file_by_folder_name() -> None:
    """``wiremcp.a.b`` is ``wiremcp/a/b.py`` (or ``wiremcp/a/b/__init__.py``) from the repository root, with the
    text of the file that the installed package runs (imported from outside the repository)."""
    modules = sorted(_wiremcp_modules())
    assert "wiremcp.transports.serving.cli" in modules
    origins = json.loads(subprocess.run([sys.executable, "-c", _ORIGINS, *modules], capture_output=True, text=True,
                                        check=True, cwd="/", env={"PATH": "/usr/bin:/bin"}).stdout)
    unresolved, different = [], []
    for name in modules:
        place = ROOT.joinpath(*name.split("."))
        by_folder = next((p for p in (place.with_suffix(".py"), place / "__init__.py") if p.is_file()), None)
        if by_folder is None:
            unresolved.append(name)
        elif by_folder.read_bytes() != Path(origins[name]).read_bytes():
            different.append(f"{name}: {by_folder.relative_to(ROOT)} is not {origins[name]}")
    assert unresolved == [], "no file by folder name:\n" + "\n".join(unresolved)
    assert different == [], "\n".join(different)
