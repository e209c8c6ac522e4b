"""SEP-2640's methods, in both eras: ``skills/list`` (the skills the caller may read, a page at a time, an entry
never split), ``skills/get`` (one entry by its ``SKILL.md`` URI, listed or not) and ``resources/directory/read``
(the direct children of a skill's folder, or of a prefix above skills). A server without skills has none of
them (-32601). Each first looks whether a skill folder changed (``SkillSet.check``, at most every
``refresh_seconds``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from wiremcp import access, pagination
from wiremcp.errors import MethodNotFound
from wiremcp.types import JSONObject

if TYPE_CHECKING:
    from wiremcp.context import Context
    from wiremcp.skill_set import SkillSet


async def list_skills(params: JSONObject, ctx: Context) -> JSONObject:
    skills = await _served(ctx, "skills/list")
    return _page(access.visible(list(skills.skills.values()), ctx, "resources"), params, ctx, "skills")


async def get_skill(params: JSONObject, ctx: Context) -> JSONObject:
    await _served(ctx, "skills/get")
    return {"skill": access.skill(params.get("uri"), ctx).to_wire()}


async def read_directory(params: JSONObject, ctx: Context) -> JSONObject:
    await _served(ctx, "resources/directory/read")
    directory = access.directory(params.get("uri"), ctx)
    return _page(access.visible(directory.children(), ctx, "resources"), params, ctx, "resources")


def _page(items: Sequence[Any], params: JSONObject, ctx: Context, key: str) -> JSONObject:
    """One page of ``items`` under ``key``, and the next page's cursor if there is one."""
    chunk, next_cursor = pagination.page(items, params.get("cursor"), ctx.server.page_size)
    result: JSONObject = {key: [item.to_wire() for item in chunk]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def _served(ctx: Context, method: str) -> SkillSet:
    skills = ctx.server.skill_set
    if not skills:
        raise MethodNotFound(method)
    await skills.check()
    return skills
