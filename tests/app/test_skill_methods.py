"""``wiremcp.skill_methods``: SEP-2640's ``skills/list``, ``skills/get`` and ``resources/directory/read`` in both
eras, the extension declared in ``initialize`` and ``server/discover``, skill files read as resources, and the
skills' scopes applied like a resource's."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from wiremcp import MCPServer
from wiremcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, MCPError
from wiremcp.principal import Principal
from wiremcp.protocol import SKILLS_EXTENSION
from wiremcp.transports.memory import Client

SEP = "seps/2640-skills-extension"
ERAS = ["2025-11-25", "2026-07-28"]


def manifest(name: str, description: str = "Does things", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n"


def library(root: Path) -> Path:
    files = {"pdf/SKILL.md": manifest("pdf", "Work with PDFs", "license: MIT\n"), "pdf/references/FORMS.md": "forms",
             "pdf/templates/invoice.md": "invoice", "pdf/templates/regional/eu.md": "eu",
             "acme/billing/refunds/SKILL.md": manifest("refunds"), "acme/billing/refunds/email.md": "hello"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def served(tmp_path: Path, **kwargs: Any) -> MCPServer:
    server = MCPServer("skills", **kwargs)
    server.skills(library(tmp_path), refresh_seconds=None)
    return server


async def ask(server: MCPServer, era: str, method: str, params: dict[str, Any] | None = None, **client: Any) -> Any:
    async with Client(server, protocol_version=era, **client) as c:
        return await c.request(method, params or {})


@pytest.mark.spec(f"{SEP}#capability-declaration")
@pytest.mark.parametrize("era", ERAS)
async def test_the_extension_is_declared_with_directory_read_and_resources(tmp_path: Path, era: str) -> None:
    server = served(tmp_path)
    async with Client(server, protocol_version=era) as c:
        answer = c.initialize_result if era != "2026-07-28" else await c.request("server/discover")
    assert answer is not None
    caps = answer["capabilities"]
    assert caps["extensions"][SKILLS_EXTENSION] == {"directoryRead": True}
    assert "resources" in caps


async def test_a_server_without_skills_declares_no_extension_and_has_no_skill_methods() -> None:
    server = MCPServer("none")
    assert "extensions" not in server.capabilities()
    for method in ("skills/list", "skills/get", "resources/directory/read"):
        with pytest.raises(MCPError) as raised:
            await ask(server, "2025-11-25", method, {"uri": "skill://a/SKILL.md"})
        assert raised.value.code == METHOD_NOT_FOUND


@pytest.mark.spec(f"{SEP}#enumeration-via-skillslist")
@pytest.mark.parametrize("era", ERAS)
async def test_skills_list_has_every_skill_entry_with_digests_and_sizes(tmp_path: Path, era: str) -> None:
    result = await ask(served(tmp_path), era, "skills/list")
    assert [s["uri"] for s in result["skills"]] == ["skill://acme/billing/refunds/SKILL.md", "skill://pdf/SKILL.md"]
    pdf = result["skills"][1]
    assert pdf["frontmatter"] == {"name": "pdf", "description": "Work with PDFs", "license": "MIT"}
    data = (tmp_path / "pdf" / "SKILL.md").read_bytes()
    assert pdf["resources"][0] == {"uri": "skill://pdf/SKILL.md",
                                   "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert [r["uri"] for r in pdf["resources"][1:]] == [
        "skill://pdf/references/FORMS.md", "skill://pdf/templates/invoice.md", "skill://pdf/templates/regional/eu.md"]
    assert "nextCursor" not in result
    if era == "2026-07-28":
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


async def test_skills_list_pages_whole_entries(tmp_path: Path) -> None:
    server = served(tmp_path, page_size=1)
    async with Client(server) as c:
        first = await c.request("skills/list", {})
        second = await c.request("skills/list", {"cursor": first["nextCursor"]})
        with pytest.raises(MCPError) as raised:
            await c.request("skills/list", {"cursor": "nonsense"})
    assert [len(first["skills"]), len(second["skills"])] == [1, 1]
    assert "nextCursor" not in second
    assert first["skills"][0]["uri"] != second["skills"][0]["uri"]
    assert raised.value.code == INVALID_PARAMS


@pytest.mark.spec(f"{SEP}#retrieval-via-skillsget")
@pytest.mark.parametrize("era", ERAS)
async def test_skills_get_answers_the_entry_of_one_skill(tmp_path: Path, era: str) -> None:
    server = served(tmp_path)
    listed = await ask(server, era, "skills/list")
    got = await ask(server, era, "skills/get", {"uri": "skill://pdf/SKILL.md"})
    assert got["skill"] == listed["skills"][1]
    assert "nextCursor" not in got
    if era == "2026-07-28":
        assert (got["ttlMs"], got["cacheScope"]) == (0, "private")


@pytest.mark.spec(f"{SEP}#retrieval-via-skillsget")
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("uri", ["skill://nope/SKILL.md", "skill://pdf", "skill://pdf/references/FORMS.md", 7, None])
async def test_skills_get_of_anything_but_a_served_skill_is_invalid_params(tmp_path: Path, era: str, uri: Any) -> None:
    with pytest.raises(MCPError) as raised:
        await ask(served(tmp_path), era, "skills/get", {"uri": uri})
    assert raised.value.code == INVALID_PARAMS


@pytest.mark.spec(f"{SEP}#resources-directory-read")
@pytest.mark.parametrize("era", ERAS)
async def test_a_directory_lists_its_direct_children_files_and_folders(tmp_path: Path, era: str) -> None:
    server = served(tmp_path)
    root = await ask(server, era, "resources/directory/read", {"uri": "skill://pdf"})
    assert root["resources"] == [
        {"uri": "skill://pdf/SKILL.md", "name": "pdf", "description": "Work with PDFs", "mimeType": "text/markdown",
         "size": len(manifest("pdf", "Work with PDFs", "license: MIT\n"))},
        {"uri": "skill://pdf/references", "name": "references", "mimeType": "inode/directory"},
        {"uri": "skill://pdf/templates", "name": "templates", "mimeType": "inode/directory"}]
    sub = await ask(server, era, "resources/directory/read", {"uri": "skill://pdf/templates"})
    assert [(r["uri"], r["mimeType"]) for r in sub["resources"]] == [
        ("skill://pdf/templates/invoice.md", "text/markdown"), ("skill://pdf/templates/regional", "inode/directory")]


async def test_prefixes_above_skills_are_directories_too(tmp_path: Path) -> None:
    server = served(tmp_path)
    acme = await ask(server, "2025-11-25", "resources/directory/read", {"uri": "skill://acme"})
    billing = await ask(server, "2025-11-25", "resources/directory/read", {"uri": "skill://acme/billing/"})
    assert acme["resources"] == [{"uri": "skill://acme/billing", "name": "billing", "mimeType": "inode/directory"}]
    assert billing["resources"] == [
        {"uri": "skill://acme/billing/refunds", "name": "refunds", "mimeType": "inode/directory"}]


async def test_a_directory_is_read_a_page_at_a_time(tmp_path: Path) -> None:
    server = served(tmp_path, page_size=2)
    async with Client(server) as c:
        first = await c.request("resources/directory/read", {"uri": "skill://pdf"})
        second = await c.request("resources/directory/read", {"uri": "skill://pdf", "cursor": first["nextCursor"]})
    assert [len(first["resources"]), len(second["resources"])] == [2, 1]
    assert "nextCursor" not in second


@pytest.mark.spec(f"{SEP}#resources-directory-read")
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("uri", ["skill://pdf/SKILL.md", "skill://pdf/nothing", "skill://", "file:///etc", 3])
async def test_reading_anything_but_a_directory_is_invalid_params(tmp_path: Path, era: str, uri: Any) -> None:
    with pytest.raises(MCPError) as raised:
        await ask(served(tmp_path), era, "resources/directory/read", {"uri": uri})
    assert raised.value.code == INVALID_PARAMS


@pytest.mark.spec(f"{SEP}#resource-metadata")
@pytest.mark.parametrize("era", ERAS)
async def test_skill_files_are_resources_skill_md_listed_with_its_frontmatter(tmp_path: Path, era: str) -> None:
    server = served(tmp_path)
    async with Client(server, protocol_version=era) as c:
        listed = await c.list_resources()
        read = await c.read_resource("skill://pdf/SKILL.md")
        form = await c.read_resource("skill://pdf/references/FORMS.md")
    assert [(r["uri"], r["name"], r["description"], r["mimeType"]) for r in listed] == [
        ("skill://acme/billing/refunds/SKILL.md", "refunds", "Does things", "text/markdown"),
        ("skill://pdf/SKILL.md", "pdf", "Work with PDFs", "text/markdown")]
    assert read["contents"] == [{"uri": "skill://pdf/SKILL.md", "mimeType": "text/markdown",
                                 "text": (tmp_path / "pdf" / "SKILL.md").read_text()}]
    assert form["contents"][0]["text"] == "forms"


async def test_list_files_shows_the_supporting_files_in_resources_list(tmp_path: Path) -> None:
    server = MCPServer("skills")
    server.skills(library(tmp_path), list_files=True, refresh_seconds=None)
    async with Client(server) as c:
        listed = [r["uri"] for r in await c.list_resources()]
    assert "skill://pdf/templates/regional/eu.md" in listed
    assert len(listed) == 6


class TestScopes:
    """A skill's scopes are its files', its directories' and its entry's."""

    @staticmethod
    def server(tmp_path: Path) -> MCPServer:
        server = MCPServer("skills")
        server.skills(library(tmp_path / "open"), refresh_seconds=None)
        server.add_skill(manifest("secret"), files={"docs/plan.md": "plan"}, prefix="vault", scopes=["vault:read"])
        return server

    async def test_lists_leave_out_what_the_caller_may_not_read(self, tmp_path: Path) -> None:
        server = self.server(tmp_path)
        reader = Principal("iss", "u", "c", frozenset())
        listed = await ask(server, "2025-11-25", "skills/list", principal=reader)
        vault = await ask(server, "2025-11-25", "resources/directory/read", {"uri": "skill://vault"}, principal=reader)
        assert "skill://vault/secret/SKILL.md" not in [s["uri"] for s in listed["skills"]]
        assert vault["resources"] == []
        allowed = await ask(server, "2025-11-25", "skills/list", principal=Principal("iss", "u", "c", frozenset({"vault"})))
        assert "skill://vault/secret/SKILL.md" in [s["uri"] for s in allowed["skills"]]

    @pytest.mark.parametrize(("method", "uri"), [
        ("skills/get", "skill://vault/secret/SKILL.md"), ("resources/directory/read", "skill://vault/secret/docs"),
        ("resources/read", "skill://vault/secret/docs/plan.md")])
    async def test_what_the_caller_may_not_read_is_forbidden(self, tmp_path: Path, method: str, uri: str) -> None:
        with pytest.raises(MCPError) as raised:
            await ask(self.server(tmp_path), "2025-11-25", method, {"uri": uri},
                      principal=Principal("iss", "u", "c", frozenset({"other"})))
        assert raised.value.data == {"requiredScopes": ["vault:read"]}
