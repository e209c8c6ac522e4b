"""Store failures: ``StoreUnavailable``, the one failure every shared store (sessions, events, tasks, the
bus) reports the same way: it cannot be reached right now."""

from __future__ import annotations


class StoreUnavailable(Exception):
    """A shared store (Redis) did not answer; the request fails with 503 and may be retried."""
