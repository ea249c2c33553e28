"""A node's own objects: the Node (registration, status heartbeats) and its Lease.

Upstream's kubelet shape: the Node is created once with capacity and allocatable (cpu,
memory and pods as configured; ephemeral storage from the filesystem of the data dir, by the
kubelet's rules: :func:`ephemeral_storage`), addresses (``InternalIP``: the address the
agent's endpoint listens on, ``--address``; ``Hostname``: the node's name), labels and
``nodeInfo``, its status (conditions with ``lastHeartbeatTime``) is patched every
``node_status_every`` seconds, and the Lease in ``kube-node-lease`` is renewed every
``lease_renew_every`` seconds (the cheap liveness signal). A node whose cgroup driver cannot
enforce limits says so twice: annotation ``inplace.dev/limits-enforced: "false"`` and
condition ``LimitsEnforced=False``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import socket
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from inplace.api.annotations import CGROUP_DRIVER, LIMITS_ENFORCED, MEMORY_PAUSE
from inplace.api.quantity import Format, Quantity
from inplace.api.resources import EPHEMERAL_STORAGE
from inplace.api.timestamps import rfc3339, rfc3339_micro
from inplace.client import (
    LEASES,
    NODES,
    APIAlreadyExistsError,
    APIConnectionError,
    APIError,
    APINotFoundError,
    Client,
)

from .cgroups.base import CgroupDriver

if TYPE_CHECKING:
    from .config import AgentConfig

__all__ = [
    "CGROUP_DRIVER_ANNOTATION",
    "KUBELET_VERSION",
    "LEASE_NAMESPACE",
    "LIMITS_ANNOTATION",
    "NODEFS_AVAILABLE_HARD",
    "RUNTIME_VERSION",
    "NodeRegistration",
    "allocatable_ephemeral_storage",
    "ephemeral_storage",
]

log = logging.getLogger(__name__)

KUBELET_VERSION: Final = "v1.33.0-inplace"
RUNTIME_VERSION: Final = "inplace://0.1.0"
LEASE_NAMESPACE: Final = "kube-node-lease"
LIMITS_ANNOTATION: Final = LIMITS_ENFORCED
CGROUP_DRIVER_ANNOTATION: Final = CGROUP_DRIVER
NODEFS_AVAILABLE_HARD: Final[float] = struct.unpack("f", struct.pack("f", 0.1))[0]
"""The kubelet's default hard eviction threshold ``nodefs.available<10%``
(``pkg/kubelet/eviction/defaults_linux.go``) as Go holds it: a float32 fraction."""


def ephemeral_storage(data_dir: Path) -> tuple[int, int]:
    """``(capacity, allocatable)`` bytes of the node's ephemeral storage, as a kubelet reports
    them: capacity is the size of the filesystem holding the agent's data dir, as a kubelet's is
    that of the one holding its ``--root-dir`` (cadvisor's ``RootFsInfo``: ``f_blocks *
    f_frsize``; a data dir not made yet counts as its nearest existing parent), allocatable
    :func:`allocatable_ephemeral_storage` of it."""
    path = data_dir
    while not path.exists() and path != path.parent:
        path = path.parent
    fs = os.statvfs(path)
    capacity = fs.f_blocks * fs.f_frsize
    return capacity, allocatable_ephemeral_storage(capacity)


def allocatable_ephemeral_storage(capacity: int) -> int:
    """The kubelet's node allocatable rule (``GetNodeAllocatableReservation``): capacity less
    kube-reserved and system-reserved (none here) and the hard eviction threshold for the
    resource, by default ``nodefs.available<10%`` (in bytes by ``GetThresholdQuantity``:
    ``int64(float64(capacity) * float32 0.1)``), never below zero."""
    return max(0, capacity - int(capacity * NODEFS_AVAILABLE_HARD))


class NodeRegistration:
    """Writes one node's Node and Lease. ``port`` gives the stats endpoint's port (published
    as ``daemonEndpoints.kubeletEndpoint.Port``)."""

    def __init__(
        self,
        client: Client,
        config: AgentConfig,
        driver: CgroupDriver,
        port: Callable[[], int],
        *,
        memory_pause: str = "unavailable",
    ) -> None:
        """``memory_pause``: how the agent pauses a container at its memory limit (the
        node's ``inplace.dev/memory-pause`` label)."""
        self.client = client
        self.config = config
        self.driver = driver
        self.port = port
        self.memory_pause = memory_pause
        self._transition_times: dict[str, str] = {}

    def resources(self) -> tuple[dict[str, str], dict[str, str]]:
        """The Node's ``(capacity, allocatable)``: cpu, memory and pods as configured (no
        reservations, so allocatable equals capacity), and ephemeral storage as a kubelet
        reports it (:func:`ephemeral_storage`), read again for each status as the kubelet
        does."""
        cfg = self.config
        configured = {
            "cpu": _cpu_text(cfg.cpu_milli),
            "memory": f"{cfg.memory_bytes // 1024}Ki"
            if cfg.memory_bytes % 1024 == 0
            else str(cfg.memory_bytes),
            "pods": str(cfg.max_pods),
        }
        storage_capacity, storage_allocatable = ephemeral_storage(cfg.data_dir)
        capacity = {**configured, EPHEMERAL_STORAGE: _bytes_text(storage_capacity)}
        allocatable = {**configured, EPHEMERAL_STORAGE: _bytes_text(storage_allocatable)}
        return capacity, allocatable

    def node_object(self) -> dict[str, Any]:
        cfg = self.config
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
        enforced = "true" if self.driver.enforces_limits else "false"
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": cfg.node_name,
                "labels": {
                    "kubernetes.io/hostname": cfg.node_name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": arch,
                    "beta.kubernetes.io/os": "linux",
                    "beta.kubernetes.io/arch": arch,
                    MEMORY_PAUSE: self.memory_pause,
                    **cfg.labels,
                },
                "annotations": {
                    LIMITS_ANNOTATION: enforced,
                    CGROUP_DRIVER_ANNOTATION: self.driver.name,
                },
            },
            "spec": {},
            "status": self.node_status(),
        }

    def node_status(self) -> dict[str, Any]:
        cfg = self.config
        capacity, allocatable = self.resources()
        now = rfc3339()
        uname = platform.uname()
        enforced = self.driver.enforces_limits
        ready_message = "inplace node agent is posting ready status"
        if not enforced:
            ready_message += "; resource limits are NOT enforced (no writable cgroups: driver none)"
        conditions = [
            {"type": t, "status": "False", "reason": r, "message": m}
            for t, r, m in (
                (
                    "MemoryPressure",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            )
        ]
        conditions.append(
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": ready_message}
        )
        conditions.append(
            {
                "type": "LimitsEnforced",
                "status": "True" if enforced else "False",
                "reason": f"CgroupDriver{self.driver.name.capitalize()}",
                "message": (
                    f"cgroup driver {self.driver.name} enforces cpu and memory limits"
                    if enforced
                    else "no writable cgroups: limits are recorded but NOT enforced"
                ),
            }
        )
        for cond in conditions:
            cond["lastHeartbeatTime"] = now
            cond["lastTransitionTime"] = self._transition_times.setdefault(cond["type"], now)
        return {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": cfg.http_host},
                {"type": "Hostname", "address": cfg.node_name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port()}},
            "nodeInfo": {
                "machineID": _machine_id(),
                "systemUUID": _machine_id(),
                "bootID": _boot_id(),
                "kernelVersion": uname.release,
                "osImage": _os_image(),
                "containerRuntimeVersion": RUNTIME_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": self.node_object_arch(),
            },
        }

    def node_object_arch(self) -> str:
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())

    async def register(self) -> None:
        """Create the Node, or bring an existing one up to date (labels, status); retried
        until it is done, whatever the API server answers or whether it answers at all."""
        body = self.node_object()
        while True:
            try:
                await self._register(body)
                return
            except (APIError, APIConnectionError) as exc:
                log.warning("registering node %s: %s; retrying", self.config.node_name, exc)
                await asyncio.sleep(1.0)

    async def _register(self, body: dict[str, Any]) -> None:
        try:
            await self.client.create(NODES, body)
        except APIAlreadyExistsError:
            await self.client.patch(
                NODES,
                self.config.node_name,
                {
                    "metadata": {
                        "labels": body["metadata"]["labels"],
                        "annotations": body["metadata"]["annotations"],
                    }
                },
            )
            await self.client.patch(
                NODES, self.config.node_name, {"status": body["status"]}, subresource="status"
            )

    async def renew_lease(self) -> None:
        name = self.config.node_name
        spec = {
            "holderIdentity": name,
            "leaseDurationSeconds": self.config.lease_duration,
            "renewTime": rfc3339_micro(),
        }
        try:
            await self.client.patch(LEASES, name, {"spec": spec}, namespace=LEASE_NAMESPACE)
        except APINotFoundError:
            node = await self.client.get(NODES, name)
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": name,
                    "namespace": LEASE_NAMESPACE,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": name,
                            "uid": node["metadata"]["uid"],
                        }
                    ],
                },
                "spec": {**spec, "acquireTime": spec["renewTime"]},
            }
            with contextlib.suppress(APIAlreadyExistsError):
                await self.client.create(LEASES, body, namespace=LEASE_NAMESPACE)

    async def lease_loop(self) -> None:
        """Renew the Lease forever. An API server that is down (a connection error, not an
        API error) must not end the loop: a node whose heartbeat stops is marked Unknown and
        its pods are evicted (found by the chaos storm: one API server restart did that)."""
        while True:
            try:
                await self.renew_lease()
            except (APIError, APIConnectionError) as exc:
                log.warning("renewing lease: %s", exc)
            await asyncio.sleep(self.config.lease_renew_every)

    async def status_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.node_status_every)
            try:
                await self.client.patch(
                    NODES,
                    self.config.node_name,
                    {"status": self.node_status()},
                    subresource="status",
                )
            except APINotFoundError:
                await self.register()
            except (APIError, APIConnectionError) as exc:
                log.warning("node status: %s", exc)


def _bytes_text(value: int) -> str:
    return str(Quantity.from_int(value, Format.BINARY_SI))


def _cpu_text(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            return Path(path).read_text().strip()
    return socket.gethostname()


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def _os_image() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return platform.platform()
