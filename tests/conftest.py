"""Shared test configuration (helpers live in tests/support/http.py and next to the tests that use them)."""
