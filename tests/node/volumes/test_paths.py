"""subPathExpr expansion, subPath rules and memory volume sizes (upstream's tables)."""

from __future__ import annotations

import pytest

from inplace.node.volumes.paths import expand_subpath_expr, memory_volume_size, subpath_error

MI = 2**20


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("$(POD_NAME)", "web-0"),
        ("logs/$(POD_NAME)/$(MISSING)", "logs/web-0/$(MISSING)"),
        ("$$(POD_NAME)", "$(POD_NAME)"),
        ("plain", "plain"),
    ],
)
def test_expand_subpath_expr(expr: str, expected: str) -> None:
    assert expand_subpath_expr(expr, {"POD_NAME": "web-0"}) == expected


@pytest.mark.parametrize(
    ("subpath", "error"),
    [
        ("a/b", None),
        ("a/..b", None),
        ("../a", "must not contain '..'"),
        ("/a", "must be a relative path"),
    ],
)
def test_subpath_error(subpath: str, error: str | None) -> None:
    assert subpath_error(subpath) == error


@pytest.mark.parametrize(
    ("allocatable", "pod_limit", "size_limit", "expected"),
    [
        (1024 * MI, None, None, 1024 * MI),
        (1024 * MI, 256 * MI, None, 256 * MI),
        (1024 * MI, 256 * MI, 16 * MI, 16 * MI),
        (1024 * MI, 256 * MI, 512 * MI, 256 * MI),  # a sizeLimit above the pod's limit is moot
        (1024 * MI, 0, 0, 1024 * MI),
    ],
)
def test_memory_volume_size(
    allocatable: int, pod_limit: int | None, size_limit: int | None, expected: int
) -> None:
    assert memory_volume_size(allocatable, pod_limit, size_limit) == expected
