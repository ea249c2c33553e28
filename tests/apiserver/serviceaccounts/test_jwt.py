"""The signing key: kept in the data dir, tokens verify, anything else does not."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from inplace.apiserver.serviceaccounts.jwt import JWTError, ensure_signing_key


def test_the_key_is_created_once_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "pki" / "sa.key"
    first = ensure_signing_key(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = ensure_signing_key(path)
    assert again.key_id == first.key_id
    token = first.sign({"sub": "x"})
    assert again.verify(token) == {"sub": "x"}


def test_header_is_es256_with_upstreams_key_id(tmp_path: Path) -> None:
    key = ensure_signing_key(tmp_path / "sa.key")
    header = json.loads(base64.urlsafe_b64decode(key.sign({}).split(".")[0] + "=="))
    assert header == {"alg": "ES256", "kid": key.key_id}


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t + "x",
        lambda t: ".".join(t.split(".")[:2]),
        lambda t: (
            t.split(".")[0]
            + "."
            + base64.urlsafe_b64encode(b'{"sub":"admin"}').decode().rstrip("=")
            + "."
            + t.split(".")[2]
        ),
        lambda t: "a.b.c",
        lambda t: "",
    ],
)
def test_anything_but_our_signature_is_refused(tmp_path: Path, tamper: object) -> None:
    key = ensure_signing_key(tmp_path / "sa.key")
    token = key.sign({"sub": "me"})
    with pytest.raises(JWTError):
        key.verify(tamper(token))  # type: ignore[operator]


def test_another_keys_token_is_refused(tmp_path: Path) -> None:
    ours = ensure_signing_key(tmp_path / "a.key")
    theirs = ensure_signing_key(tmp_path / "b.key")
    with pytest.raises(JWTError):
        ours.verify(theirs.sign({"sub": "me"}))
