"""The documentation site's MkDocs hook: the reference pages generated from the code as the site is built.

A page's ``<!-- generated: cli -->`` becomes the ``--help`` of the ``wiremcp`` command and of each of its
subcommands, from the command's own parser (built, not run); ``<!-- generated: settings -->`` becomes a table
of every ``WIREMCP_*`` setting, from ``Settings``' fields: the variable, its type, its default and the
field's docstring; ``<!-- generated: api -->`` becomes a mkdocstrings directive for each name the public
packages export. So no page can say something the code does not.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from wiremcp.transports.serving import settings as settings_module
from wiremcp.transports.serving.cli import parser as command_parser
from wiremcp.transports.serving.settings import PREFIX, Settings

HELP_WIDTH = 100
"""The width the help is wrapped to, whatever the terminal that builds the site."""

TYPES = {"str": "text", "int": "integer", "float": "number", "bool": "true or false",
         "tuple[str, ...]": "list"}
"""How a field's annotation reads in the table."""


def cli_reference() -> str:
    """The help of ``wiremcp`` and of each subcommand, in the parser's order, each under its own heading."""
    top = command_parser()
    (commands,) = (a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    sections = [("wiremcp", top), *((f"wiremcp {name}", sub) for name, sub in commands.choices.items())]
    return "\n".join(f"## `{title}`\n\n```text\n{_help(parser)}```\n" for title, parser in sections)


def _help(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=HELP_WIDTH)
    return parser.format_help()


def settings_reference() -> str:
    """A Markdown table: one row per setting, in ``Settings``' order."""
    docstrings = _field_docstrings()
    defaults = Settings()
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for field in fields(Settings):
        kind = TYPES.get(str(field.type), str(field.type))
        if field.name not in docstrings:  # the page would have a row that says nothing
            raise ValueError(f"Settings.{field.name} has no docstring to say what {PREFIX}{field.name.upper()} does")
        meaning = _markdown(docstrings[field.name])
        rows.append(f"| `{PREFIX}{field.name.upper()}` | {kind} | {_default(getattr(defaults, field.name))} "
                    f"| {meaning} |")
    return "\n".join(rows) + "\n"


def _field_docstrings() -> dict[str, str]:
    """Each field's docstring: the string right after its annotated assignment in ``Settings``' source."""
    (cls,) = (node for node in ast.parse(inspect.getsource(settings_module)).body
              if isinstance(node, ast.ClassDef) and node.name == Settings.__name__)
    found = {}
    for assignment, after in zip(cls.body, cls.body[1:], strict=False):
        if (isinstance(assignment, ast.AnnAssign) and isinstance(assignment.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            found[assignment.target.id] = inspect.cleandoc(after.value.value)
    return found


def _default(value: object) -> str:
    if value in ("", ()):
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return "`" + ",".join(value) + "`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def _markdown(docstring: str) -> str:
    """A docstring as one table cell: reST's double backticks as Markdown's, one line, no bare ``|``."""
    return re.sub(r"\s+", " ", docstring.replace("``", "`")).replace("|", "\\|").strip()


API_PACKAGES = ("wiremcp", "wiremcp.transports", "wiremcp.auth")
"""The packages whose exported names (their ``__all__``) the API reference documents."""


def api_reference() -> str:
    """A mkdocstrings directive for each name each package exports, in ``__all__``'s order, each pointing at
    the module that defines it (the edges export lazily, which a static reader would not follow)."""
    sections = []
    for package in API_PACKAGES:
        exported = importlib.import_module(package).__all__
        directives = [f"::: {_home(package, name)}.{name}\n" for name in exported]
        sections.append(f"## `{package}`\n\n" + "\n".join(directives))
    return "\n".join(sections)


def _home(package: str, name: str) -> str:
    """The module of ``package`` that defines ``name``: its ``__module__``, or the module holding that object."""
    value = getattr(importlib.import_module(package), name)
    module = getattr(value, "__module__", None)
    if isinstance(module, str) and module.startswith(package + ".") and name in vars(sys.modules[module]):
        return module
    holders = sorted(m for m, loaded in list(sys.modules.items()) if m.startswith(package + ".")
                     and vars(loaded).get(name) is value and "__init__" not in (loaded.__file__ or ""))
    return holders[0] if holders else package


GENERATED: dict[str, Callable[[], str]] = {"cli": cli_reference, "settings": settings_reference,
                                           "api": api_reference}
"""What each ``<!-- generated: NAME -->`` marker is replaced with."""


def on_page_markdown(markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files, **_: Any) -> str:
    """MkDocs' hook: each generated marker of a page replaced by what its function makes; an unknown one fails
    the build, as a page would be left with a hole."""
    def replace(marker: re.Match[str]) -> str:
        name = marker.group(1)
        if name not in GENERATED:
            raise ValueError(f"{page.file.src_path}: no generator for <!-- generated: {name} -->")
        return GENERATED[name]()

    return re.sub(r"<!-- generated: ([\w-]+) -->", replace, markdown)
