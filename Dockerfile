# syntax=docker/dockerfile:1
#
# wiremcp: the bundled demo server (or any WIREMCP_SERVER=MODULE:ATTR) over Streamable HTTP on :8000.
#
#   docker build -t wiremcp .
#   docker run --rm -p 127.0.0.1:8000:8000 wiremcp            # http://localhost:8000/mcp
#
# Several replicas behind a load balancer: deploy/compose.yaml, deploy/kubernetes/ (and deploy/README.md).
# Every setting is an environment variable (README.md, "Settings"); the ones that matter in a container:
#
#   WIREMCP_ALLOWED_HOSTS  the Host values accepted (421 otherwise). The image keeps the framework's
#                          loopback default, so `docker run -p 127.0.0.1:8000:8000` works out of the box
#                          and stays protected against DNS rebinding. Behind a load balancer or an
#                          ingress, set it to the public host name(s) clients use, e.g.
#                          `mcp.example.com`, or to `*` when the proxy in front already checks Host.
#                          /healthz, /readyz and /metrics are not subject to the check.
#   WIREMCP_REDIS_URL      shared sessions, so any replica serves any session (e.g. redis://redis:6379/0)
#   WIREMCP_REQUEST_STATE_KEYS  the same keys on every replica (a secret)
#   WIREMCP_DRAIN_SECONDS  on SIGTERM, how long requests in flight may finish (10). The orchestrator's
#                          stop timeout (compose stop_grace_period, Kubernetes
#                          terminationGracePeriodSeconds) must cover the whole exit: the settle delay
#                          (WIREMCP_DRAIN_SETTLE_SECONDS, 0), the drain and its bounded cut-off (7 s),
#                          idle connections closing before and after the drain (uvicorn's keep-alive,
#                          5 s, and 1 s, each time), then uvicorn's
#                          --timeout-graceful-shutdown below (15).

ARG PYTHON_IMAGE=python:3.11-slim

# -- builder: a wheel of this project, installed with its dependencies into /opt/venv -------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv

WORKDIR /src
# Only what the wheel is built from: the folders pyproject.toml's [tool.setuptools.package-dir] maps to the
# package wiremcp, and the readme it names; and the examples, which the wheel does not ship.
COPY pyproject.toml README.md ./
COPY app ./app
COPY transports ./transports
COPY auth ./auth
COPY examples ./examples

# A wheel, not `pip install .` of the tree: the image gets exactly what a release would ship.
# pip compiles the bytecode at install time (the final image's file system may be read-only).
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/venv/bin/pip install /wheels/wiremcp-*.whl \
 && /opt/venv/bin/python -c "import wiremcp.transports.serving.demo, wiremcp.transports.serving.deployment, wiremcp.transports.http_app, wiremcp.auth.middleware"

# -- runtime: the venv, a non-root user, nothing else ----------------------------------------------------
FROM ${PYTHON_IMAGE}

# A fixed numeric uid/gid: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --system --gid 10001 wiremcp \
 && useradd --system --uid 10001 --gid wiremcp --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin wiremcp

COPY --from=builder /opt/venv /opt/venv
# The working directory is the repository root as `uvicorn app:asgi` expects it: app/ is only a door to the
# installed wiremcp (its __init__.py re-exports it, nothing else is read), examples/ the servers it ships.
COPY --from=builder /src/app/__init__.py /srv/wiremcp/app/__init__.py
COPY --from=builder /src/examples /srv/wiremcp/examples

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    WIREMCP_SERVER=wiremcp.transports.serving.demo:server \
    WIREMCP_ALLOWED_HOSTS="127.0.0.1:*,localhost:*,[::1]:*" \
    WIREMCP_DRAIN_SECONDS=10 \
    WIREMCP_LOG_LEVEL=INFO

# `app:asgi` is the door above; every module it serves is imported from the venv.
WORKDIR /srv/wiremcp
USER 10001:10001

EXPOSE 8000

# Liveness of the event loop. No curl in the slim image: Python's urllib does it (any error -> exit 1).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]

# uvicorn is PID 1 (exec form) and takes SIGTERM itself: readiness turns 503 and every answer closes its
# connection, the listening socket closes, the drain runs, idle connections are left to close, and the
# process exits (uvicorn's own wait, --timeout-graceful-shutdown, comes after the drain).
STOPSIGNAL SIGTERM

# --no-proxy-headers: uvicorn's own reading of X-Forwarded-For/-Proto is off (by default it believes any
#   local client); wiremcp reads them from the proxies WIREMCP_TRUSTED_PROXIES names (none unless set: set it
#   to the proxy's address or network, or "*" where only the proxy can reach the container).
# --no-access-log: the load balancer logs every request already; wiremcp's own logs go to stderr.
CMD ["uvicorn", "app:asgi", "--host", "0.0.0.0", "--port", "8000", "--no-proxy-headers", "--timeout-graceful-shutdown", "15", "--no-access-log"]
