"""``wiremcp.skills``: a skill read from a folder or from memory (files, digests, sizes, media types), and
what is refused when it is registered: names, paths, symbolic links, the SEP's limits."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from wiremcp import skills
from wiremcp.errors import DefinitionError
from wiremcp.skills import (
    MAX_BYTES,
    MAX_FILES,
    SkillError,
    from_folder,
    from_memory,
    signature,
    skill_folders,
)

SEP = "seps/2640-skills-extension"


def manifest(name: str, description: str = "Does things") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n"


def make(folder: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return folder


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.spec(f"{SEP}#resources")
def test_a_folder_is_read_with_every_file_its_digest_and_size(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf", {"SKILL.md": manifest("pdf"), "references/FORMS.md": "# Forms\n",
                                     "scripts/run.py": "print(1)\n", "logo.png": b"\x89PNG\r\n\x1a\n\xff\x00"})
    skill = from_folder(folder, "pdf", ["docs:read"])
    assert [f.path for f in skill.files] == ["SKILL.md", "logo.png", "references/FORMS.md", "scripts/run.py"]
    assert skill.uri == "skill://pdf/SKILL.md"
    assert skill.root == "skill://pdf"
    assert skill.scopes == ["docs:read"]
    assert skill.to_wire() == {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Does things"},
        "resources": [{"uri": f"skill://pdf/{rel}", "digest": sha((folder / rel).read_bytes()),
                       "size": (folder / rel).stat().st_size}
                      for rel in ("SKILL.md", "logo.png", "references/FORMS.md", "scripts/run.py")]}


def test_text_files_are_text_with_their_media_type_and_others_are_blobs(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf", {"SKILL.md": manifest("pdf"), "a.md": "x", "b.py": "x", "c.json": "{}",
                                     "d.unknown": "plain words", "e.bin": b"\xff\xfe\x00", "f.png": b"\x89PNG"})
    read = {f.path: (f.mime_type, f.text) for f in from_folder(folder, "pdf", []).files}
    assert read == {"SKILL.md": ("text/markdown", manifest("pdf")), "a.md": ("text/markdown", "x"),
                    "b.py": ("text/x-python", "x"), "c.json": ("application/json", "{}"),
                    "d.unknown": ("text/plain", "plain words"), "e.bin": ("application/octet-stream", None),
                    "f.png": ("image/png", None)}


def test_hidden_entries_and_pycache_are_not_part_of_a_skill(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf", {"SKILL.md": manifest("pdf"), ".DS_Store": "x", ".git/HEAD": "ref",
                                     "__pycache__/m.pyc": b"\x00", "kept.md": "k"})
    assert [f.path for f in from_folder(folder, "pdf", []).files] == ["SKILL.md", "kept.md"]


def test_file_names_are_percent_encoded_in_their_uris(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf", {"SKILL.md": manifest("pdf"), "my notes/ünïcode #1.md": "x"})
    skill = from_folder(folder, "pdf", [])
    assert skill.file_uri(skill.files[1]) == "skill://pdf/my%20notes/%C3%BCn%C3%AFcode%20%231.md"


@pytest.mark.spec(f"{SEP}#resource-mapping")
def test_the_folder_name_must_be_the_skills_name(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf-tools", {"SKILL.md": manifest("pdf")})
    with pytest.raises(SkillError, match=r"SKILL.md: name 'pdf' must be the name of its folder, 'pdf-tools'"):
        from_folder(folder, "pdf-tools", [])


def test_a_folder_without_skill_md_or_with_a_bad_one_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match=r"no SKILL\.md"):
        from_folder(make(tmp_path / "a", {"README.md": "x"}), "a", [])
    with pytest.raises(SkillError, match=r"b/SKILL.md: SKILL.md must begin with YAML frontmatter"):
        from_folder(make(tmp_path / "b", {"SKILL.md": "# no frontmatter"}), "b", [])
    with pytest.raises(SkillError, match=r"c/SKILL.md: .*codec can't decode"):
        from_folder(make(tmp_path / "c", {"SKILL.md": b"---\xff"}), "c", [])


def test_a_skill_error_is_a_definition_error_the_command_line_prints_as_one_line() -> None:
    assert issubclass(SkillError, DefinitionError)


def test_a_symbolic_link_inside_the_folder_is_served_and_one_out_of_it_refused(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf", {"SKILL.md": manifest("pdf"), "real.md": "real"})
    (folder / "alias.md").symlink_to(folder / "real.md")
    assert {f.path: f.text for f in from_folder(folder, "pdf", []).files}["alias.md"] == "real"
    (tmp_path / "secret").write_text("key")
    (folder / "leak.md").symlink_to(tmp_path / "secret")
    with pytest.raises(SkillError, match=r"leak.md: a symbolic link out of the skill's folder"):
        from_folder(folder, "pdf", [])


def test_a_symbolic_link_to_a_directory_is_refused(tmp_path: Path) -> None:
    folder = make(tmp_path / "pdf", {"SKILL.md": manifest("pdf"), "docs/a.md": "a"})
    (folder / "more").symlink_to(folder / "docs", target_is_directory=True)
    with pytest.raises(SkillError, match="more: a symbolic link to a directory"):
        from_folder(folder, "pdf", [])


@pytest.mark.spec(f"{SEP}#resources")
def test_more_files_than_the_sep_allows_are_refused(tmp_path: Path) -> None:
    folder = make(tmp_path / "big", {"SKILL.md": manifest("big"), **{f"f/{i}.md": "x" for i in range(MAX_FILES)}})
    with pytest.raises(SkillError, match=f"more than {MAX_FILES} files"):
        from_folder(folder, "big", [])


def test_more_bytes_than_the_sep_allows_are_refused(tmp_path: Path) -> None:
    folder = make(tmp_path / "big", {"SKILL.md": manifest("big")})
    with open(folder / "huge.bin", "wb") as out:
        out.truncate(MAX_BYTES)  # sparse: no 16 MiB written
    with pytest.raises(SkillError, match=f"more than {MAX_BYTES} bytes"):
        from_folder(folder, "big", [])


def test_a_skill_from_memory_has_its_markdown_and_files() -> None:
    skill = from_memory(manifest("notes"), {"refs/a.md": "a", "img.png": b"\x89PNG"}, prefix="team/docs",
                        scopes=["notes"])
    assert skill.uri == "skill://team/docs/notes/SKILL.md"
    assert [(f.path, f.size) for f in skill.files] == [("SKILL.md", len(manifest("notes"))), ("img.png", 4),
                                                       ("refs/a.md", 1)]
    assert skill.files[1].text is None


@pytest.mark.parametrize("path", ["../x.md", "/etc/passwd", "a//b.md", "a/./b.md", "a\\b.md", "", "SKILL.md"])
def test_a_file_path_out_of_the_skill_is_refused(path: str) -> None:
    with pytest.raises(SkillError, match="must be relative"):
        from_memory(manifest("notes"), {path: "x"}, prefix=None, scopes=None)


@pytest.mark.parametrize("prefix", ["..", "a/../b", "a b", "a/%2e", "ü"])
def test_a_prefix_that_is_not_a_plain_uri_segment_is_refused(prefix: str) -> None:
    with pytest.raises(SkillError, match="prefix segment"):
        from_memory(manifest("notes"), None, prefix=prefix, scopes=None)


def test_skill_folders_finds_every_skill_nested_ones_too(tmp_path: Path) -> None:
    make(tmp_path, {"a/SKILL.md": manifest("a"), "a/b/SKILL.md": manifest("b"), "team/c/SKILL.md": manifest("c"),
                    "team/notes.md": "x", ".hidden/d/SKILL.md": manifest("d")})
    assert skill_folders(tmp_path) == [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "team" / "c"]
    with pytest.raises(SkillError, match="not a folder"):
        skill_folders(tmp_path / "missing")


def test_the_signature_changes_when_a_file_is_added_written_or_removed(tmp_path: Path) -> None:
    make(tmp_path, {"a/SKILL.md": manifest("a")})
    first = signature(tmp_path)
    assert signature(tmp_path) == first
    make(tmp_path, {"a/more.md": "x"})
    second = signature(tmp_path)
    assert second != first
    os.utime(tmp_path / "a" / "more.md", ns=(1, 1))
    third = signature(tmp_path)
    assert third != second
    (tmp_path / "a" / "more.md").unlink()
    assert signature(tmp_path) == first


def test_the_media_types_are_the_same_on_every_machine() -> None:
    assert skills._media_type("x.md") == "text/markdown"
    assert skills._media_type("x.yaml") == "application/yaml"
    assert skills._media_type("x.txt") == "text/plain"
    assert skills._media_type("x") == "application/octet-stream"
