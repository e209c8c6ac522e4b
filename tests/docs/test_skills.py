"""``docs/skills.md``, run: the page's ``SKILL.md`` saved where it says, its server serving that folder and the
skill made in code, in both eras (``skills/list`` exactly as the page shows it, the files as resources, the
folders, the extension declared), and a bad skill refused in one line by ``wiremcp stdio``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, ENV, block, exec_as_file
from wiremcp import MCPError, MCPServer
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "skills.md"
CHECKED = {"skill-md", "skills", "skills-list"}
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


def served(tmp_path: Path) -> MCPServer:
    """The page's server, its ``skills/`` folder holding the page's ``SKILL.md`` where the page says."""
    (tmp_path / "skills" / "acme" / "refunds").mkdir(parents=True)
    (tmp_path / "skills" / "acme" / "refunds" / "SKILL.md").write_text(block(PAGE, "skill-md").text)
    server: MCPServer = exec_as_file(PAGE, "skills", tmp_path / "server.py")["server"]
    return server


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_the_skills_example_serves_a_folder_of_skills_and_one_made_in_code(era: str, tmp_path: Path) -> None:
    server = served(tmp_path)
    async with Client(server, protocol_version=era) as client:
        listed = await client.request("skills/list", {})
        template = await client.read_resource("skill://team/release-notes/template.md")
        skill = await client.read_resource("skill://acme/refunds/SKILL.md")
        one = await client.request("skills/get", {"uri": "skill://team/release-notes/SKILL.md"})
        resources = await client.list_resources()
        folders = await client.request("resources/directory/read", {"uri": "skill://team"})
        with pytest.raises(MCPError) as not_a_skill:
            await client.request("skills/get", {"uri": "skill://team/release-notes/template.md"})
        capabilities = client.initialize_result["capabilities"] if client.initialize_result else (
            await client.request("server/discover", {}))["capabilities"]
    assert [s["uri"] for s in listed["skills"]] == ["skill://acme/refunds/SKILL.md", "skill://team/release-notes/SKILL.md"]
    assert template["contents"][0]["text"] == "## {version}\n\n- {change} ({issue})\n"
    assert skill["contents"][0]["text"] == block(PAGE, "skill-md").text
    assert one["skill"] == listed["skills"][1]
    assert [(r["uri"], r["mimeType"], r["name"]) for r in resources] == [
        ("skill://acme/refunds/SKILL.md", "text/markdown", "refunds"),
        ("skill://team/release-notes/SKILL.md", "text/markdown", "release-notes")]
    assert [(r["uri"], r["mimeType"]) for r in folders["resources"]] == [("skill://team/release-notes", "inode/directory")]
    assert not_a_skill.value.code == -32602
    assert capabilities["extensions"][SKILLS_EXTENSION] == {"directoryRead": True}
    if era == "2026-07-28":
        assert {"ttlMs", "cacheScope"} <= set(listed)


async def test_skills_list_is_what_the_page_shows(tmp_path: Path) -> None:
    server = served(tmp_path)
    async with Client(server) as client:
        listed = await client.request("skills/list", {})
    assert listed == json.loads(block(PAGE, "skills-list").text)


def test_a_skill_whose_name_is_not_valid_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "skills" / "refunds").mkdir(parents=True)
    (tmp_path / "skills" / "refunds" / "SKILL.md").write_text(
        block(PAGE, "skill-md").text.replace("name: refunds", "name: Refunds"))
    (tmp_path / "server.py").write_text(block(PAGE, "skills").text)
    done = subprocess.run([sys.executable, "-m", "wiremcp", "stdio", "server.py"], cwd=tmp_path, env=ENV,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"wiremcp: error: {tmp_path}/"), line
    said = line.removeprefix(f"wiremcp: error: {tmp_path}/")
    assert said == ("skills/refunds/SKILL.md: SKILL.md name 'Refunds' must be 1-64 lowercase letters, digits and "
                    "single hyphens, not starting or ending with a hyphen")
    assert f"`{said}`" in " ".join(PAGE.read_text().split()), "the page quotes it as it is printed"
