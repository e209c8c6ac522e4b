"""Replicas behind the real nginx (``deploy/nginx.py``: the shipped ``deploy/nginx.conf``, one worker), with
the replica of each step still named by the test: ``await balanced.to(i)`` makes the next request that
goes through nginx land on upstream ``i``. Round robin with one worker strictly alternates, so the helper
sends ``/healthz`` through nginx until the upstream before ``i`` has answered one (nginx's access log
says which did). Requests go one after another; a stream still open takes no turn."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx

from deploy.nginx import Nginx, Routed
from tests.support.http import READ_BOUND, UvicornProcess


class Balanced:
    def __init__(self, nginx: Nginx, replicas: Sequence[UvicornProcess]) -> None:
        self.nginx = nginx
        self.replicas = list(replicas)

    @property
    def url(self) -> str:
        """The MCP endpoint, through nginx."""
        return self.nginx.base_url + "/mcp"

    async def routed(self) -> list[Routed]:
        return await asyncio.to_thread(self.nginx.routed)

    async def to(self, index: int) -> None:
        """The next request through nginx goes to replica ``index``."""
        before = (index - 1) % len(self.replicas)
        async with httpx.AsyncClient(timeout=READ_BOUND) as http:
            for _ in range(len(self.replicas)):
                assert (await http.get(self.nginx.base_url + "/healthz")).status_code == 200
                answered = [r for r in await self.routed() if r.path == "/healthz"][-1]
                if answered.replica == before:
                    return
        raise AssertionError(f"nginx did not go round its upstreams in turn: {await self.routed()}")

    async def served(self) -> list[Routed]:
        """What nginx forwarded, less the steering ``/healthz`` requests."""
        return [r for r in await self.routed() if r.path != "/healthz"]
