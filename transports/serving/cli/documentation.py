"""Where the documentation is, for the command's help: the site's address and a page of it by path.

The address is the one ``pyproject.toml`` publishes as the project's ``Documentation`` URL and ``mkdocs.yml`` as
the site's ``site_url`` (a test holds the three equal); it is written here rather than read from the installed
package's metadata, so that the help costs no metadata lookup on the way to serving.
"""

from __future__ import annotations

SITE = "https://wiremcp.github.io/wiremcp/"
"""The documentation site's address."""


def page(path: str) -> str:
    """The address of the site's page at ``path`` (``"reference/settings/"``)."""
    return SITE + path
