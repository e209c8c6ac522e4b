"""Failures that mean "not now": ``StoreUnavailable``, the one failure every shared store (sessions, events,
tasks, the bus) reports the same way, and ``UpstreamUnavailable``, a gateway's remote child that cannot be
reached right now. Either fails the request with 503 and ``Retry-After`` (``wiremcp.refusals``): it may be sent
again."""

from __future__ import annotations


class Unavailable(Exception):
    """The request cannot be served now, and may be retried shortly."""


class StoreUnavailable(Unavailable):
    """A shared store (Redis) did not answer; the request fails with 503 and may be retried."""


class UpstreamUnavailable(Unavailable):
    """A server this one forwards to (a gateway's remote child) cannot be reached now or did not answer in time;
    the request fails with 503 and may be retried."""
