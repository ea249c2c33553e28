"""The webhook's serving certificate and its registration with the API server.

kube-apiserver calls an admission webhook only over HTTPS, checking the server's certificate
against the ``caBundle`` of the webhook's configuration. The operator makes its own small CA
and a serving certificate signed by it, keeps both in one Secret (``kubernetes.io/tls``, with
``ca.crt``) so every replica serves the same certificate, renews it well before it expires,
and writes the CA into the ``MutatingWebhookConfiguration`` it registers. No cert-manager or
Helm hook is needed, and a replica that starts later picks up what the first one made.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from inplace.client import (
    MUTATINGWEBHOOKCONFIGURATIONS,
    SECRETS,
    APIAlreadyExistsError,
    APIConflictError,
    APINotFoundError,
    Client,
)

__all__ = [
    "RENEW_BEFORE",
    "WEBHOOK_NAME",
    "ServingCert",
    "ensure_serving_cert",
    "ensure_webhook_configuration",
    "make_serving_cert",
    "renewal_reason",
    "secret_data",
    "serving_cert_from_secret",
    "webhook_configuration",
]

log = logging.getLogger(__name__)

RENEW_BEFORE: Final = datetime.timedelta(days=30)
"""A certificate that expires within this is replaced."""

WEBHOOK_NAME: Final = "workloads.inplace.dev"
"""The one webhook of the configuration (upstream wants a name of three DNS labels or more)."""

TLS_SECRET_TYPE: Final = "kubernetes.io/tls"
CA_KEY, CERT_KEY, KEY_KEY = "ca.crt", "tls.crt", "tls.key"
_KEYS: Final = (CA_KEY, CERT_KEY, KEY_KEY)

_CLOCK_SKEW: Final = datetime.timedelta(minutes=5)
"""Certificates start this long before now, for peers whose clock runs behind."""

_ATTEMPTS: Final = 5
"""Compare-and-swap rounds before giving up on a Secret or configuration other writers keep
changing."""

NAMESPACE_LABEL: Final = "kubernetes.io/metadata.name"
"""The label upstream puts on every Namespace, naming it (what a namespaceSelector can use)."""


@dataclass(frozen=True)
class ServingCert:
    """A serving certificate, its key and the CA that signed it, all PEM."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    not_after: datetime.datetime


# -- making and judging certificates ---------------------------------------------------------


def _ip(value: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> Any:
    return ipaddress.ip_address(value) if isinstance(value, str) else value


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_serving_cert(
    dns_names: Iterable[str],
    ip_addresses: Iterable[str | ipaddress.IPv4Address | ipaddress.IPv6Address],
    *,
    days: int = 365,
) -> ServingCert:
    """A new self-signed CA and a serving certificate it signs for these names (ECDSA P-256:
    quick to make and to handshake). The CA's key is not kept: renewal makes a new pair."""
    dns = list(dict.fromkeys(dns_names))
    ips = list(dict.fromkeys(_ip(ip) for ip in ip_addresses))
    if not dns and not ips:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    now = datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - _CLOCK_SKEW, now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "inplace-webhook-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    names += [x509.IPAddress(ip) for ip in ips]
    common_name = dns[0] if dns else str(ips[0])
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ServingCert(_pem(ca), _pem(cert), key_pem, cert.not_valid_after_utc)


def _public_der(public_key: Any) -> bytes:
    data: bytes = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return data


def renewal_reason(
    cert: ServingCert,
    dns_names: Iterable[str],
    ip_addresses: Iterable[str | ipaddress.IPv4Address | ipaddress.IPv6Address],
    *,
    now: datetime.datetime | None = None,
) -> str | None:
    """Why ``cert`` must be replaced to serve these names, or None when it can serve on: it
    must parse, its key must be its own, the CA must have signed it, it must not expire within
    :data:`RENEW_BEFORE`, and its SANs must cover every name asked."""
    try:
        leaf = x509.load_pem_x509_certificate(cert.cert_pem)
        ca = x509.load_pem_x509_certificate(cert.ca_pem)
        key = serialization.load_pem_private_key(cert.key_pem, password=None)
    except (ValueError, TypeError) as exc:
        return f"unreadable: {exc}"
    if _public_der(key.public_key()) != _public_der(leaf.public_key()):
        return "the key does not belong to the certificate"
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return f"the certificate is not signed by {CA_KEY}"
    now = now or datetime.datetime.now(datetime.UTC)
    not_after = leaf.not_valid_after_utc
    if not_after - now < RENEW_BEFORE:
        return f"it expires at {not_after.isoformat()}"
    try:
        sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = x509.SubjectAlternativeName([])
    have_dns = {name.lower() for name in sans.get_values_for_type(x509.DNSName)}
    have_ips = set(sans.get_values_for_type(x509.IPAddress))
    missing = [name for name in dns_names if name.lower() not in have_dns]
    missing += [str(ip) for ip in map(_ip, ip_addresses) if ip not in have_ips]
    if missing:
        return f"it does not cover {', '.join(missing)}"
    return None


# -- the Secret every replica shares ---------------------------------------------------------


def secret_data(cert: ServingCert) -> dict[str, str]:
    """``cert`` as a TLS Secret's ``data`` (base64, as the API carries bytes)."""
    return {
        CA_KEY: base64.b64encode(cert.ca_pem).decode(),
        CERT_KEY: base64.b64encode(cert.cert_pem).decode(),
        KEY_KEY: base64.b64encode(cert.key_pem).decode(),
    }


def serving_cert_from_secret(secret: Mapping[str, Any]) -> ServingCert | None:
    """The certificate a Secret holds, or None when a key is missing or unreadable."""
    data = secret.get("data") or {}
    try:
        ca, cert, key = (base64.b64decode(data[k], validate=True) for k in _KEYS)
        leaf = x509.load_pem_x509_certificate(cert)
    except (KeyError, TypeError, ValueError):
        return None
    return ServingCert(ca, cert, key, leaf.not_valid_after_utc)


def _new_secret(namespace: str, name: str, cert: ServingCert) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": TLS_SECRET_TYPE,
        "data": secret_data(cert),
    }


async def ensure_serving_cert(
    client: Client,
    namespace: str,
    secret_name: str,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
) -> ServingCert:
    """The serving certificate all replicas share, from Secret ``namespace/secret_name``:
    made when the Secret is absent (a racing replica's is taken instead when it won), replaced
    by compare-and-swap when :func:`renewal_reason` finds one. The Secret's other keys,
    labels and annotations are kept; a Secret of another ``type`` is refused by the API
    server (the type is immutable), and that error is raised."""
    where = f"{namespace}/{secret_name}"
    for _ in range(_ATTEMPTS):
        try:
            secret = await client.get(SECRETS, secret_name, namespace=namespace)
        except APINotFoundError:
            cert = make_serving_cert(dns_names, ip_addresses)
            try:
                await client.create(SECRETS, _new_secret(namespace, secret_name, cert))
            except APIAlreadyExistsError:
                continue  # another replica made it first: read theirs
            log.info("webhook serving certificate made in Secret %s", where)
            return cert
        current = serving_cert_from_secret(secret)
        reason = (
            f"{CA_KEY}, {CERT_KEY} or {KEY_KEY} is missing or unreadable"
            if current is None
            else renewal_reason(current, dns_names, ip_addresses)
        )
        if current is not None and reason is None:
            return current
        cert = make_serving_cert(dns_names, ip_addresses)
        body = {**secret, "data": {**(secret.get("data") or {}), **secret_data(cert)}}
        try:
            await client.update(SECRETS, body, namespace=namespace)
        except APIConflictError:
            continue  # changed since read (another replica renewed it): judge it again
        log.info("webhook serving certificate in Secret %s replaced: %s", where, reason)
        return cert
    raise RuntimeError(f"Secret {where} kept changing under {_ATTEMPTS} attempts to read it")


# -- the webhook's registration --------------------------------------------------------------

WEBHOOK_RULES: Final = (
    (("apps",), ("deployments", "statefulsets", "daemonsets"), "UPDATE"),
    (("batch",), ("jobs",), "UPDATE"),
    (("",), ("pods",), "CREATE"),  # a Job's later pods, at its recorded resources
)
"""What the webhook is called for: the held kinds' updates (``admission.HELD_KINDS``)."""


JOB_PODS_ONLY: Final = (
    "request.kind.kind != 'Pod' || (has(object.metadata.ownerReferences) && "
    "object.metadata.ownerReferences.exists(r, r.kind == 'Job'))"
)
"""The CEL ``matchConditions`` expression (GA since 1.30) that sends the webhook no pod but
a Job's."""


def webhook_configuration(
    name: str,
    *,
    ca_pem: bytes,
    service: tuple[str, str, int, str] | None = None,
    url: str | None = None,
    namespace_exclude: Sequence[str] | None = None,
    timeout_seconds: int = 5,
) -> dict[str, Any]:
    """The ``MutatingWebhookConfiguration`` ``name`` as the API server stores it: every field
    upstream's defaulting would fill (``pkg/apis/admissionregistration/v1/defaults.go``:
    rule scope, ``objectSelector``, the service port) is given, so a stored copy that nothing
    changed compares equal. ``service`` is ``(namespace, name, port, path)``; exactly one of
    it and ``url``. ``namespace_exclude`` (default: the service's namespace and
    ``kube-system``) are never sent to the webhook."""
    if (service is None) == (url is None):
        raise ValueError("give exactly one of service and url")
    client_config: dict[str, Any] = {"caBundle": base64.b64encode(ca_pem).decode()}
    if service is not None:
        svc_namespace, svc_name, port, path = service
        client_config["service"] = {
            "namespace": svc_namespace,
            "name": svc_name,
            "port": port,
            "path": path,
        }
    else:
        client_config["url"] = url
    if namespace_exclude is None:
        namespace_exclude = (*((service[0],) if service else ()), "kube-system")
    excluded = list(dict.fromkeys(namespace_exclude))
    namespace_selector: dict[str, Any] = {}
    if excluded:
        namespace_selector["matchExpressions"] = [
            {"key": NAMESPACE_LABEL, "operator": "NotIn", "values": excluded}
        ]
    rules = [
        {
            "apiGroups": list(groups),
            "apiVersions": ["v1"],
            "operations": [operation],
            "resources": list(resources),
            "scope": "Namespaced",
        }
        for groups, resources, operation in WEBHOOK_RULES
    ]
    webhook = {
        "name": WEBHOOK_NAME,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "rules": rules,
        "failurePolicy": "Ignore",  # with the operator down, changes roll out as anywhere
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector,
        "objectSelector": {},
        "sideEffects": "None",
        "timeoutSeconds": timeout_seconds,
        "reinvocationPolicy": "Never",
        # Of pods, only a Job's are the webhook's (their later pods take a held change):
        # every other pod's creation is not held up by a call.
        "matchConditions": [{"name": "workloads-and-job-pods", "expression": JOB_PODS_ONLY}],
    }
    return {
        "apiVersion": MUTATINGWEBHOOKCONFIGURATIONS.api_version,
        "kind": MUTATINGWEBHOOKCONFIGURATIONS.kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    }


async def ensure_webhook_configuration(
    client: Client,
    name: str,
    *,
    ca_pem: bytes,
    service: tuple[str, str, int, str] | None = None,
    url: str | None = None,
    namespace_exclude: Sequence[str] | None = None,
    timeout_seconds: int = 5,
) -> dict[str, Any]:
    """Create or update the configuration :func:`webhook_configuration` describes, and return
    it as stored. Nothing is written when the stored webhooks already are these; an update
    keeps the object's metadata and is a compare-and-swap on its resourceVersion."""
    desired = webhook_configuration(
        name,
        ca_pem=ca_pem,
        service=service,
        url=url,
        namespace_exclude=namespace_exclude,
        timeout_seconds=timeout_seconds,
    )
    for _ in range(_ATTEMPTS):
        try:
            stored = await client.get(MUTATINGWEBHOOKCONFIGURATIONS, name)
        except APINotFoundError:
            try:
                created = await client.create(MUTATINGWEBHOOKCONFIGURATIONS, desired)
            except APIAlreadyExistsError:
                continue
            log.info("MutatingWebhookConfiguration %s created", name)
            return created
        if stored.get("webhooks") == desired["webhooks"]:
            return stored
        try:
            updated = await client.update(
                MUTATINGWEBHOOKCONFIGURATIONS, {**stored, "webhooks": desired["webhooks"]}
            )
        except APIConflictError:
            continue
        log.info("MutatingWebhookConfiguration %s updated", name)
        return updated
    raise RuntimeError(
        f"MutatingWebhookConfiguration {name} kept changing under {_ATTEMPTS} attempts"
    )
