"""Shared test configuration (helpers live in tests/support_http.py and next to the tests that use them)."""
