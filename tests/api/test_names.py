"""Upstream's name and label rules, shared by validation and selectors."""

from __future__ import annotations

import pytest

from inplace.api.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    generated_name,
    label_value_errors,
    qualified_name_errors,
)


@pytest.mark.parametrize(
    ("check", "value", "ok"),
    [
        (dns1123_label_errors, "web-1", True),
        (dns1123_label_errors, "Web", False),
        (dns1123_label_errors, "a" * 64, False),
        (dns1123_subdomain_errors, "example.com", True),
        (dns1123_subdomain_errors, "-bad.com", False),
        (qualified_name_errors, "app", True),
        (qualified_name_errors, "inplace.dev/resize-policy", True),
        (qualified_name_errors, "a/b/c", False),
        (qualified_name_errors, "/name", False),
        (label_value_errors, "", True),
        (label_value_errors, "v1.2_x", True),
        (label_value_errors, "-x", False),
    ],
)
def test_rules(check: object, value: str, ok: bool) -> None:
    assert callable(check)
    assert (check(value) == []) is ok


def test_messages_are_upstreams() -> None:
    assert dns1123_label_errors("a.b") == ["must not contain dots"]
    assert qualified_name_errors("/name") == ["prefix part must be non-empty"]
    assert qualified_name_errors("x" * 64) == ["name part must be no more than 63 characters"]


@pytest.mark.parametrize(
    ("base", "kept"),
    [("web-", "web-"), ("x" * 58, "x" * 58), ("y" * 70, "y" * 58), ("", "")],
)
def test_generated_names_are_upstreams(base: str, kept: str) -> None:
    """``SimpleNameGenerator``: the base cut to 58 characters, five characters from
    ``utilrand``'s alphabet, so a generated name still fits a 63-character label."""
    name = generated_name(base)
    assert name[:-5] == kept
    assert len(name) == len(kept) + 5
    assert set(name[-5:]) <= set("bcdfghjklmnpqrstvwxz2456789")
