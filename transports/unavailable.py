"""The one failure every shared store reports the same way: it cannot be reached right now."""

from __future__ import annotations


class StoreUnavailable(Exception):
    """A shared store (Redis) did not answer; the request fails with 503 and may be retried."""
