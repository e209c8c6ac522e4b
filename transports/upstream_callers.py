"""A remote child whose calls go to the upstream with the caller's own token (``remote(url, caller_token=...)``):
the token the caller holds at the upstream's provider (``wiremcp.auth.oauth.upstream_token`` when this server
signed the caller in), never the caller's token to us.

- A **stateless** upstream (2026-07-28) takes each request on its own: the request carries the caller's token.
- A **handshake-era** upstream binds a session to whoever opened it, so each caller gets a session of its own,
  opened with its token and kept for its next calls (at most ``MAX_CALLERS`` at once: the one unused longest is
  closed to make room; all are closed when the gateway stops). A token that was refreshed replaces the old one
  on the caller's session.

The gateway's own credentials (``headers=``, ``auth=``) are what it lists the upstream's catalog and follows its
changes with.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from wiremcp.context import Context
from wiremcp.errors import INVALID_REQUEST, MCPError
from wiremcp.principal import key_of
from wiremcp.transports.upstream import Client, connect
from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.gateway")

CallerToken = Callable[[Context], Awaitable[str]]
"""How the gateway gets a caller's own token for the upstream (``LookupError``: the caller has none)."""
MAX_CALLERS = 256
"""Callers with a session of their own at a handshake-era upstream at once."""


class Callers:
    """The callers' own sessions at one handshake-era upstream, and their tokens."""

    def __init__(self, name: str, url: str, token: CallerToken, *, protocol: str, headers: Mapping[str, str] | None,
                 timeout: float, client_info: Mapping[str, str], capabilities: JSONObject) -> None:
        self.name, self.url, self.token, self.protocol = name, url, token, protocol
        self.headers, self.timeout = dict(headers or {}), timeout
        self.client_info, self.capabilities = client_info, capabilities
        self._open: OrderedDict[str, tuple[Client, contextlib.AsyncExitStack]] = OrderedDict()

    async def token_of(self, ctx: Context) -> str:
        """The caller's own token for the upstream; the caller is told when it has none."""
        try:
            return await self.token(ctx)
        except LookupError as exc:
            raise MCPError(INVALID_REQUEST, f"upstream {self.name} is called with your own token, and there is none "
                                            f"for you: {exc}") from None

    async def route(self, shared: Client, ctx: Context) -> tuple[Client, dict[str, str]]:
        """The client to send the caller's request on, and the headers to add to it."""
        token = await self.token_of(ctx)
        bearer = {"Authorization": f"Bearer {token}"}
        if shared.stateless:
            return shared, bearer
        key = key_of(ctx.principal) or f"token:{token}"
        found = self._open.get(key)
        if found is None:
            stack = contextlib.AsyncExitStack()
            client = await stack.enter_async_context(connect(
                self.url, protocol=self.protocol, headers={**self.headers, **bearer}, timeout=self.timeout,
                client_info=self.client_info, capabilities=self.capabilities))
            if key in self._open:  # another call of the caller's opened one meanwhile: that one is kept
                await stack.aclose()
                found = self._open[key]
            else:
                self._open[key] = found = (client, stack)
            while len(self._open) > MAX_CALLERS:
                _, (_, oldest) = self._open.popitem(last=False)
                await oldest.aclose()
        self._open.move_to_end(key)
        client = found[0]
        http: Any = getattr(client.channel, "client", None)
        if http is not None:
            http.headers["Authorization"] = bearer["Authorization"]  # a refreshed token from now on
        return client, {}

    async def forget(self, client: Client) -> None:
        """Close the caller's session ``client`` (its upstream failed it)."""
        for key, (open_client, stack) in list(self._open.items()):
            if open_client is client:
                del self._open[key]
                with contextlib.suppress(Exception):
                    await stack.aclose()

    async def close(self) -> None:
        while self._open:
            _, (_, stack) = self._open.popitem()
            with contextlib.suppress(Exception):
                await stack.aclose()
