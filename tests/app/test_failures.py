"""``wiremcp.failures``: what a client reads of an unexpected exception (a generic message and a reference),
and what the log keeps of it (the traceback, under the same reference)."""

from __future__ import annotations

import logging

import pytest

from tests.support.failures import masked_error, reference_in
from wiremcp.failures import described, internal_error


def failure() -> RuntimeError:
    try:
        raise RuntimeError("dsn=postgres://app:hunter2@db/prod")
    except RuntimeError as exc:
        return exc


def test_the_client_reads_what_failed_and_a_reference_the_log_has_with_the_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="wiremcp.failures"):
        message, reference = described("Error executing tool lookup", failure(), details=False)
    assert reference_in(message, "Error executing tool lookup") == reference
    assert "hunter2" not in message
    (record,) = caplog.records
    assert record.getMessage() == message
    assert record.exc_info is not None
    assert "hunter2" in caplog.text  # the operator's to read
    assert "Traceback" in caplog.text


def test_each_failure_has_a_reference_of_its_own() -> None:
    references = {described("x", failure(), details=False)[1] for _ in range(100)}
    assert len(references) == 100


def test_details_add_the_exceptions_type_and_text() -> None:
    message, _ = described("Error executing tool lookup", failure(), details=True)
    reference_in(message, "Error executing tool lookup: RuntimeError: dsn=postgres://app:hunter2@db/prod")
    bare, _ = described("Error executing tool lookup", KeyError(), details=True)
    reference_in(bare, "Error executing tool lookup: KeyError")


def test_an_internal_error_carries_the_reference_in_its_data() -> None:
    error = internal_error("Error reading resource notes://a", failure(), details=False)
    masked_error(error.to_error(), "Error reading resource notes://a")
