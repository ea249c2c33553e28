"""The webhook's certificates: what is made, when it is replaced, and the Secret every replica
shares, against the real in-process API server. (``ensure_webhook_configuration`` writes a
kind that server does not serve; it is tested on the upstream test bed,
``tests/upstream/test_webhook.py``.)"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from inplace.client import SECRETS, APINotFoundError, Client, ClusterConfig
from inplace.operator.certs import (
    ServingCert,
    ensure_serving_cert,
    make_serving_cert,
    renewal_reason,
    secret_data,
    serving_cert_from_secret,
    webhook_configuration,
)
from tests.conftest import InProcessServer

NAMES = ["inplace-webhook.inplace-system.svc", "inplace-webhook.inplace-system.svc.cluster.local"]
IPS = ["127.0.0.1"]
NAMESPACE = "default"
SECRET = "inplace-webhook-tls"


def leaf(cert: ServingCert) -> x509.Certificate:
    return x509.load_pem_x509_certificate(cert.cert_pem)


def test_the_serving_certificate_names_its_hosts_and_chains_to_its_ca() -> None:
    cert = make_serving_cert(NAMES, IPS)
    served, ca = leaf(cert), x509.load_pem_x509_certificate(cert.ca_pem)
    sans = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == NAMES
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    usage = served.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert served.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    served.verify_directly_issued_by(ca)  # raises unless the CA signed it
    assert cert.not_after == served.not_valid_after_utc
    remaining = cert.not_after - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(days=364) < remaining <= datetime.timedelta(days=365)
    assert renewal_reason(cert, NAMES, IPS) is None


def test_a_certificate_needs_a_name() -> None:
    with pytest.raises(ValueError, match="at least one"):
        make_serving_cert([], [])


CERT = make_serving_cert(NAMES, IPS)
OTHER = make_serving_cert(NAMES, IPS)


@pytest.mark.parametrize(
    ("cert", "names", "ips", "days_left", "reason"),
    [
        (CERT, NAMES, IPS, 31, None),
        (CERT, [n.upper() for n in NAMES], IPS, 31, None),  # DNS names ignore case
        (CERT, NAMES[:1], [], 31, None),  # covering more than asked is fine
        (CERT, NAMES, IPS, 29, "it expires at "),
        (CERT, NAMES, IPS, -1, "it expires at "),
        (CERT, [*NAMES, "webhook.example"], IPS, 31, "it does not cover webhook.example"),
        (CERT, NAMES, ["10.0.0.7"], 31, "it does not cover 10.0.0.7"),
        (
            ServingCert(CERT.ca_pem, CERT.cert_pem, OTHER.key_pem, CERT.not_after),
            NAMES,
            IPS,
            31,
            "the key does not belong to the certificate",
        ),
        (
            ServingCert(OTHER.ca_pem, CERT.cert_pem, CERT.key_pem, CERT.not_after),
            NAMES,
            IPS,
            31,
            "the certificate is not signed by ca.crt",
        ),
        (
            ServingCert(CERT.ca_pem, b"not a certificate", CERT.key_pem, CERT.not_after),
            NAMES,
            IPS,
            31,
            "unreadable: ",
        ),
    ],
)
def test_when_a_certificate_is_replaced(
    cert: ServingCert, names: list[str], ips: list[str], days_left: int, reason: str | None
) -> None:
    now = CERT.not_after - datetime.timedelta(days=days_left)
    found = renewal_reason(cert, names, ips, now=now)
    if reason is None:
        assert found is None
    else:
        assert found is not None and found.startswith(reason)


def test_a_short_lived_certificate_is_due_for_renewal_at_once() -> None:
    assert (renewal_reason(make_serving_cert(NAMES, IPS, days=10), NAMES, IPS) or "").startswith(
        "it expires at "
    )


def test_the_secret_round_trips_and_a_broken_one_reads_as_none() -> None:
    secret = {"data": secret_data(CERT)}
    assert serving_cert_from_secret(secret) == CERT
    assert serving_cert_from_secret({"data": {"tls.crt": secret["data"]["tls.crt"]}}) is None
    garbled = {"data": {**secret["data"], "tls.crt": "!!"}}
    assert serving_cert_from_secret(garbled) is None
    assert serving_cert_from_secret({}) is None


# -- the shared Secret, on the real API server ------------------------------------------------


@pytest.fixture
async def client(apiserver: InProcessServer) -> AsyncIterator[Client]:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as c:
        yield c


async def stored(client: Client) -> dict[str, Any]:
    return await client.get(SECRETS, SECRET, namespace=NAMESPACE)


def resource_version(secret: dict[str, Any]) -> str:
    return str(secret["metadata"]["resourceVersion"])


async def test_the_secret_is_made_once_and_then_read(client: Client) -> None:
    made = await ensure_serving_cert(client, NAMESPACE, SECRET, NAMES, IPS)
    secret = await stored(client)
    assert secret["type"] == "kubernetes.io/tls"
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert serving_cert_from_secret(secret) == made
    again = await ensure_serving_cert(client, NAMESPACE, SECRET, NAMES, IPS)
    assert again == made
    assert resource_version(await stored(client)) == resource_version(secret)  # no write


async def test_a_secret_that_misses_a_name_or_expires_soon_is_replaced_keeping_the_rest(
    client: Client,
) -> None:
    short = make_serving_cert(NAMES, IPS, days=10)
    await client.create(
        SECRETS,
        {
            "metadata": {"name": SECRET, "namespace": NAMESPACE, "labels": {"app": "op"}},
            "type": "kubernetes.io/tls",
            "data": {**secret_data(short), "extra": base64.b64encode(b"kept").decode()},
        },
    )
    before = await stored(client)
    renewed = await ensure_serving_cert(client, NAMESPACE, SECRET, NAMES, IPS)
    after = await stored(client)
    assert renewed != short and renewal_reason(renewed, NAMES, IPS) is None
    assert serving_cert_from_secret(after) == renewed
    assert resource_version(after) != resource_version(before)
    assert after["metadata"]["labels"] == {"app": "op"}
    assert base64.b64decode(after["data"]["extra"]) == b"kept"

    wider = await ensure_serving_cert(client, NAMESPACE, SECRET, [*NAMES, "op.example"], IPS)
    assert wider != renewed
    assert renewal_reason(wider, [*NAMES, "op.example"], IPS) is None
    assert serving_cert_from_secret(await stored(client)) == wider


async def test_a_secret_without_the_keys_is_filled_in(client: Client) -> None:
    await client.create(
        SECRETS,
        {
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        },
    )
    made = await ensure_serving_cert(client, NAMESPACE, SECRET, NAMES, IPS)
    assert serving_cert_from_secret(await stored(client)) == made


class RacingReplica:
    """The client of a replica that loses a race: right after its first read, another replica
    writes the Secret (through the same API server)."""

    def __init__(self, client: Client, rival: ServingCert) -> None:
        self.client, self.rival, self.raced = client, rival, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return await self.client.get(*args, **kwargs)
        finally:
            if not self.raced:
                self.raced = True
                await self._rival_writes()

    async def _rival_writes(self) -> None:
        try:
            secret = await self.client.get(SECRETS, SECRET, namespace=NAMESPACE)
        except APINotFoundError:
            await self.client.create(
                SECRETS,
                {
                    "metadata": {"name": SECRET, "namespace": NAMESPACE},
                    "type": "kubernetes.io/tls",
                    "data": secret_data(self.rival),
                },
            )
        else:
            await self.client.update(SECRETS, {**secret, "data": secret_data(self.rival)})


async def test_a_replica_that_loses_the_race_to_create_takes_the_winners(client: Client) -> None:
    rival = make_serving_cert(NAMES, IPS)
    loser: Any = RacingReplica(client, rival)
    assert await ensure_serving_cert(loser, NAMESPACE, SECRET, NAMES, IPS) == rival
    assert serving_cert_from_secret(await stored(client)) == rival


async def test_a_replica_that_loses_the_race_to_renew_takes_the_winners(client: Client) -> None:
    await ensure_serving_cert(client, NAMESPACE, SECRET, NAMES[:1], IPS)
    rival = make_serving_cert(NAMES, IPS)
    loser: Any = RacingReplica(client, rival)
    assert await ensure_serving_cert(loser, NAMESPACE, SECRET, NAMES, IPS) == rival
    assert serving_cert_from_secret(await stored(client)) == rival


# -- the webhook's registration, as written -------------------------------------------------


def test_the_configuration_sends_the_held_kinds_updates_and_pod_creates() -> None:
    config = webhook_configuration(
        "inplace", ca_pem=CERT.ca_pem, service=("inplace-system", "inplace-webhook", 443, "/mutate")
    )
    assert config["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert config["kind"] == "MutatingWebhookConfiguration"
    (webhook,) = config["webhooks"]
    assert webhook["name"] == "workloads.inplace.dev"
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == CERT.ca_pem
    assert webhook["clientConfig"]["service"] == {
        "namespace": "inplace-system",
        "name": "inplace-webhook",
        "port": 443,
        "path": "/mutate",
    }
    rules = {
        (tuple(r["apiGroups"]), tuple(r["operations"])): r["resources"] for r in webhook["rules"]
    }
    assert rules == {
        (("apps",), ("UPDATE",)): ["deployments", "statefulsets", "daemonsets"],
        (("batch",), ("UPDATE",)): ["jobs"],
        (("",), ("CREATE",)): ["pods"],
    }
    assert webhook["failurePolicy"] == "Ignore"
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["matchPolicy"] == "Equivalent"
    assert webhook["reinvocationPolicy"] == "Never"
    assert webhook["timeoutSeconds"] == 5
    assert webhook["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["inplace-system", "kube-system"],
            }
        ]
    }


def test_a_url_webhook_excludes_what_it_is_told() -> None:
    (webhook,) = webhook_configuration(
        "x", ca_pem=CERT.ca_pem, url="https://127.0.0.1:9443/mutate", namespace_exclude=()
    )["webhooks"]
    assert webhook["clientConfig"]["url"] == "https://127.0.0.1:9443/mutate"
    assert "service" not in webhook["clientConfig"]
    assert webhook["namespaceSelector"] == {}
    (default,) = webhook_configuration("x", ca_pem=CERT.ca_pem, url="https://h/m")["webhooks"]
    assert default["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system"]
    with pytest.raises(ValueError, match="exactly one"):
        webhook_configuration("x", ca_pem=CERT.ca_pem)
    with pytest.raises(ValueError, match="exactly one"):
        webhook_configuration(
            "x", ca_pem=CERT.ca_pem, url="https://h/m", service=("a", "b", 443, "/m")
        )
