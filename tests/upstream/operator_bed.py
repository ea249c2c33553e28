"""What the operator's tests on the bed share: one more node agent the node proxy can reach,
and an ``inplace operator`` process.

kube-apiserver's node proxy refuses a loopback node address ("address not allowed"), and the
bed's agents listen on 127.0.0.1; so usage read through the node proxy (the operator's source
where metrics.k8s.io is not served) needs workloads on one more agent, ``node-3``, joined as
the bed joins its own (its identity and serving certificate signed by the bed's CA) but
listening on the host's first non-loopback IPv4 address.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.conftest import free_port
from tests.poll import wait_until

from .conftest import Bed

NAMESPACE = "inplace-system"
NODE = "node-3"


def host_address() -> str:
    """The host's first non-loopback IPv4 address (the node proxy refuses loopback)."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if (
                address.family == socket.AF_INET
                and not ipaddress.ip_address(address.address).is_loopback
            ):
                return str(address.address)
    pytest.fail("the node proxy needs a node address that is not loopback; this host has none")


def issue(
    pki: Path, name: str, common_name: str, organization: str, ip: str = "", node: str = NODE
) -> Path:
    """A certificate signed by the bed's cluster CA (``pki/ca.*``): a client one, or with
    ``ip`` a serving one for ``node``; written beside its key as ``name.crt``/``name.key``."""
    ca_cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        subject.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    usage = ExtendedKeyUsageOID.SERVER_AUTH if ip else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if ip:
        san = [x509.IPAddress(ipaddress.ip_address(ip)), x509.DNSName(node)]
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    (pki / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (pki / f"{name}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pki / name


def join_node(bed: Bed, log: Path, node: str = NODE) -> subprocess.Popen[bytes]:
    """``node``: an ``inplace node`` agent (2 CPU, 2Gi) as the bed starts its own, on
    ``host_address()``."""
    plane = bed.plane
    pki = plane.directory / "pki"
    address = host_address()
    identity = issue(pki, f"node-{node}", f"system:node:{node}", "system:nodes", node=node)
    serving = issue(pki, f"node-{node}-serving", node, "", ip=address, node=node)
    node_dir = plane.directory / "nodes" / node
    node_dir.mkdir(parents=True, exist_ok=True)
    admin = yaml.safe_load(plane.kubeconfig.read_text())
    admin["users"][0]["user"] = {
        "client-certificate": f"{identity}.crt",
        "client-key": f"{identity}.key",
    }
    kubeconfig = node_dir / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump(admin))
    with open(log, "ab") as out:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "inplace", "node"),
                f"--kubeconfig={kubeconfig}",
                f"--node-name={node}",
                "--cpu=2",
                "--memory=2Gi",
                f"--data-dir={node_dir}",
                f"--cgroup-root={plane.cgroup_root}",
                f"--hide-path={plane.directory}",
                f"--address={address}",
                f"--tls-cert-file={serving}.crt",
                f"--tls-private-key-file={serving}.key",
                f"--client-ca-file={pki / 'kubelet-client-ca.crt'}",
                "--admit-without-scheduler",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def node_ready(bed: Bed, node: str = NODE) -> bool:
    out = bed.kubectl("get", "node", node, "-o", "json", check=False)
    if out.returncode != 0:
        return False
    conditions = json.loads(out.stdout)["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def joined_node(bed: Bed, directory: Path, kinds: tuple[str, ...]) -> Iterator[None]:
    """``node-3`` joined and Ready; at the end the workloads of ``kinds`` and every pod
    deleted, then the agent stopped and its Node deleted."""
    agent = join_node(bed, directory / "agent.log")
    try:
        wait_until(lambda: node_ready(bed), timeout=60, what=f"{NODE} Ready")
        yield
    finally:
        for kind in kinds:
            bed.kubectl("delete", kind, "--all", "--wait=true", check=False, timeout=120)
        wait_until(
            lambda: not json.loads(bed.kubectl("get", "pods", "-o", "json").stdout)["items"],
            timeout=90,
            what="the pods gone",
        )
        stop(agent)
        bed.kubectl("delete", "node", NODE, check=False)


class Operator:
    """One ``inplace operator`` process with the bed's admin kubeconfig and ``flags``."""

    def __init__(self, bed: Bed, directory: Path, identity: str, *flags: str) -> None:
        port = free_port()
        self.log = directory / f"{identity}.log"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "inplace", "operator"),
                    *("--kubeconfig", str(bed.plane.kubeconfig)),
                    *("--namespace", NAMESPACE, "--identity", identity),
                    *("--webhook-host", "127.0.0.1", "--webhook-port", str(port)),
                    *("--webhook-url", f"https://127.0.0.1:{port}/mutate"),
                    *("--health-port", str(free_port())),
                    *flags,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        stop(self.process)
