"""Signed JSON Web Tokens for service accounts: the key in the data dir, signing, verifying.

Upstream signs service account tokens with ``--service-account-signing-key-file`` (RSA or
ECDSA); here the API server keeps an ECDSA P-256 key in ``pki/sa.key`` (created on first
start, mode 0600) and signs with ES256, the key id being upstream's: the base64url SHA-256 of
the public key's DER encoding. Written with ``cryptography`` directly: a compact JWS is three
base64url parts, and a general JOSE library would add choices (algorithms, key types) that a
verifier of our own tokens must refuse anyway.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

__all__ = ["JWTError", "SigningKey", "ensure_signing_key"]

_ALGORITHM: Final = "ES256"
_COORDINATE_BYTES: Final = 32


class JWTError(ValueError):
    """A token that is not a JWT we signed."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise JWTError("malformed base64url") from None


@dataclass(frozen=True)
class SigningKey:
    """The service account signing key, with its key id."""

    private: ec.EllipticCurvePrivateKey

    @property
    def key_id(self) -> str:
        der = self.private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return _b64(hashlib.sha256(der).digest())

    def sign(self, claims: dict[str, Any]) -> str:
        """A compact JWS of `claims`."""
        header = _b64(orjson.dumps({"alg": _ALGORITHM, "kid": self.key_id}))
        payload = _b64(orjson.dumps(claims))
        signing_input = f"{header}.{payload}".encode()
        der = self.private.sign(signing_input, ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        raw = r.to_bytes(_COORDINATE_BYTES, "big") + s.to_bytes(_COORDINATE_BYTES, "big")
        return f"{header}.{payload}.{_b64(raw)}"

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token this key signed; raises :class:`JWTError` otherwise."""
        parts = token.split(".")
        if len(parts) != 3:
            raise JWTError("not a compact JWS")
        try:
            header = orjson.loads(_unb64(parts[0]))
        except orjson.JSONDecodeError:
            raise JWTError("malformed header") from None
        if not isinstance(header, dict) or header.get("alg") != _ALGORITHM:
            raise JWTError("unexpected signing algorithm")
        if header.get("kid") not in (None, self.key_id):
            raise JWTError("signed by another key")
        raw = _unb64(parts[2])
        if len(raw) != 2 * _COORDINATE_BYTES:
            raise JWTError("malformed signature")
        der = encode_dss_signature(
            int.from_bytes(raw[:_COORDINATE_BYTES], "big"),
            int.from_bytes(raw[_COORDINATE_BYTES:], "big"),
        )
        try:
            self.private.public_key().verify(
                der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256())
            )
        except InvalidSignature:
            raise JWTError("invalid signature") from None
        try:
            claims = orjson.loads(_unb64(parts[1]))
        except orjson.JSONDecodeError:
            raise JWTError("malformed claims") from None
        if not isinstance(claims, dict):
            raise JWTError("malformed claims")
        return claims


def ensure_signing_key(path: Path) -> SigningKey:
    """The key at `path`, created (mode 0600) if there is none."""
    if path.exists():
        loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{path}: not an ECDSA private key")
        return SigningKey(loaded)
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    tmp.replace(path)
    return SigningKey(key)
