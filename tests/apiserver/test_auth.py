"""The static token file (inplace.apiserver.auth.TokenFile): re-read when it changed, only."""

from __future__ import annotations

from pathlib import Path

import pytest

from inplace.apiserver.auth import TokenFile


def test_a_token_added_by_another_writer_is_found_and_an_unchanged_file_is_not_reread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tokens.csv"
    server = TokenFile(path)
    other = TokenFile(path)  # `inplace up`, adding components' tokens
    admin = other.token_for("admin", ("system:masters",))
    assert server.authenticate_token("no-such-token") is None
    user = server.authenticate_token(admin)  # the file changed: read again
    assert user is not None and user.name == "admin"

    reads: list[Path] = []
    read_text = Path.read_text

    def counting(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(self)
        return read_text(self)

    monkeypatch.setattr(Path, "read_text", counting)
    for _ in range(3):
        assert server.authenticate_token("no-such-token") is None
    assert reads == []  # the file did not change: a stat each, no parse

    later = other.token_for("system:kube-scheduler")
    user = server.authenticate_token(later)
    assert user is not None and user.name == "system:kube-scheduler"
    assert reads == [path]
