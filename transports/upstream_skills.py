"""An upstream's Agent Skills (SEP-2640), copied for a gateway to serve (``wiremcp.transports.gateway``).

When the upstream offers the skills extension, its skills are listed (``skills/list``) and every file of each is
read (``resources/read``) when the gateway connects and whenever the upstream's resources change. The gateway
then serves them as skills of its own, under the mount's prefix: ``skills/list``, ``skills/get``,
``resources/directory/read`` and the files' reads answer from the copy, as for a skill of the gateway's own.
A skill that cannot be read whole (a file missing, not the digest listed, past the size bound) is left out, and
the log says why.
"""

from __future__ import annotations

import base64
import binascii
import logging

from wiremcp.protocol import SKILLS_EXTENSION
from wiremcp.skills import MANIFEST, SCHEME, Skill, SkillFile, file_of
from wiremcp.transports.upstream import Client, Failed
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.gateway")

MAX_BYTES = 16 * 1024 * 1024
"""The most an upstream's skills may hold in all (their files' bytes): past it, the rest are left out."""


def offers_skills(client: Client) -> bool:
    extensions = client.capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(SKILLS_EXTENSION), dict)


async def read_skills(client: Client, name: str) -> list[Skill]:
    """The skills ``client``'s server serves, each with every file it lists (``name``: the upstream's, for the
    log); none when it offers no skills."""
    if not offers_skills(client):
        return []
    entries = await client.list_all("skills/list", "skills")
    made: list[Skill] = []
    budget = MAX_BYTES
    for entry in entries:
        try:
            skill = await _skill(client, entry, budget)
        except (Failed, ValueError) as exc:
            log.warning("upstream %s: skill %s not served: %s", name, entry.get("uri"), exc)
            continue
        budget -= sum(file.size for file in skill.files)
        made.append(skill)
    return made


async def _skill(client: Client, entry: JSONObject, budget: int) -> Skill:
    uri, frontmatter = entry.get("uri"), entry.get("frontmatter")
    suffix = f"/{MANIFEST}"
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or not uri.endswith(suffix) \
            or not isinstance(frontmatter, dict):
        raise ValueError("not a skill entry (uri skill://<path>/SKILL.md and its frontmatter)")
    root = uri.removesuffix(suffix)
    listed = entry.get("resources")
    files: list[SkillFile] = []
    for described in listed if isinstance(listed, list) else [{"uri": uri}]:
        file_uri = described.get("uri") if isinstance(described, dict) else None
        if not isinstance(file_uri, str) or not file_uri.startswith(f"{root}/"):
            raise ValueError(f"a file outside the skill: {file_uri!r}")
        read = file_of(file_uri.removeprefix(f"{root}/"), await _content(client, file_uri))
        digest = described.get("digest")
        if isinstance(digest, str) and digest != read.digest:
            raise ValueError(f"{file_uri} does not have the digest its listing gives")
        budget -= read.size
        if budget < 0:
            raise ValueError(f"the upstream's skills hold more than {MAX_BYTES} bytes")
        files.append(read)
    files.sort(key=lambda file: (file.path != MANIFEST, file.path))
    if not files or files[0].path != MANIFEST:
        raise ValueError(f"no {MANIFEST}")
    return Skill(root.removeprefix(SCHEME), frontmatter, files, [])


async def _content(client: Client, uri: str) -> bytes:
    contents = (await client.request("resources/read", {"uri": uri})).get("contents")
    content = contents[0] if isinstance(contents, list) and contents and isinstance(contents[0], dict) else {}
    if isinstance(content.get("text"), str):
        return str(content["text"]).encode()
    try:
        return base64.b64decode(str(content.get("blob")), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{uri}: no text or blob") from None
