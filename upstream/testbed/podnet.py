"""The pod network of the test bed's kubelet nodes: one bridge per bed, nothing routed out.

Every kubelet node of a bed attaches its pods to the bed's bridge through the CNI ``bridge``
and ``host-local`` plugins, each node allocating from its own ``/24`` of the bed's ``/16``;
the bridge holds the gateway address and one address per node (the node's ``InternalIP``,
where its kubelet serves). So pods of every node share one link, the host (and so
kube-apiserver, for webhooks and aggregated APIs through ``--enable-aggregator-routing``)
reaches each pod's IP, and a pod reaches its node's kubelet.

Pods get no default route: their routes are the bed's ``/16`` and the Service CIDR, so no
packet of theirs can leave the machine. The one Service they need without kube-proxy is the
API server's (``kubernetes.default``, the address the kubelet gives every container in
``KUBERNETES_SERVICE_HOST``): an iptables DNAT rule, matched on the bed's bridge only, sends
``10.96.0.1:443`` to kube-apiserver on loopback (``route_localnet`` on the bridge lets a
packet from it be delivered to 127.0.0.1).

Beds run side by side (a test worker each): a bed takes the first ``10.N.0.0/16`` (N from
200) that no interface of the host uses, under one lock for the machine (Linux would let two
bridges hold the same address), and its bridge is named after its directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import json
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["PodNetwork", "allocate", "release"]

_FIRST_OCTET = 200
_LAST_OCTET = 254
SERVICE_IP = "10.96.0.1"
"""The ``kubernetes`` Service's ClusterIP: the first address of the bed's Service CIDR."""


@dataclass(frozen=True)
class PodNetwork:
    """One bed's pod network, as recorded in its ``state.json``."""

    bridge: str
    subnet: str
    """The bed's ``/16``, e.g. ``10.200.0.0/16``."""
    api_port: int

    @property
    def gateway(self) -> str:
        return str(ipaddress.ip_network(self.subnet).network_address + 1)

    def node_ip(self, index: int) -> str:
        """Node ``index``'s address (1-based): ``10.N.255.index``, on the bridge."""
        return str(ipaddress.ip_network(self.subnet).network_address + 255 * 256 + index)

    def node_range(self, index: int) -> tuple[str, str]:
        """The first and last pod address node ``index`` allocates: ``10.N.index.2-254``."""
        base = ipaddress.ip_network(self.subnet).network_address + index * 256
        return str(base + 2), str(base + 254)

    def pod_cidr(self, index: int) -> str:
        base = ipaddress.ip_network(self.subnet).network_address + index * 256
        return f"{base}/24"

    def cni_config(self, node: str, index: int, data_dir: Path, service_cidr: str) -> str:
        """The conflist a node's containerd reads: bridge + host-local, portmap, loopback."""
        first, last = self.node_range(index)
        plugins: list[dict[str, Any]] = [
            {
                "type": "bridge",
                "bridge": self.bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(data_dir),
                    "ranges": [
                        [
                            {
                                "subnet": self.subnet,
                                "rangeStart": first,
                                "rangeEnd": last,
                                "gateway": self.gateway,
                            }
                        ]
                    ],
                    # the bed's /16 is on the link; the Service CIDR through the gateway;
                    # no default route
                    "routes": [{"dst": service_cidr}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ]
        return json.dumps(
            {"cniVersion": "1.0.0", "name": f"inplace-{node}", "plugins": plugins}, indent=2
        )

    def _dnat(self) -> list[str]:
        return [
            "PREROUTING",
            "-i",
            self.bridge,
            "-d",
            f"{SERVICE_IP}/32",
            "-p",
            "tcp",
            "--dport",
            "443",
            "-j",
            "DNAT",
            "--to-destination",
            f"127.0.0.1:{self.api_port}",
            "-m",
            "comment",
            "--comment",
            f"inplace test bed {self.bridge}: kubernetes.default to kube-apiserver",
        ]


class NetworkError(Exception):
    """The bridge or its rule could not be set up; the message carries the command's error."""


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(argv, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise NetworkError(f"{' '.join(argv)}: {out.stderr.strip()}")
    return out


@contextlib.contextmanager
def _lock(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".podnet.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _used_octets() -> set[int]:
    out = _run("ip", "-j", "-4", "addr", "show")
    used = set()
    for link in json.loads(out.stdout or "[]"):
        for address in link.get("addr_info") or ():
            octets = str(address.get("local", "")).split(".")
            if octets[0] == "10" and len(octets) == 4:
                used.add(int(octets[1]))
    return used


def bridge_name(directory: Path) -> str:
    """``ipb-`` and 10 hex digits of the bed's directory: within IFNAMSIZ, one per bed."""
    return "ipb-" + hashlib.sha1(str(directory).encode()).hexdigest()[:10]


def allocate(directory: Path, api_port: int, lock_dir: Path) -> PodNetwork:
    """Create the bed's bridge with a free ``/16``, its node addresses added later by
    :func:`add_node`, and the DNAT rule to the API server."""
    bridge = bridge_name(directory)
    with _lock(lock_dir):
        _run("ip", "link", "del", bridge, check=False)  # a crashed bed's of the same dir
        free = [n for n in range(_FIRST_OCTET, _LAST_OCTET + 1) if n not in _used_octets()]
        if not free:
            raise NetworkError(f"no free 10.N.0.0/16 for a pod network (N {_FIRST_OCTET}-254)")
        network = PodNetwork(bridge, f"10.{free[0]}.0.0/16", api_port)
        _run("ip", "link", "add", bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{network.gateway}/16", "dev", bridge)
    _run("ip", "link", "set", bridge, "up")
    _run("sysctl", "-q", "-w", f"net.ipv4.conf.{bridge}.route_localnet=1")
    _run("iptables", "-t", "nat", "-A", *network._dnat())
    return network


def add_node(network: PodNetwork, index: int) -> str:
    """Give node ``index`` its address on the bridge; the address."""
    address = network.node_ip(index)
    _run("ip", "addr", "add", f"{address}/32", "dev", network.bridge)
    return address


def release(state: dict[str, Any]) -> list[str]:
    """Remove what :func:`allocate` made (from its recorded state); what could not be."""
    network = PodNetwork(**state)
    left = []
    while _run("iptables", "-t", "nat", "-C", *network._dnat(), check=False).returncode == 0:
        _run("iptables", "-t", "nat", "-D", *network._dnat(), check=False)
    _run("ip", "link", "del", network.bridge, check=False)
    if _run("ip", "link", "show", network.bridge, check=False).returncode == 0:
        left.append(f"bridge {network.bridge}")
    # veths whose pod namespaces are gone are gone with them; any still attached is a leak
    out = _run("ip", "-j", "link", "show", "master", network.bridge, check=False)
    left += [f"veth {link['ifname']}" for link in json.loads(out.stdout or "[]")]
    return left


def state_of(network: PodNetwork) -> dict[str, Any]:
    return asdict(network)
