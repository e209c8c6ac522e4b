"""The two pages a person sees: the consent page (which client asks, where it sends them back, what it may do)
and the error page. Everything shown is escaped; the pages load nothing, run no script, cannot be framed and are
never cached.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
}
SOURCE = re.compile(r"[a-z][a-z0-9+.-]*:(//[A-Za-z0-9.-]+(:[0-9]{1,5})?|//\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?)?")
"""A CSP source expression of a scheme, or a scheme, a host and a port: nothing else."""
STYLE = ("body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#222}"
         "h1{font-size:1.4rem}.host{font-family:monospace;font-weight:bold}.warn{color:#8a4b00}"
         "button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem}ul{padding-left:1.2rem}")


def _page(title: str, body: str, status: int = 200, form_goes_to: str | None = None) -> HTMLResponse:
    html = (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport "
            f"content='width=device-width'><title>{escape(title)}</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>")
    headers = dict(HEADERS)
    if form_goes_to:  # a form's answer redirects there, and browsers hold redirects to form-action too
        headers["content-security-policy"] = headers["content-security-policy"].replace(
            "form-action 'self'", f"form-action 'self' {form_goes_to}")
    return HTMLResponse(html, status_code=status, headers=headers)


def _source(uri: str) -> str | None:
    """The CSP source expression for where ``uri`` points: its origin, or its scheme for a private-use one; None
    when it would not be a plain source (nothing a redirect URI holds may add a directive to the policy)."""
    parts = urlsplit(uri)
    source = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.scheme in ("http", "https") \
        else f"{parts.scheme}:"
    return source if SOURCE.fullmatch(source) else None


def error_page(title: str, description: str, status: int = 400) -> HTMLResponse:
    return _page(title, f"<h1>{escape(title)}</h1><p>{escape(description)}</p>", status)


def consent_page(*, action: str, approval: str, csrf: str, client_name: str | None, client_id: str,
                 client_uri: str | None, registered_by: str, redirect_uri: str, scopes: Sequence[str],
                 user: str, provider: str) -> HTMLResponse:
    """The page that asks the user whether ``client_name`` may act for them."""
    host = urlsplit(redirect_uri).netloc or redirect_uri
    loopback = urlsplit(redirect_uri).hostname in ("127.0.0.1", "::1", "localhost")
    name = escape(client_name or client_id)
    scope_items = "".join(f"<li><code>{escape(s)}</code></li>" for s in scopes) or "<li>no particular scope</li>"
    about = f' (<a href="{escape(client_uri)}" rel="noreferrer">{escape(client_uri)}</a>)' if client_uri else ""
    warn = ("<p class=warn>It sends you back to an application on this computer. Allow it only if you started "
            "this sign-in yourself, from an application you trust.</p>") if loopback else ""
    body = (f"<h1>Allow {name} to use this server as you?</h1>"
            f"<p>Signed in at {escape(provider)} as <b>{escape(user)}</b>.</p>"
            f"<p><b>{name}</b>{about}, {escape(_registered(registered_by, client_id))}, asks to act for you "
            f"with these permissions:</p><ul>{scope_items}</ul>"
            f"<p>If you allow it, you go back to <span class=host>{escape(host)}</span>.</p>{warn}"
            f"<form method=post action='{escape(action)}'>"
            f"<input type=hidden name=approval value='{escape(approval)}'>"
            f"<input type=hidden name=csrf value='{escape(csrf)}'>"
            f"<button type=submit name=decision value=allow>Allow</button>"
            f"<button type=submit name=decision value=deny>Deny</button></form>")
    return _page(f"Allow {client_name or client_id}?", body, form_goes_to=_source(redirect_uri))


def _registered(by: str, client_id: str) -> str:
    if by == "metadata document":
        return f"described by {client_id}"
    if by == "itself":
        return "which registered itself with this server"
    return "registered by this server's operator"
