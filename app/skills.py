"""Agent Skills (SEP-2640, ``io.modelcontextprotocol/skills``): a skill is a folder with a ``SKILL.md`` and its
supporting files, each served as a resource ``skill://<skill-path>/<file-path>``.

A ``Skill`` is a snapshot: its files' bytes, their digests (``sha256:<hex>``) and sizes, and its frontmatter,
taken when it is read (from a folder, or from memory) and served as taken until the folder is read again
(``wiremcp.skill_set``): what a listing promises is what a read returns. Reading a folder refuses what must not
be served, with the path and the reason: a ``SKILL.md`` whose frontmatter the Agent Skills spec refuses, a
name other than the folder's, a symbolic link out of the folder (or to a directory), more than
``MAX_FILES`` files or ``MAX_BYTES`` bytes. Hidden entries (``.git``, ``.DS_Store``) and ``__pycache__``
are not part of a skill.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from wiremcp import frontmatter
from wiremcp.errors import DefinitionError
from wiremcp.types import JSONObject

SCHEME = "skill://"
MANIFEST = "SKILL.md"
MAX_FILES = 512
"""Files per skill, ``SKILL.md`` included (SEP-2640: servers SHOULD NOT serve more)."""
MAX_BYTES = 16 * 1024 * 1024
"""Bytes per skill, over all its files (SEP-2640: servers SHOULD NOT serve more)."""

_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9_~-][A-Za-z0-9._~-]*")
_TYPES = mimetypes.MimeTypes()  # the built-in table only: the same answer on every machine
_MIME = {".md": "text/markdown", ".markdown": "text/markdown", ".py": "text/x-python", ".sh": "text/x-shellscript",
         ".yaml": "application/yaml", ".yml": "application/yaml", ".json": "application/json",
         ".ts": "text/typescript", ".toml": "application/toml", ".csv": "text/csv"}
_BINARY = ("image/", "audio/", "video/", "font/", "application/pdf", "application/zip", "application/gzip",
           "application/x-tar", "application/octet-stream")


class SkillError(DefinitionError):
    """A skill that cannot be served as it is: which one (its folder or path) and why, in one line."""


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill, as read: its path in the skill (``/``-separated), bytes, digest and media type;
    ``text`` is its content as a string when it is text (UTF-8), else None (served base64 as a blob)."""

    path: str
    data: bytes
    digest: str
    mime_type: str
    text: str | None

    @property
    def size(self) -> int:
        return len(self.data)


class Skill:
    """A skill as served: its path (``acme/billing/refunds``), frontmatter, files and the scopes a caller needs."""

    __slots__ = ("files", "frontmatter", "list_files", "path", "scopes")

    def __init__(self, path: str, meta: JSONObject, files: list[SkillFile], scopes: list[str],
                 list_files: bool = False) -> None:
        self.path = path
        self.frontmatter = meta
        self.files = files
        """``SKILL.md`` first, then the others by path."""
        self.scopes = scopes
        self.list_files = list_files
        """Whether ``resources/list`` shows the supporting files too (``SKILL.md`` always is)."""

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def root(self) -> str:
        """The skill's directory resource: ``skill://<skill-path>``, no trailing slash."""
        return SCHEME + self.path

    @property
    def uri(self) -> str:
        """The skill's URI, its ``SKILL.md``'s: what ``skills/get`` and a listing entry name it by."""
        return f"{self.root}/{MANIFEST}"

    def file_uri(self, file: SkillFile) -> str:
        return f"{self.root}/{quote(file.path, safe='/')}"

    def to_wire(self) -> JSONObject:
        """The skill's entry in ``skills/list`` and ``skills/get``: URI, frontmatter verbatim, and every file
        with its digest and size."""
        return {"uri": self.uri, "frontmatter": self.frontmatter,
                "resources": [{"uri": self.file_uri(f), "digest": f.digest, "size": f.size} for f in self.files]}

    def same_as(self, other: Skill) -> bool:
        return (self.path, self.frontmatter, self.scopes, self.list_files) == (
            other.path, other.frontmatter, other.scopes, other.list_files) and [
            (f.path, f.digest) for f in self.files] == [(f.path, f.digest) for f in other.files]


# -- reading ---------------------------------------------------------------------------------------------
def skill_path(prefix: str | None, name: str, where: str) -> str:
    """``prefix/name``, each prefix segment checked (URI-safe, not ``.`` or ``..``)."""
    if not prefix:
        return name
    segments = prefix.strip("/").split("/")
    for segment in segments:
        if not _PREFIX_SEGMENT.fullmatch(segment) or segment in (".", ".."):
            raise SkillError(f"{where}: prefix segment {segment!r} must be letters, digits, '-', '.', '_' or '~'")
    return "/".join([*segments, name])


def from_memory(markdown: str, files: Mapping[str, str | bytes] | None, *, prefix: str | None,
                scopes: list[str] | None, list_files: bool = False) -> Skill:
    """A skill made by the server (``MCPServer.add_skill``): its ``SKILL.md`` text and supporting files."""
    try:
        meta = frontmatter.read(markdown)
    except frontmatter.FrontmatterError as exc:
        raise SkillError(f"skill from memory: {exc}") from None
    where = f"skill {meta['name']}"
    read = [file_of(MANIFEST, markdown.encode())]
    for path, content in sorted((files or {}).items()):
        if not isinstance(path, str) or not _relative(path) or path == MANIFEST:
            raise SkillError(f"{where}: file path {path!r} must be relative, '/'-separated, without '.', '..' "
                             f"or empty segments, and not {MANIFEST}")
        read.append(file_of(path, content.encode() if isinstance(content, str) else bytes(content)))
    _within_limits(read, where)
    return Skill(skill_path(prefix, str(meta["name"]), where), meta, read, list(scopes or []), list_files)


def from_folder(folder: Path, path: str, scopes: list[str], list_files: bool = False) -> Skill:
    """The skill in ``folder`` at skill path ``path``, whose last segment must be its frontmatter's name."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise SkillError(f"{folder}: no {MANIFEST} (a skill is a folder with a {MANIFEST} at its top)")
    files: list[SkillFile] = []
    total = 0
    for rel, file in _walk(folder):
        if len(files) == MAX_FILES:
            raise SkillError(f"{folder}: more than {MAX_FILES} files (SEP-2640's limit per skill)")
        total += file.stat().st_size
        if total > MAX_BYTES:
            raise SkillError(f"{folder}: more than {MAX_BYTES} bytes in all (SEP-2640's limit per skill)")
        files.append(file_of(rel, file.read_bytes()))
    files.sort(key=lambda f: (f.path != MANIFEST, f.path))
    try:
        meta = frontmatter.read(files[0].data.decode("utf-8"))
    except (frontmatter.FrontmatterError, UnicodeDecodeError) as exc:
        raise SkillError(f"{manifest}: {exc}") from None
    name = path.rsplit("/", 1)[-1]
    if meta["name"] != name:
        raise SkillError(f"{manifest}: name {meta['name']!r} must be the name of its folder, {name!r}")
    _within_limits(files, str(folder))
    return Skill(path, meta, files, scopes, list_files)


def skill_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` (``root`` included) that holds a ``SKILL.md``, nested ones too."""
    if not root.is_dir():
        raise SkillError(f"{root}: not a folder")
    found = [root] if (root / MANIFEST).is_file() else []
    for rel, file in _walk(root, check_links=False):
        if rel.endswith("/" + MANIFEST):
            found.append(file.parent)
    return sorted(found)


def signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a file under ``root`` is added, removed, replaced or written: (path, size, mtime)."""
    out: list[tuple[str, int, int]] = []
    for rel, file in _walk(root, check_links=False):
        try:
            stat = file.stat()
        except OSError:
            continue
        out.append((rel, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(out))


def _walk(folder: Path, *, check_links: bool = True) -> Iterator[tuple[str, Path]]:
    """The files under ``folder`` (relative path, path), hidden entries and ``__pycache__`` left out;
    checked: no symbolic link to a directory, none out of ``folder``."""
    top = folder.resolve()
    for current, dirs, names in os.walk(folder):
        here = Path(current)
        for name in list(dirs):
            if _hidden(name):
                dirs.remove(name)
            elif (here / name).is_symlink():
                dirs.remove(name)
                if check_links:
                    raise SkillError(f"{here / name}: a symbolic link to a directory (a skill serves its own files)")
        dirs.sort()
        for name in sorted(names):
            file = here / name
            if _hidden(name):
                continue
            if check_links and file.is_symlink() and not file.resolve().is_relative_to(top):
                raise SkillError(f"{file}: a symbolic link out of the skill's folder, to {file.resolve()}")
            if file.is_file():
                yield file.relative_to(folder).as_posix(), file


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__pycache__"


def _relative(path: str) -> bool:
    return bool(path) and "\\" not in path and all(s not in ("", ".", "..") for s in path.split("/"))


def file_of(path: str, data: bytes) -> SkillFile:
    """The file at ``path`` in a skill, holding ``data``: its digest, media type and text (when it is text)."""
    mime = "text/markdown" if path.endswith(MANIFEST) else _media_type(path)
    text: str | None = None
    if not mime.startswith(_BINARY) or mime == "application/octet-stream":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and mime == "application/octet-stream":
            mime = "text/plain"
    return SkillFile(path, data, "sha256:" + hashlib.sha256(data).hexdigest(), mime, text)


def _media_type(path: str) -> str:
    suffix = os.path.splitext(path)[1].lower()
    return _MIME.get(suffix) or _TYPES.guess_type(path, strict=False)[0] or "application/octet-stream"


def _within_limits(files: list[SkillFile], where: str) -> None:
    if len(files) > MAX_FILES:
        raise SkillError(f"{where}: more than {MAX_FILES} files (SEP-2640's limit per skill)")
    if sum(f.size for f in files) > MAX_BYTES:
        raise SkillError(f"{where}: more than {MAX_BYTES} bytes in all (SEP-2640's limit per skill)")
