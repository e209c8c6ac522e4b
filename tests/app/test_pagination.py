"""Opaque cursors for the list methods."""

import base64

import pytest

from wiremcp import pagination
from wiremcp.errors import INVALID_PARAMS, InvalidParams


@pytest.mark.spec("2025-11-25/server/utilities/pagination#pagination-model")
def test_walks_every_item_exactly_once() -> None:
    items = list(range(7))
    seen: list[int] = []
    cursor: str | None = None
    pages = 0
    while True:
        chunk, cursor = pagination.page(items, cursor, 3)
        seen.extend(chunk)
        pages += 1
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert seen == items
    assert pages == 3


def test_single_page_has_no_next_cursor() -> None:
    assert pagination.page([1, 2], None, 2) == ([1, 2], None)
    assert pagination.page([1], None, 5) == ([1], None)
    assert pagination.page([], None, 5) == ([], None)


def test_cursor_is_opaque_not_a_bare_number() -> None:
    _, cursor = pagination.page(list(range(5)), None, 2)
    assert cursor is not None
    assert not cursor.isdigit()
    chunk, following = pagination.page(list(range(5)), cursor, 2)
    assert chunk == [2, 3]
    assert following is not None
    assert following != cursor


@pytest.mark.spec("2025-11-25/server/utilities/pagination#error-handling")
@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        "",
        "x" * 65,
        42,
        ["a"],
        base64.urlsafe_b64encode(b"other:3").decode(),
        base64.urlsafe_b64encode(b"wiremcp:-1").decode(),
        base64.urlsafe_b64encode(b"wiremcp:99").decode(),  # past the end
    ],
)
def test_invalid_cursor_is_invalid_params(cursor: object) -> None:
    with pytest.raises(InvalidParams) as info:
        pagination.page(list(range(5)), cursor, 2)
    assert info.value.code == INVALID_PARAMS
    assert info.value.message == "Invalid cursor"


def test_cursor_at_the_end_gives_an_empty_last_page() -> None:
    # the list shrank between two calls: the old cursor still works
    _, cursor = pagination.page(list(range(4)), None, 2)
    assert pagination.page([0, 1], cursor, 2) == ([], None)
