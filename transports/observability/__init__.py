"""Observability of a deployment: Prometheus metrics, OpenTelemetry tracing, and the probes
(``/healthz``, ``/readyz``, ``/metrics``) in front of the MCP app."""
