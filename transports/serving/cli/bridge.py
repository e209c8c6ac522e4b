"""``wiremcp bridge URL``: a remote server over Streamable HTTP, served on stdio, for hosts that only launch
commands. Everything the host sends goes on to the server and back (both eras on either side, requests for input
included); the server is reached in the era it offers, and reached again if it goes away. A server that asks for
a token gets the user's: signed in through the browser before serving (``wiremcp.transports.oauth_client``), kept
in a file only the user can read, and refreshed."""

from __future__ import annotations

import argparse
from typing import Any

from wiremcp.transports.serving.cli.documentation import page
from wiremcp.transports.serving.cli.inspect import PROTOCOLS, header_lines
from wiremcp.transports.serving.settings import ConfigError


def register(commands: argparse._SubParsersAction[Any]) -> None:
    bridge = commands.add_parser(
        "bridge", help="serve a remote server on stdio, for hosts that launch commands",
        description="Serve the MCP server at URL (Streamable HTTP) on stdin/stdout: a host that only launches "
                    "commands uses it as a local server.",
        epilog=f"Bridging stdio and HTTP: {page('gateway/')}")
    bridge.add_argument("url", metavar="URL", help="the server's Streamable HTTP endpoint, http(s)://.../mcp")
    bridge.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="an HTTP header for every request, e.g. 'Authorization: Bearer TOKEN' (repeatable)")
    bridge.add_argument("--protocol", choices=PROTOCOLS, default="auto",
                        help="the protocol revision to speak to the server (default: auto, 2026-07-28 if it "
                             "speaks it)")
    bridge.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for each answer (default: %(default)g)")
    bridge.add_argument("--client-metadata-url", metavar="URL",
                        help="sign in as the client this Client ID Metadata Document describes, where the "
                             "authorization server accepts them (else the bridge registers itself)")
    bridge.add_argument("--no-sign-in", action="store_true",
                        help="never open a browser to sign in: a server that asks for a token gets only the "
                             "--header ones")
    bridge.set_defaults(run=run_bridge)


def run_bridge(args: argparse.Namespace) -> int:
    from wiremcp.transports.serving import deployment
    from wiremcp.transports.upstream import is_url

    if not is_url(args.url):
        raise ConfigError(f"wiremcp bridge: {args.url!r} is not an http:// or https:// URL")
    if args.timeout <= 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    headers = header_lines(args.header)
    signing_in = not args.no_sign_in and not any(name.lower() == "authorization" for name in headers)
    auth = None
    if signing_in:
        import asyncio

        from wiremcp.transports.oauth_client import BrowserSignIn, SignInFailed

        auth = BrowserSignIn(args.url, client_metadata_url=args.client_metadata_url)
        try:
            asyncio.run(auth.ready())  # before serving: a host's first request does not wait on the browser
        except SignInFailed as exc:
            raise ConfigError(f"wiremcp bridge: signing in to {args.url} failed: {exc}") from None

    def load(settings: object) -> Any:
        from wiremcp.transports.gateway import remote

        return remote(args.url, headers=headers, auth=auth, protocol=args.protocol, timeout=args.timeout)

    deployment.serve(load, "stdio")
    return 0
