"""An upstream's Agent Skills (SEP-2640) served by a gateway under the mount's prefix, in both eras the gateway
speaks to it: listed, got, their folders read and their files read (text and binary) from the gateway's copy;
a skill the upstream adds while it runs is served once its resources change. The upstream is
``tests/support/skills_upstream.py``, launched on stdio."""

from __future__ import annotations

import asyncio
import base64
import sys

import pytest

from tests.support.gateways import BOUND, gateway
from tests.support.skills_upstream import LOGO
from wiremcp.protocol import SKILLS_EXTENSION
from wiremcp.transports import Client, remote

pytestmark = [pytest.mark.timeout(60), pytest.mark.spec("2026-07-28/extensions/skills")]

UPSTREAM = [sys.executable, "-m", "wiremcp", "stdio", "tests/support/skills_upstream.py"]


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25"])
async def test_the_upstreams_skills_are_served_under_the_prefix_from_the_gateways_copy(protocol: str) -> None:
    async with Client(gateway(remote(command=UPSTREAM, protocol=protocol))) as client:
        assert client.initialize_result is not None
        capabilities = client.initialize_result["capabilities"]
        listed = (await client.request("skills/list"))["skills"]
        got = (await client.request("skills/get", {"uri": "skill://wc/billing/refunds/SKILL.md"}))["skill"]
        folder = (await client.request("resources/directory/read", {"uri": "skill://wc/billing/refunds"}))
        policy = await client.request("resources/read", {"uri": "skill://wc/billing/refunds/references/POLICY.md"})
        logo = await client.request("resources/read", {"uri": "skill://wc/billing/refunds/assets/logo.bin"})
        resources = [r["uri"] for r in (await client.request("resources/list"))["resources"]]
    assert SKILLS_EXTENSION in capabilities["extensions"]
    assert [skill["uri"] for skill in listed] == ["skill://wc/billing/refunds/SKILL.md"]
    assert got["frontmatter"] == {"name": "refunds", "description": "How to refund an order."}
    assert sorted(r["uri"].rsplit("/", 1)[-1] for r in got["resources"]) == ["POLICY.md", "SKILL.md", "logo.bin"]
    assert sorted(r["uri"] for r in folder["resources"]) == [
        "skill://wc/billing/refunds/SKILL.md", "skill://wc/billing/refunds/assets",
        "skill://wc/billing/refunds/references"]
    assert policy["contents"][0]["text"] == "Refunds within 30 days."
    assert base64.b64decode(logo["contents"][0]["blob"]) == LOGO
    assert resources == ["skill://wc/billing/refunds/SKILL.md"]  # as the upstream lists them


async def skill_uris(client: Client) -> set[str]:
    return {skill["uri"] for skill in (await client.request("skills/list"))["skills"]}


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25"])
async def test_a_skill_the_upstream_adds_is_served_once_its_resources_change(protocol: str) -> None:
    child = remote(command=UPSTREAM, protocol=protocol)
    async with Client(gateway(child)) as client:
        with child.runtime.backend.bus.subscribe() as changes:
            events = aiter(changes)
            await client.call_tool("wc_add_skill", {"name": "audits"})
            async with asyncio.timeout(BOUND):
                while "skill://wc/audits/SKILL.md" not in await skill_uris(client):
                    await anext(events)
        text = await client.request("resources/read", {"uri": "skill://wc/audits/SKILL.md"})
    assert "Do audits." in text["contents"][0]["text"]
