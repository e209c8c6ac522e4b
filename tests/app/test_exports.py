"""``wiremcp.exports``: ``lazy_exports``, a package's public names each imported from its module on first
use (PEP 562), so that importing the package loads none of them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import wiremcp.transports
from wiremcp.exports import lazy_exports

PACKAGE = "lazy_exports_example"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package on ``sys.path`` re-exporting ``VALUE`` from its module ``heavy`` (which says when it loads)."""
    root = tmp_path / PACKAGE
    root.mkdir()
    (root / "__init__.py").write_text(
        "from wiremcp.exports import lazy_exports\n\n"
        "__getattr__ = lazy_exports(__name__, {'VALUE': 'heavy'})\n")
    (root / "heavy.py").write_text("import sys\n\nsys.modules[__name__.rsplit('.', 1)[0]].loaded = True\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield PACKAGE
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_a_name_is_imported_from_its_module_on_first_use_only(package: str) -> None:
    module = importlib.import_module(package)
    assert f"{package}.heavy" not in sys.modules
    assert not hasattr(module, "loaded")
    assert module.VALUE == 42
    assert module.loaded is True
    assert module.__dict__["VALUE"] == 42  # kept: the next use does not go through __getattr__ again


def test_a_name_it_does_not_export_is_an_attribute_error(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'OTHER'"):
        _ = module.OTHER
    assert f"{package}.heavy" not in sys.modules


def test_the_getattr_it_makes_resolves_the_projects_own_names() -> None:
    getattr_ = lazy_exports("wiremcp.transports", {"Client": "memory"})
    from wiremcp.transports.memory import Client

    assert getattr_("Client") is Client
    assert wiremcp.transports.Client is Client
