"""``wiremcp.composition``: the core finds what serves it through the installed package's entry points, by name, and
imports no module of the edges itself (``tests/test_architecture.py`` holds it to that)."""

from __future__ import annotations

import pytest

from wiremcp.composition import part
from wiremcp.transports.serving import deployment


def test_the_installed_package_declares_the_composition_roots_run_and_asgi() -> None:
    assert part("run") is deployment.run
    assert part("asgi") is deployment.default_asgi


def test_an_undeclared_name_says_how_to_install_the_package() -> None:
    with pytest.raises(RuntimeError, match=r"no 'wiremcp.serving' entry point 'nothing': wiremcp is not installed"):
        part("nothing")
