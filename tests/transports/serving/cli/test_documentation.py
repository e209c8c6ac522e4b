"""The documentation's address the command's help gives is the one the package publishes and the site is built
for, and each page the help names is a page of the site."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from wiremcp.transports.serving.cli import parser
from wiremcp.transports.serving.cli.documentation import SITE, page

ROOT = Path(__file__).resolve().parents[4]


def test_the_address_is_the_packages_and_the_sites() -> None:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert urls["Documentation"] == SITE == site["site_url"]
    assert urls["Changelog"] == page("changelog/")
    assert urls["Source"] == site["repo_url"]


def test_the_help_of_the_command_and_of_each_subcommand_points_to_a_page_that_exists() -> None:
    top = parser()
    helps = [top.format_help(), *(sub.format_help() for sub in top._subparsers._group_actions[0].choices.values())]  # type: ignore[union-attr]
    assert SITE in helps[0]
    for text in helps:
        for address in (word.rstrip(".,)") for word in text.split() if word.startswith(SITE)):
            path = address.removeprefix(SITE).strip("/")
            assert not path or (ROOT / "docs" / f"{path}.md").is_file(), address
