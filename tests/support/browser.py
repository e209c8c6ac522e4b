"""Headless Chromium driven over its DevTools protocol on a pipe: the one browser driver of the suite (the
documentation site's crawl, and a user signing in at an identity provider).

:class:`DevTools` is the browser (its commands, by a deadline, and the events it sends); :class:`Tab` a page in it,
with what a sign-in needs: go to a URL, wait for a page whose URL or text matches, fill form fields by name, submit,
read the URL and the text, and wait until a navigation (through any redirects) asks for a URL with a given prefix,
e.g. an OAuth client's redirect URI, or until it is answered from one. Every wait ends by the browser's deadline;
none sleeps.

    with DevTools(tmp_path / "profile", deadline=time.monotonic() + 60, needed_for="the sign-in test") as browser:
        tab = browser.open_tab()
        tab.go(authorize_url)
        tab.wait_for_page(url_prefix=idp.login_url)
        tab.fill(username="ada", password=password)
        tab.submit()
        callback = tab.wait_for_request(redirect_uri)  # the redirect URI with its code and state
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.parts import chromium

ON_FDS_3_AND_4 = ("import os, sys; r, w = map(int, sys.argv[1:3]); os.dup2(r, 3); os.dup2(w, 4); os.close(r); "
                  "os.close(w); os.execvp(sys.argv[3], sys.argv[3:])")
"""Run ``argv[3:]`` with the fds ``argv[1]`` on 3 and ``argv[2]`` on 4, as ``--remote-debugging-pipe`` has them."""


class DevToolsError(AssertionError):
    """The browser answered a command with an error (e.g. the page's context went away in a navigation)."""


def _above_ten(fd: int) -> int:
    """``fd`` moved to the lowest free descriptor from 10 (not inherited unless passed), ``fd`` itself closed."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class DevTools:
    """Headless Chromium driven over its DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
    messages ended by a NUL byte, read by the browser on fd 3 and written on fd 4), with its profile in
    ``profile``. Every command is answered, and every wait ends, by ``deadline`` (a ``time.monotonic()``);
    ``needed_for`` says what the test needs Chromium for, should it be missing (see ``tests.support.parts``).
    The events the browser sends are kept, per attached page (session), in :attr:`events`."""

    def __init__(self, profile: Path, deadline: float, needed_for: str) -> None:
        self.deadline = deadline
        browser = chromium(needed_for)
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()
        # the child's ends above 3 and 4, which the shim overwrites (a test run alone gets the lowest fds)
        to_browser, from_browser = (_above_ten(fd) for fd in (to_browser, from_browser))
        # a Python shim puts the pipe's ends on fds 3 and 4 and becomes the browser (no preexec_fn: threads run)
        self.process = subprocess.Popen(
            [sys.executable, "-c", ON_FDS_3_AND_4, str(to_browser), str(from_browser),
             browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._read = b""
        self._last_id = 0
        self._replied: dict[str, Any] = {}
        self.events: dict[str | None, list[dict[str, Any]]] = {}
        """The events received so far, by session (None: the browser's own), in order: ``{"method", "params"}``."""

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _receive(self, waiting_for: str) -> None:
        """Read the next message; an event is kept in :attr:`events`, a reply returned to ``call`` through
        ``_replied``. Fails if nothing comes by the deadline, saying it was ``waiting_for`` what."""
        while b"\0" not in self._read:
            ready, _, _ = select.select([self._replies], [], [], max(0.0, self.deadline - time.monotonic()))
            assert ready, f"no {waiting_for} from the browser by the deadline"
            chunk = os.read(self._replies, 65536)
            assert chunk, f"the browser exited (code {self.process.poll()}) before {waiting_for}"
            self._read += chunk
        raw, self._read = self._read.split(b"\0", 1)
        message = json.loads(raw)
        if "id" in message:
            self._replied = message
        else:
            self.events.setdefault(message.get("sessionId"), []).append(
                {"method": message["method"], "params": message.get("params", {})})

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """``method``'s result (of the page attached as ``session``, or of the browser), by the deadline; a
        :class:`DevToolsError` if the browser answers with an error."""
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params,
                   **({"sessionId": session} if session else {})}
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while self._replied.get("id") != self._last_id:  # events and earlier replies are not waited for
            self._receive(f"answer to {method}")
        if "error" in self._replied:
            raise DevToolsError(method, self._replied["error"])
        result: dict[str, Any] = self._replied["result"]
        return result

    def wait_for_event(self, session: str | None, seen: int, waiting_for: str) -> int:
        """Return once ``session`` has more than ``seen`` events (the number it has then), by the deadline."""
        while len(self.events.get(session, [])) <= seen:
            self._receive(waiting_for)
        return len(self.events[session])

    def open_tab(self) -> Tab:
        """A new blank page, attached, its page and network events on."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        tab = Tab(self, session, target)
        self.call("Page.enable", session)
        self.call("Network.enable", session)
        return tab

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        os.close(self._commands)
        os.close(self._replies)


STATE = """({url: location.href, ready: document.readyState,
             text: document.body ? document.body.innerText : ""})"""
"""The page's address, whether it has loaded, and its text."""

FILL = """((fields) => {
  for (const [name, value] of Object.entries(fields)) {
    const field = document.querySelector(`[name="${CSS.escape(name)}"]`);
    if (!field) throw new Error(`no field named ${name} on ${location.href}`);
    field.value = value;
    field.dispatchEvent(new Event("input", {bubbles: true}));
    field.dispatchEvent(new Event("change", {bubbles: true}));
  }
})(%s)"""

SUBMIT = """((label) => {
  const buttons = [...document.querySelectorAll("button[type=submit], button:not([type]), input[type=submit]")];
  const button = buttons.find(b => label === null || (b.innerText || b.value).trim() === label);
  if (!button) throw new Error(`no submit button ${label === null ? "" : label + " "}on ${location.href}`);
  button.click();
})(%s)"""


class Tab:
    """A page of a :class:`DevTools` browser (attached as ``session``; its main frame's id is ``target``)."""

    def __init__(self, browser: DevTools, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def go(self, url: str) -> str | None:
        """Navigate to ``url``; answered once the navigation has committed (not loaded: see :meth:`wait_for_page`).
        The browser's error text if it could not (e.g. ``net::ERR_CONNECTION_REFUSED``), else None."""
        error: str | None = self.browser.call("Page.navigate", self.session, url=url).get("errorText")
        return error

    def evaluate(self, expression: str, *, await_promise: bool = False) -> Any:
        """The value of the JavaScript ``expression`` in the page; an AssertionError with the page's message if
        it throws."""
        answer = self.browser.call("Runtime.evaluate", self.session, expression=expression,
                                   awaitPromise=await_promise, returnByValue=True)
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise AssertionError(details.get("exception", {}).get("description") or details.get("text"))
        return answer["result"].get("value")

    @property
    def url(self) -> str:
        """The page's current address."""
        return str(self.evaluate("location.href"))

    @property
    def text(self) -> str:
        """The page's visible text."""
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def wait_for_page(self, *, url_prefix: str | None = None, url_contains: str | None = None,
                      text: str | None = None) -> str:
        """Return the address of the loaded page once it starts with ``url_prefix``, has ``url_contains`` in its
        address and ``text`` in its text (each when given); fails, saying where the page is, by the deadline."""
        state: dict[str, Any] = {}
        while True:
            seen = len(self.browser.events.get(self.session, []))
            try:
                state = self.evaluate(STATE)
            except AssertionError:  # the context went away: a navigation is under way, its events will come
                state = {}
            if state and state["ready"] == "complete" and (
                    (url_prefix is None or state["url"].startswith(url_prefix))
                    and (url_contains is None or url_contains in state["url"])
                    and (text is None or text in state["text"])):
                return str(state["url"])
            where = f"{state.get('url')} ({state.get('ready')}): {state.get('text', '')[:500]!r}"
            self.browser.wait_for_event(self.session, seen, f"page {url_prefix or ''}{url_contains or ''} "
                                                            f"with {text!r}; the page is at {where}")

    def fill(self, **fields: str) -> None:
        """Set the form fields named as the keywords to their values (an AssertionError if one is missing)."""
        self.evaluate(FILL % json.dumps(fields))

    def submit(self, label: str | None = None) -> None:
        """Click the page's submit button (the one whose text is ``label``, when given); the navigation it
        starts is waited for with :meth:`wait_for_page` or :meth:`wait_for_request`."""
        self.evaluate(SUBMIT % json.dumps(label))

    def requested(self) -> list[str]:
        """Every address the page's main frame asked for so far, in order, redirects' hops included."""
        return [event["params"]["request"]["url"] for event in self.browser.events.get(self.session, [])
                if event["method"] == "Network.requestWillBeSent" and event["params"].get("type") == "Document"
                and event["params"].get("frameId") == self.target]

    def wait_for_request(self, url_prefix: str) -> str:
        """The first address starting with ``url_prefix`` that the page asked for (following every redirect
        until one leads there), once it does, by the deadline: e.g. an OAuth client's redirect URI with the
        authorization response. Whether anything answers there does not matter."""
        while True:
            seen = len(self.browser.events.get(self.session, []))
            found = next((url for url in self.requested() if url.startswith(url_prefix)), None)
            if found is not None:
                return found
            self.browser.wait_for_event(self.session, seen,
                                        f"request for {url_prefix} (asked for so far: {self.requested()})")

    def wait_for_response(self, url_prefix: str) -> int:
        """The status of the first answer the page's main frame got from an address starting with ``url_prefix``,
        once it has it, by the deadline: e.g. a native OAuth client's own callback server having taken the
        authorization response."""
        while True:
            seen = len(self.browser.events.get(self.session, []))
            for event in self.browser.events.get(self.session, []):
                params = event["params"]
                if event["method"] == "Network.responseReceived" and params.get("type") == "Document" \
                        and params.get("frameId") == self.target and params["response"]["url"].startswith(url_prefix):
                    return int(params["response"]["status"])
            self.browser.wait_for_event(self.session, seen,
                                        f"answer from {url_prefix} (asked for so far: {self.requested()})")
