"""Redis (or Valkey) behind the stores, so that any replica serves any session: sessions, event streams,
tasks and the subscription bus, and the link between replicas (leases, wake-ups, routed responses)."""
