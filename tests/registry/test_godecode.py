"""Go's base64 verdicts, offset included (what a Secret's bad ``data`` is answered with)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.registry.godecode import base64_error


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", None),
        ("YQ==", None),
        ("YWI=", None),
        ("YWJj", None),
        ("YWJj\nZGVm\r\n", None),
        ("abc", "illegal base64 data at input byte 0"),
        ("abcde", "illegal base64 data at input byte 4"),
        ("YQ=", "illegal base64 data at input byte 3"),
        ("Y===", "illegal base64 data at input byte 1"),
        ("a!bc", "illegal base64 data at input byte 1"),
        ("YW Jj", "illegal base64 data at input byte 2"),
        ("YQ==YQ==", "illegal base64 data at input byte 4"),
        ("YWJjZA", "illegal base64 data at input byte 4"),
        ("YW-_", "illegal base64 data at input byte 2"),
    ],
)
def test_table(text: str, error: str | None) -> None:
    assert base64_error(text) == error


@given(st.binary(max_size=64))
def test_whatever_python_encodes_go_decodes(raw: bytes) -> None:
    assert base64_error(base64.b64encode(raw).decode()) is None
