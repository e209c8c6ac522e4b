"""``wiremcp.skill_set``: where the skills come from, their files as resources, the directory index, and
following a folder as it changes (list_changed, resources/updated), in a running server."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from wiremcp import MCPServer
from wiremcp.skills import SkillError
from wiremcp.transports.memory import Client

SEP = "seps/2640-skills-extension"


def manifest(name: str, description: str = "Does things") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def due(server: MCPServer) -> None:
    """Every folder is due for a look now (instead of waiting ``refresh_seconds``)."""
    for source in server.skill_set._sources:
        source.checked = 0.0


def test_skills_skill_and_add_skill_return_the_uris_they_serve(tmp_path: Path) -> None:
    server = MCPServer("s")
    write(tmp_path / "lib", {"a/SKILL.md": manifest("a"), "team/b/SKILL.md": manifest("b")})
    write(tmp_path / "one", {"c/SKILL.md": manifest("c")})
    assert server.skills(tmp_path / "lib", prefix="x") == ["skill://x/a/SKILL.md", "skill://x/team/b/SKILL.md"]
    assert server.skill(tmp_path / "one" / "c") == "skill://c/SKILL.md"
    assert server.add_skill(manifest("d"), prefix="mem") == "skill://mem/d/SKILL.md"
    assert list(server.skill_set.skills) == ["skill://c/SKILL.md", "skill://mem/d/SKILL.md", "skill://x/a/SKILL.md",
                                             "skill://x/team/b/SKILL.md"]


def test_a_folder_that_is_itself_a_skill_is_served_under_its_name(tmp_path: Path) -> None:
    server = MCPServer("s")
    write(tmp_path / "solo", {"SKILL.md": manifest("solo"), "sub/SKILL.md": manifest("sub")})
    assert server.skills(tmp_path / "solo") == ["skill://solo/SKILL.md", "skill://solo/sub/SKILL.md"]


@pytest.mark.spec(f"{SEP}#nested-skills")
def test_a_nested_skill_s_files_are_its_enclosing_skill_s_files_too(tmp_path: Path) -> None:
    server = MCPServer("s")
    server.skills(write(tmp_path, {"a/SKILL.md": manifest("a"), "a/b/SKILL.md": manifest("b", "Inner"),
                                   "a/b/x.md": "x"}))
    outer, inner = server.skill_set.skills.values()
    assert [r["uri"] for r in outer.to_wire()["resources"]] == [
        "skill://a/SKILL.md", "skill://a/b/SKILL.md", "skill://a/b/x.md"]
    assert [r["uri"] for r in inner.to_wire()["resources"]] == ["skill://a/b/SKILL.md", "skill://a/b/x.md"]
    nested = server.resources.find_static("skill://a/b/SKILL.md")
    assert nested is not None
    assert (nested.name, nested.description) == ("b", "Inner")


def test_the_same_skill_twice_or_over_an_existing_resource_is_refused(tmp_path: Path) -> None:
    server = MCPServer("s")
    server.add_skill(manifest("a"))
    with pytest.raises(SkillError, match=r"skill://a/SKILL.md is already served"):
        server.add_skill(manifest("a"))

    @server.resource("skill://b/SKILL.md")
    def taken() -> str:
        return "mine"

    with pytest.raises(SkillError, match=r"skill://b/SKILL.md is already a resource of this server"):
        server.add_skill(manifest("b"))
    assert list(server.skill_set.skills) == ["skill://a/SKILL.md"]


def test_a_skill_served_from_two_folders_is_refused_naming_both(tmp_path: Path) -> None:
    first = write(tmp_path / "team", {"notes/SKILL.md": manifest("notes")})
    second = write(tmp_path / "vendor", {"notes/SKILL.md": manifest("notes")})
    server = MCPServer("s")
    server.skills(first)
    with pytest.raises(SkillError) as refused:
        server.skills(second)
    assert str(refused.value) == (f"{second}: skill skill://notes/SKILL.md is already served from {first}; "
                                  "serve one of them under a prefix (prefix=...), or pass replace=True to replace it")
    server.skills(second, prefix="vendor")  # as the message says
    assert sorted(server.skill_set.skills) == ["skill://notes/SKILL.md", "skill://vendor/notes/SKILL.md"]


def test_replace_serves_a_skill_from_the_new_folder_instead(tmp_path: Path) -> None:
    first = write(tmp_path / "team", {"notes/SKILL.md": manifest("notes", "Old"), "other/SKILL.md": manifest("other")})
    second = write(tmp_path / "vendor", {"notes/SKILL.md": manifest("notes", "New")})
    server = MCPServer("s")
    server.skills(first)
    assert server.skills(second, replace=True) == ["skill://notes/SKILL.md"]
    assert sorted(server.skill_set.skills) == ["skill://notes/SKILL.md", "skill://other/SKILL.md"]
    served = server.resources.find_static("skill://notes/SKILL.md")
    assert served is not None
    assert served.description == "New"
    made = server.add_skill(manifest("other", "Made"), replace=True)
    replaced = server.resources.find_static(made)
    assert replaced is not None
    assert replaced.description == "Made"


async def test_remove_skill_takes_its_files_away_and_it_stays_away_when_the_folder_changes(tmp_path: Path) -> None:
    server = MCPServer("s")
    root = write(tmp_path, {"a/SKILL.md": manifest("a"), "a/x.md": "x", "b/SKILL.md": manifest("b")})
    server.skills(root)
    server.remove_skill("skill://a")
    assert list(server.skill_set.skills) == ["skill://b/SKILL.md"]
    assert server.resources.find_static("skill://a/x.md") is None
    assert server.skill_set.directory("skill://a") is None
    write(root, {"b/new.md": "new"})
    due(server)
    assert await server.skill_set.check()
    assert list(server.skill_set.skills) == ["skill://b/SKILL.md"]
    with pytest.raises(KeyError):
        server.remove_skill("skill://a/SKILL.md")


def test_removing_the_last_skill_withdraws_the_extension() -> None:
    server = MCPServer("s")
    uri = server.add_skill(manifest("a"))
    assert "extensions" in server.capabilities()
    server.remove_skill(uri)
    assert "extensions" not in server.capabilities()
    assert not server.skill_set


async def test_an_empty_folder_still_serves_skills_and_one_that_appears_is_served(tmp_path: Path) -> None:
    server = MCPServer("s")
    assert server.skills(tmp_path) == []
    assert "extensions" in server.capabilities()
    async with Client(server) as client:
        assert (await client.request("skills/list", {}))["skills"] == []
        write(tmp_path, {"new/SKILL.md": manifest("new")})
        due(server)
        listed = await client.request("skills/list", {})
    assert [s["uri"] for s in listed["skills"]] == ["skill://new/SKILL.md"]


@pytest.mark.spec(f"{SEP}#integrity-and-verification")
async def test_a_changed_file_is_served_anew_and_clients_hear_of_it(tmp_path: Path) -> None:
    server = MCPServer("s")
    root = write(tmp_path, {"a/SKILL.md": manifest("a"), "a/x.md": "old"})
    server.skills(root, refresh_seconds=None)
    async with Client(server) as client:
        before = (await client.request("skills/get", {"uri": "skill://a/SKILL.md"}))["skill"]
        await client.subscribe("skill://a/x.md")
        write(root, {"a/x.md": "new text", "a/y.md": "added"})
        source = server.skill_set._sources[0]
        source.refresh_seconds = 60.0
        due(server)
        after = (await client.request("skills/get", {"uri": "skill://a/SKILL.md"}))["skill"]
        await client.wait_for_notification("notifications/resources/list_changed")
        updated = await client.wait_for_notification("notifications/resources/updated")
        read = await client.read_resource("skill://a/x.md")
    assert before["resources"] != after["resources"]
    assert [r["uri"] for r in after["resources"]] == ["skill://a/SKILL.md", "skill://a/x.md", "skill://a/y.md"]
    assert updated[0]["params"] == {"uri": "skill://a/x.md"}
    assert read["contents"][0]["text"] == "new text"


async def test_until_the_folder_is_looked_at_again_reads_serve_what_the_listing_promised(tmp_path: Path) -> None:
    server = MCPServer("s")
    root = write(tmp_path, {"a/SKILL.md": manifest("a"), "a/x.md": "old"})
    server.skills(root, refresh_seconds=3600)
    write(root, {"a/x.md": "changed on disk"})
    async with Client(server) as client:
        assert (await client.read_resource("skill://a/x.md"))["contents"][0]["text"] == "old"


async def test_a_folder_that_no_longer_reads_keeps_its_skills_and_says_why_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("s")
    root = write(tmp_path, {"a/SKILL.md": manifest("a")})
    server.skills(root)
    write(root, {"a/SKILL.md": "---\nname: a\n"})  # saved half-way
    with caplog.at_level(logging.ERROR, logger="wiremcp.skills"):
        for _ in range(2):
            due(server)
            assert not await server.skill_set.check()
    assert list(server.skill_set.skills) == ["skill://a/SKILL.md"]
    said = [r.getMessage() for r in caplog.records if r.name == "wiremcp.skills"]
    assert len(said) == 1
    assert "still served as they were" in said[0]
    assert "SKILL.md" in said[0]


async def test_an_unchanged_folder_is_not_read_again_nor_announced(tmp_path: Path) -> None:
    server = MCPServer("s")
    server.skills(write(tmp_path, {"a/SKILL.md": manifest("a")}))
    changes: list[object] = []
    server.runtime.changed = changes.append  # type: ignore[method-assign, assignment]
    due(server)
    assert not await server.skill_set.check()
    os_touch = tmp_path / "a" / "SKILL.md"
    os_touch.write_text(manifest("a"))  # rewritten, same bytes: looked at again, nothing to announce
    due(server)
    assert not await server.skill_set.check()
    assert changes == []


async def test_a_session_starts_the_watch_that_announces_a_change_by_itself(tmp_path: Path) -> None:
    server = MCPServer("s")
    root = write(tmp_path, {"a/SKILL.md": manifest("a")})
    server.skills(root, refresh_seconds=0.01)
    async with Client(server) as client:
        write(root, {"a/more.md": "more"})
        await asyncio.wait_for(client.wait_for_notification("notifications/resources/list_changed"), 10)
        assert "skill://a/more.md" in [r["uri"] for r in server.skill_set.skills["skill://a/SKILL.md"].to_wire()[
            "resources"]]


def test_skills_from_memory_are_not_watched(tmp_path: Path) -> None:
    server = MCPServer("s")
    server.add_skill(manifest("a"))
    assert server.skill_set.refresh_seconds is None
    server.skills(write(tmp_path, {"b/SKILL.md": manifest("b")}), refresh_seconds=5)
    server.skill(tmp_path / "b", prefix="again", refresh_seconds=3)
    assert server.skill_set.refresh_seconds == 3
