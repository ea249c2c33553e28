"""The test bed's certificates: what kubeadm would make for a one-host cluster.

Two CAs, as a kubelet-serving setup has them: the cluster CA signs the API server's serving
certificate, every client identity (admin, controller manager, scheduler, each node as
``CN=system:node:NAME, O=system:nodes``) and each node's serving certificate; the kubelet-client
CA signs only the API server's kubelet-client certificate, so a node agent that trusts that CA
alone accepts the API server and nobody else. Plus the service-account signing key pair.
EC P-256 keys: quick to make and to handshake.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Authority", "KeyPair", "write_service_account_keys"]

_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its key, as files."""

    cert: Path
    key: Path


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


class Authority:
    """A CA whose certificate and key live in ``directory/NAME.crt|.key``."""

    def __init__(self, directory: Path, name: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.pair = KeyPair(directory / f"{name}.crt", directory / f"{name}.key")
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(f"inplace-testbed-{name}")
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        _write(self.pair.cert, self._cert.public_bytes(serialization.Encoding.PEM))
        _write(self.pair.key, _key_pem(self._key), 0o600)

    def issue(
        self,
        file_name: str,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        hosts: tuple[str, ...] = (),
        server: bool = False,
    ) -> KeyPair:
        """A leaf certificate: a client one, or a serving one for ``hosts`` (IPs or names)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(self.directory / f"{file_name}.crt", self.directory / f"{file_name}.key")
        _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
        _write(pair.key, _key_pem(key), 0o600)
        return pair


def write_service_account_keys(directory: Path) -> KeyPair:
    """The key pair that signs and verifies service-account tokens (``sa.pub`` in ``cert``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    pair = KeyPair(directory / "sa.pub", directory / "sa.key")
    _write(
        pair.cert,
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    _write(pair.key, _key_pem(key), 0o600)
    return pair
