"""The server's skills (``MCPServer.skills``/``skill``/``add_skill``): where each comes from, the resources that
serve their files, the directories ``resources/directory/read`` lists, and keeping them in step with the
folders they are read from.

A source is a folder of skills, one skill folder, or a skill from memory. A folder is read again when a file
under it changes (sizes and modification times are compared at most every ``refresh_seconds``, by ``check``
as a skills request arrives and by ``watch`` while a client listens): a skill that changed is served anew,
its files' resources replaced at once, and clients hear ``notifications/resources/list_changed`` (and
``resources/updated`` for each file that changed). A folder that no longer reads (a half-saved ``SKILL.md``)
keeps its skills as they were, and the reason is logged once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wiremcp import skills as skill_files
from wiremcp.skills import SCHEME, Skill, SkillError, SkillFile
from wiremcp.threads import run_sync
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.resources import Resource, Resources

log = logging.getLogger("wiremcp.skills")

DIRECTORY = "inode/directory"


@dataclass(eq=False)
class Source:
    """Where skills come from: ``root`` (every skill folder under it), ``folder`` (one), or ``made`` (memory)."""

    prefix: str | None
    scopes: list[str]
    list_files: bool
    refresh_seconds: float | None
    root: Path | None = None
    folder: Path | None = None
    made: Skill | None = None
    seen: Any = None
    checked: float = 0.0
    failed: str | None = None
    removed: set[str] = field(default_factory=set)
    """Paths of skills ``remove_skill`` took away: not served again when the folder is read again."""

    def describe(self) -> str:
        return str(self.root or self.folder or f"skill {self.made.path if self.made else '?'}")

    def read(self) -> list[Skill]:
        """The skills this source serves now (a worker thread may run it)."""
        return [skill for skill in self._read() if skill.path not in self.removed]

    def _read(self) -> list[Skill]:
        if self.made is not None:
            return [self.made]
        if self.folder is not None:
            path = skill_files.skill_path(self.prefix, self.folder.name, str(self.folder))
            return [skill_files.from_folder(self.folder, path, self.scopes, self.list_files)]
        assert self.root is not None
        out = []
        # a root that is itself a skill is served under its own name, and what nests in it under that
        base = self.root.parent if (self.root / skill_files.MANIFEST).is_file() else self.root
        for folder in skill_files.skill_folders(self.root):
            segments = folder.relative_to(base).as_posix().split("/")
            prefix = "/".join(s for s in (self.prefix or "", *segments[:-1]) if s) or None
            out.append(skill_files.from_folder(folder, skill_files.skill_path(prefix, segments[-1], str(folder)),
                                               self.scopes, self.list_files))
        return out

    def signature(self) -> Any:
        top = self.root or self.folder
        return skill_files.signature(top) if top is not None else None


@dataclass(eq=False)
class Directory:
    """A directory resource (``inode/directory``): a skill's root or a folder in it, or a prefix above skills.
    ``skill`` is the skill it belongs to (its scopes are the directory's), None for a prefix."""

    uri: str
    skill: Skill | None
    files: dict[str, Resource] = field(default_factory=dict)
    folders: dict[str, Directory] = field(default_factory=dict)

    @property
    def scopes(self) -> list[str]:
        return self.skill.scopes if self.skill is not None else []

    def to_wire(self) -> JSONObject:
        return {"uri": self.uri, "name": self.uri.rsplit("/", 1)[-1], "mimeType": DIRECTORY}

    def children(self) -> list[Any]:
        """Files and folders, by URI: each has ``scopes`` and ``to_wire``."""
        merged: dict[str, Any] = {**self.files, **self.folders}
        return [merged[uri] for uri in sorted(merged)]


class SkillSet:
    """Every skill the server serves, by URI (``skill://<path>/SKILL.md``), with their resources in ``resources``."""

    def __init__(self, resources: Resources, updated: Callable[[str], None]) -> None:
        self.skills: dict[str, Skill] = {}
        self.directories: dict[str, Directory] = {}
        self._resources = resources
        self._updated = updated
        self._sources: list[Source] = []
        self._found: dict[Source, list[Skill]] = {}
        self._checking = False

    def __bool__(self) -> bool:
        """Whether the server serves skills (a folder of them counts while empty: its listing is empty)."""
        return bool(self._sources)

    # -- what is served --------------------------------------------------------------------------------
    def add(self, source: Source, *, replace: bool = False) -> list[Skill]:
        """Serve ``source``'s skills (read now: what cannot be served raises ``SkillError``). ``replace``: a
        skill another source serves under the same URI stops being served from there (``remove``) and is
        served from this one."""
        found = source.read()
        source.seen, source.checked = source.signature(), time.monotonic()
        if replace:
            for skill in found:
                if skill.uri in self.skills:
                    self.remove(skill.uri)
        self._apply(source, found, new=True)
        self._sources.append(source)
        return found

    @property
    def sources(self) -> tuple[Source, ...]:
        return tuple(self._sources)

    def add_source(self, source: Source) -> Source:
        """``add``, for a caller that keeps the source (to ``drop`` it later)."""
        self.add(source)
        return source

    def drop(self, source: Source) -> None:
        """Stop serving what ``source`` serves."""
        if source in self._found:
            self._apply(source, [])
            del self._found[source]
        if source in self._sources:
            self._sources.remove(source)

    def remove(self, uri: str) -> None:
        """Stop serving the skill at ``uri`` (its ``SKILL.md`` URI or its root), and its source."""
        skill = self.skills.get(uri) or self.skills.get(f"{uri.rstrip('/')}/{skill_files.MANIFEST}")
        if skill is None:
            raise KeyError(uri)
        for source in list(self._sources):
            found = self._found[source]
            if skill in found:
                source.removed.add(skill.path)
                self._apply(source, [s for s in found if s is not skill])
                if not self._found[source]:
                    self._sources.remove(source)
                    del self._found[source]
                return

    def directory(self, uri: str) -> Directory | None:
        return self.directories.get(uri)

    @property
    def refresh_seconds(self) -> float | None:
        """How often a folder is looked at for changes: the shortest of its sources' (None: never)."""
        every = [s.refresh_seconds for s in self._sources if s.refresh_seconds and s.made is None]
        return min(every) if every else None

    # -- keeping up with the folders ---------------------------------------------------------------------
    async def check(self) -> bool:
        """Read again every folder whose interval has passed and whose files changed; whether anything did.
        One check at a time: a request that arrives during one is answered with what is served now."""
        if self._checking:
            return False
        now = time.monotonic()
        due = [s for s in self._sources
               if s.made is None and s.refresh_seconds and now - s.checked >= s.refresh_seconds]
        if not due:
            return False
        self._checking = True
        try:
            changed = False
            for source in due:
                changed |= await self._check(source)
            return changed
        finally:
            self._checking = False

    async def watch(self) -> None:
        """Check the folders every ``refresh_seconds`` until cancelled (what ``Runtime`` runs while a client
        can hear a change)."""
        while (every := self.refresh_seconds) is not None:
            await asyncio.sleep(every)
            try:
                await self.check()
            except Exception:
                log.exception("checking the skill folders failed")

    async def _check(self, source: Source) -> bool:
        source.checked = time.monotonic()
        seen = await run_sync(source.signature)
        if seen == source.seen:
            return False
        try:
            found = await run_sync(source.read)
        except (SkillError, OSError) as exc:
            if str(exc) != source.failed:
                log.error("skills of %s not read again, still served as they were: %s", source.describe(), exc)
            source.failed = str(exc)
            return False
        source.seen, source.failed = seen, None
        if source not in self._sources:  # removed while it was read
            return False
        try:
            return self._apply(source, found)
        except SkillError as exc:
            log.error("skills of %s not served anew: %s", source.describe(), exc)
            return False

    # -- the resources and directories ---------------------------------------------------------------------
    def _apply(self, source: Source, found: list[Skill], *, new: bool = False) -> bool:
        before = [] if new else self._found[source]
        if not new and len(before) == len(found) and all(a.same_as(b) for a, b in zip(before, found, strict=True)):
            return False
        others = {s.uri: s for src in self._sources if src is not source for s in self._found[src]}
        served_by = {s.uri: src for src in self._sources if src is not source for s in self._found[src]}
        taken: set[str] = set()
        for skill in found:
            if skill.uri in taken:
                raise SkillError(f"{source.describe()}: skill {skill.uri} is there twice")
            if (first := served_by.get(skill.uri)) is not None:
                raise SkillError(f"{source.describe()}: skill {skill.uri} is already served from {first.describe()}; "
                                 f"serve one of them under a prefix (prefix=...), or pass replace=True to replace it")
            taken.add(skill.uri)
        old_files = {uri: digest for s in before for uri, digest in _digests(s).items()}
        new_files = {uri: digest for s in found for uri, digest in _digests(s).items()}
        clash = [uri for uri in new_files if uri not in old_files and self._resources.find_static(uri) is not None]
        if clash:
            raise SkillError(f"{source.describe()}: {clash[0]} is already a resource of this server")
        self._found[source] = found
        self.skills = dict(sorted({**others, **{s.uri: s for s in found}}.items(), key=lambda kv: kv[1].path))
        self._resources.replace(list(old_files), [_resource(s, f) for s, f in _unique_files(found)])
        self._index()
        for uri, digest in old_files.items():
            if uri in new_files and new_files[uri] != digest:
                self._updated(uri)
        return True

    def _index(self) -> None:
        """The directory resources: every folder of every skill, and the prefixes above them."""
        directories: dict[str, Directory] = {}

        def folder(uri: str, skill: Skill | None) -> Directory:
            found = directories.get(uri)
            if found is None:
                found = directories[uri] = Directory(uri, skill)
                parent = uri.rsplit("/", 1)[0]
                if len(parent) > len(SCHEME):
                    folder(parent, skill if skill is not None and uri != skill.root else None).folders[uri] = found
            elif found.skill is None and skill is not None:
                found.skill = skill
            return found

        for skill in self.skills.values():
            folder(skill.root, skill)
            for file in skill.files:
                uri = skill.file_uri(file)
                parent = folder(uri.rsplit("/", 1)[0], skill)
                resource = self._resources.find_static(uri)
                if resource is not None:
                    parent.files[uri] = resource
        self.directories = directories


def _digests(skill: Skill) -> dict[str, str]:
    return {skill.file_uri(f): f.digest for f in skill.files}


def _unique_files(found: list[Skill]) -> list[tuple[Skill, SkillFile]]:
    """Each file once: a nested skill's files are its enclosing skill's too (the nested one describes its
    own ``SKILL.md``)."""
    out: dict[str, tuple[Skill, SkillFile]] = {}
    for skill in sorted(found, key=lambda s: -s.path.count("/")):
        for file in skill.files:
            out.setdefault(skill.file_uri(file), (skill, file))
    return [out[uri] for uri in sorted(out)]


def _resource(skill: Skill, file: SkillFile) -> Resource:
    from wiremcp.resources import Resource

    content: str | bytes = file.text if file.text is not None else file.data

    async def read() -> str | bytes:
        return content

    top = file.path == skill_files.MANIFEST
    return Resource(skill.file_uri(file), read, name=skill.name if top else file.path.rsplit("/", 1)[-1],
                    description=skill.description if top else "", mime_type=file.mime_type, size=file.size,
                    scopes=skill.scopes, listed=top or skill.list_files)
