"""The consent and error pages: what a client calls itself is shown as text, never as markup; the pages run no
script, load nothing, cannot be framed; the consent form's answer may go back to the client's origin only."""

from __future__ import annotations

from wiremcp.auth.oauth.pages import consent_page, error_page


def _consent(**changes: object) -> tuple[str, dict[str, str]]:
    options: dict[str, object] = {
        "action": "/oauth/consent", "approval": "a1", "csrf": "c1", "client_name": "Notes <script>alert(1)</script>",
        "client_id": "wmc-1", "client_uri": "https://notes.example.com", "registered_by": "itself",
        "redirect_uri": "https://notes.example.com/cb", "scopes": ["notes:read", "<b>x</b>"], "user": "ada@example.com",
        "provider": "Google", **changes}
    page = consent_page(**options)  # type: ignore[arg-type]
    return bytes(page.body).decode(), dict(page.headers)


def test_what_the_client_says_is_escaped() -> None:
    html, _ = _consent()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert "notes.example.com" in html
    assert "Signed in at Google as <b>ada@example.com</b>" in html


def test_the_page_is_locked_down_and_its_form_may_only_go_back_to_the_client() -> None:
    _, headers = _consent()
    policy = headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "form-action 'self' https://notes.example.com;" in policy
    assert headers["x-frame-options"] == "DENY"
    assert headers["cache-control"] == "no-store"
    _, loopback = _consent(redirect_uri="http://127.0.0.1:8976/callback")
    assert "form-action 'self' http://127.0.0.1:8976;" in loopback["content-security-policy"]
    _, app = _consent(redirect_uri="com.example.notes:/oauth")
    assert "form-action 'self' com.example.notes:;" in app["content-security-policy"]


def test_a_redirect_uri_that_would_add_to_the_policy_adds_nothing() -> None:
    _, headers = _consent(redirect_uri="https://x.example.com;script-src/cb")
    assert "script-src" not in headers["content-security-policy"]
    assert "form-action 'self';" in headers["content-security-policy"]


def test_a_loopback_redirect_warns_the_user() -> None:
    html, _ = _consent(redirect_uri="http://127.0.0.1:8976/callback")
    assert "an application on this computer" in html
    assert "an application on this computer" not in _consent()[0]


def test_an_error_page_escapes_its_words() -> None:
    page = error_page("Bad <i>thing</i>", "because <script>")
    body = bytes(page.body).decode()
    assert page.status_code == 400
    assert "<script>" not in body
    assert "&lt;i&gt;" in body
