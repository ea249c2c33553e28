"""Upstream's atomic writer: ``..data`` swapped by rename, user-visible links, no-op rewrites."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inplace.node.volumes.writer import (
    DATA_DIR_NAME,
    FileProjection,
    PayloadError,
    validate_payload_path,
    write_payload,
)


def test_write_then_update_swaps_atomically(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert write_payload(
        str(target), {"a": FileProjection(b"1", 0o644), "d/b": FileProjection(b"2", 0o600)}
    )
    first = os.readlink(target / DATA_DIR_NAME)
    assert first.startswith("..") and (target / first).is_dir()
    assert (target / "a").read_text() == "1" and os.readlink(target / "a") == "..data/a"
    assert (target / "d" / "b").read_text() == "2"
    assert oct((target / "d" / "b").stat().st_mode & 0o777) == "0o600"
    assert not write_payload(
        str(target), {"a": FileProjection(b"1", 0o644), "d/b": FileProjection(b"2", 0o600)}
    )
    assert os.readlink(target / DATA_DIR_NAME) == first  # unchanged: nothing written
    assert write_payload(str(target), {"a": FileProjection(b"3", 0o644)})
    second = os.readlink(target / DATA_DIR_NAME)
    assert second != first and not (target / first).exists()
    assert (target / "a").read_text() == "3"
    assert not os.path.lexists(target / "d")  # entries no payload names any more go
    assert sorted(os.listdir(target)) == sorted(["a", DATA_DIR_NAME, second])


def test_set_perms_runs_on_the_new_directory(tmp_path: Path) -> None:
    seen: list[str] = []
    write_payload(str(tmp_path / "v"), {"k": FileProjection(b"x", 0o644)}, set_perms=seen.append)
    assert seen == [str(tmp_path / "v" / os.readlink(tmp_path / "v" / DATA_DIR_NAME))]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "must not be empty"),
        ("/etc/passwd", "must be relative path"),
        ("a/../../b", "must not contain '..'"),
        ("..data", "must not start with '..'"),
    ],
)
def test_payload_paths_stay_inside(path: str, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        validate_payload_path(path)
