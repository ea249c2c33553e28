"""`inplace down`: stop a cluster and everything it runs, and remove what it made on the host.

Workloads outlive `inplace up` by design (as a kubelet's outlive the kubelet), so stopping a
cluster for good is its own command. In order:

1. **The workloads are deleted gracefully.** While the cluster runs (its `inplace up`, or its
   API server, holds the data dir: :mod:`inplace.cli.lock`), through its API as an admin
   would: the workload resources first (CronJobs, Deployments, StatefulSets, DaemonSets,
   ReplicaSets, Jobs — Kubernetes' "workloads", so that none recreates a pod), then every pod,
   which its node agent stops with SIGTERM, the pod's grace period, then SIGKILL, before it
   confirms the deletion. When nothing runs the cluster, the same objects are deleted from its
   store directly, so a later `inplace up` on the data dir does not start them again.
2. **`inplace up` is stopped** (SIGTERM, as Ctrl-C), which stops its components.
3. **What remains is stopped**: every process still in the cluster's cgroups
   (``/sys/fs/cgroup/<controller>/inplace/<root>``, unique to the data dir) gets SIGTERM, then
   SIGKILL once its pod's grace period is over (frozen cgroups are thawed first: a frozen task
   acts on no signal).
4. **What the cluster made on the host is removed**: the pods' pinned mount namespaces (mount
   points under the data dir), then the cgroups, leaf first.
5. With ``--purge``, the data dir itself (only one that looks like a cluster's, and only once
   nothing is mounted under it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from inplace.cli.lock import Holder, holder_of
from inplace.cli.paths import DataDir
from inplace.client import (
    PODS,
    APIError,
    APINotFoundError,
    Client,
    ConfigError,
    load_kubeconfig,
)
from inplace.client.api import Resource
from inplace.node.cgroups.base import read_mountinfo
from inplace.node.shim.kernel import SetupError, umount
from inplace.node.shim.mounts import mount_points_under

if TYPE_CHECKING:
    from inplace.registry.kinds import Kind

__all__ = [
    "WORKLOAD_KINDS",
    "DownError",
    "cluster_cgroups",
    "pods_running",
    "processes_in",
    "remove_cgroups",
    "run_down",
    "stop_processes",
]

WORKLOAD_KINDS = (
    ("batch", "CronJob"),
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
)
"""Kubernetes' workload resources, owners first, so that none recreates what was deleted."""

DEFAULT_GRACE = 30.0
"""A pod's grace period when it does not say (upstream's default)."""
STOP_TIMEOUT = 60.0
"""How long `inplace up` may take to stop its components before it is killed."""
_POD_OF = re.compile(r"/pod([0-9a-fA-F-]{36})(?:/|$)")


class DownError(Exception):
    """Something `inplace down` could not do; printed without a trace."""


@dataclass
class Report:
    workloads: int = 0
    pods: int = 0
    via: str = ""
    stopped: Holder | None = None
    processes: int = 0
    mounts: int = 0
    cgroups: int = 0
    leftovers: list[str] = field(default_factory=list)


# -- the host: cgroups, processes, mounts --------------------------------------------------


def cluster_cgroups(root: str) -> list[Path]:
    """The cluster's top cgroup in every mounted hierarchy (v1 controllers, v2's unified one)."""
    tops: dict[str, Path] = {}
    for mount in read_mountinfo():
        if mount.fs_type not in ("cgroup", "cgroup2"):
            continue
        top = Path(mount.mount_point) / root
        if top.is_dir():
            tops.setdefault(os.path.realpath(top), top)
    return list(tops.values())


def _directories(tops: Iterable[Path]) -> list[Path]:
    """Every cgroup under ``tops``, deepest first."""
    found: list[Path] = []
    for top in tops:
        for dirpath, _, _ in os.walk(top):
            found.append(Path(dirpath))
    return sorted(found, key=lambda p: -len(p.parts))


def processes_in(tops: Iterable[Path]) -> dict[int, str]:
    """pid → the cgroup it is in, for every process in the cluster's cgroups."""
    pids: dict[int, str] = {}
    for directory in _directories(tops):
        with contextlib.suppress(OSError, ValueError):
            for word in (directory / "cgroup.procs").read_text().split():
                pids.setdefault(int(word), str(directory))
    return pids


def pods_running(root: str) -> int:
    """How many pods still have processes in the cluster's cgroups (``root``)."""
    cgroups = processes_in(cluster_cgroups(root)).values()
    return len({match.group(1) for cgroup in cgroups if (match := _POD_OF.search(cgroup))})


def _thaw(tops: Iterable[Path]) -> None:
    """A frozen task acts on no signal, SIGKILL included (v1): thaw every cgroup first."""
    for directory in _directories(tops):
        for name, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
            with contextlib.suppress(OSError):
                if (directory / name).exists():
                    (directory / name).write_text(value)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


async def stop_processes(tops: list[Path], graces: dict[str, float]) -> int:
    """SIGTERM every process in ``tops``, SIGKILL each once its pod's grace period (by pod
    uid in its cgroup path; :data:`DEFAULT_GRACE` for others) is over; returns how many
    there were."""
    found = processes_in(tops)
    if not found:
        return 0
    _thaw(tops)
    started = time.monotonic()
    deadline: dict[int, float] = {}
    for pid, cgroup in found.items():
        match = _POD_OF.search(cgroup)
        grace = graces.get(match.group(1), DEFAULT_GRACE) if match else DEFAULT_GRACE
        deadline[pid] = started + grace
        _signal(pid, signal.SIGTERM)
    give_up = max(deadline.values()) + 10.0
    while remaining := processes_in(tops):
        now = time.monotonic()
        if now >= give_up:
            break  # unkillable (uninterruptible sleep): the caller reports what is left
        for pid in remaining:
            if now >= deadline.get(pid, started):  # a child born meanwhile: at once
                _signal(pid, signal.SIGKILL)
        await asyncio.sleep(0.1)
    return len(found)


def remove_cgroups(tops: list[Path]) -> int:
    """rmdir every cgroup under ``tops`` and ``tops`` themselves, leaf first, then the shared
    ``inplace`` level if no other cluster uses it; returns how many went."""
    removed = 0
    for directory in _directories(tops):
        for _ in range(50):  # the kernel frees a cgroup once its last task has exited
            try:
                directory.rmdir()
                removed += 1
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
    for top in tops:
        with contextlib.suppress(OSError):
            top.parent.rmdir()
    return removed


def unmount_under(directory: Path) -> int:
    """Lazily unmount everything mounted at or below ``directory`` (the pods' pinned
    namespaces and the directory holding the pins), deepest first."""
    count = 0
    for point in mount_points_under(str(directory.resolve())):
        with contextlib.suppress(SetupError):
            umount(point)
            count += 1
    return count


# -- the cluster's objects -------------------------------------------------------------------


def _grace(pod: dict[str, Any]) -> float:
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(value) if isinstance(value, int | float) and value >= 0 else DEFAULT_GRACE


def _workload_kinds() -> list[Kind]:
    from inplace.registry.kinds import REGISTRY  # the whole kind table: only `down` needs it

    return [k for g, name in WORKLOAD_KINDS if (k := REGISTRY.by_kind(g, name)) is not None]


async def delete_through_api(data: DataDir, report: Report) -> dict[str, float]:
    """Delete the workloads and the pods through the running cluster's API and wait until
    the node agents have stopped them; returns the pods' grace periods by uid."""
    config = load_kubeconfig(str(data.kubeconfig))
    graces: dict[str, float] = {}
    async with Client(config) as client:
        # Listed before any is deleted: a ReplicaSet the garbage collector removes after its
        # Deployment went is still one of the workloads this took down.
        listed = []
        for kind in _workload_kinds():
            res = Resource(kind.group, kind.version, kind.plural, kind.namespaced, kind.kind)
            listed += [(res, obj["metadata"]) for obj in (await client.list_all(res))["items"]]
        for res, meta in listed:
            try:
                await client.delete(res, meta["name"], namespace=meta.get("namespace"))
            except APINotFoundError:
                pass  # gone already, with its owner
            except APIError:
                continue
            report.workloads += 1
        pods = (await client.list_all(PODS))["items"]
        for pod in pods:
            meta = pod["metadata"]
            graces[meta["uid"]] = _grace(pod)
            try:
                await client.delete(PODS, meta["name"], namespace=meta["namespace"])
            except APINotFoundError:
                pass  # gone already, with its owner
            except APIError:
                continue
            report.pods += 1
        deadline = time.monotonic() + max(graces.values(), default=0.0) + 30.0
        while time.monotonic() < deadline and (await client.list_all(PODS))["items"]:
            await asyncio.sleep(0.5)
    report.via = "through the API"
    return graces


async def delete_from_store(data: DataDir, report: Report) -> dict[str, float]:
    """Nothing runs the cluster: delete the same objects from its store (at once: their
    processes are stopped on the host); returns the pods' grace periods by uid."""
    from inplace.apiserver.cache import WatchCache
    from inplace.apiserver.rest import REST
    from inplace.registry.kinds import REGISTRY
    from inplace.store import Store

    graces: dict[str, float] = {}
    if not data.store.exists():
        return graces
    store = await Store.open(data.store)
    cache = WatchCache(store, REGISTRY)
    try:
        await cache.start()
        rest = REST(store, cache, REGISTRY)
        pods = REGISTRY.by_kind("", "Pod")
        assert pods is not None
        for kind in [*_workload_kinds(), pods]:
            for entry in cache.entries(kind, None):
                meta = entry.value["metadata"]
                if kind is pods:
                    graces[meta["uid"]] = _grace(entry.value)
                await rest.delete(
                    kind, meta.get("namespace"), meta["name"], {"gracePeriodSeconds": 0}
                )
                if kind is pods:
                    report.pods += 1
                else:
                    report.workloads += 1
    finally:
        await cache.stop()
        await store.close()
    report.via = "from the store"
    return graces


async def stop_holder(holder: Holder, data: DataDir) -> None:
    """SIGTERM the process holding the data dir (as Ctrl-C would) and wait until it and the
    API server it started let go; SIGKILL after :data:`STOP_TIMEOUT`."""
    try:
        process = psutil.Process(holder.pid)
        process.send_signal(signal.SIGTERM)
    except psutil.Error:
        return
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        ended = not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
        if ended and holder_of(data) is None:
            return
        await asyncio.sleep(0.1)
    with contextlib.suppress(psutil.Error):
        process.kill()
    while holder_of(data) is not None and time.monotonic() < deadline + 10:
        await asyncio.sleep(0.1)


# -- the command ---------------------------------------------------------------------------------


def _looks_like_a_cluster(root: Path) -> bool:
    return any((root / name).exists() for name in ("kubeconfig.yaml", "pki", "apiserver"))


async def run_down(
    data: DataDir,
    *,
    cgroup_root: str,
    purge: bool,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> int:
    """`inplace down` (see the module docstring); returns the exit code."""
    started = time.monotonic()
    exists = data.root.is_dir()
    tops = cluster_cgroups(cgroup_root)
    if not exists and not tops:
        say(f"inplace: no cluster in {data.root}; nothing to do")
        return 0
    if purge and exists and not _looks_like_a_cluster(data.root):
        raise DownError(
            f"{data.root} does not look like an inplace data dir (no kubeconfig.yaml, pki/ or "
            "apiserver/); not removing it"
        )
    say(f"inplace: taking down the cluster in {data.root}")
    report = Report()
    graces: dict[str, float] = {}
    holder = holder_of(data) if exists else None
    if holder is not None:
        try:
            graces = await delete_through_api(data, report)
        except (APIError, ConnectionError, ConfigError, OSError) as exc:
            warn(f"inplace down: the API did not answer ({exc}); stopping the processes directly")
        await stop_holder(holder, data)
        report.stopped = holder
    if not report.via and exists and holder_of(data) is None:
        graces = await delete_from_store(data, report)
    if report.via:
        say(f"  ✓ deleted {report.workloads} workload(s) and {report.pods} pod(s) {report.via}")
    if report.stopped is not None:
        say(f"  ✓ stopped inplace up ({report.stopped})")
    report.processes = await stop_processes(tops, graces)
    if report.processes:
        say(f"  ✓ stopped {report.processes} process(es) left in the cluster's cgroups")
    if exists:
        report.mounts = unmount_under(data.root)
    report.cgroups = remove_cgroups(tops)
    if report.cgroups or report.mounts:
        say(f"  ✓ removed {report.cgroups} cgroup(s) and {report.mounts} mount(s)")
    left = [str(p) for p in tops if p.exists()]
    if left:
        warn(
            f"inplace down: could not remove {', '.join(left)} (processes in them: "
            f"{sorted(processes_in(tops))})"
        )
        return 1
    if purge and exists:
        remaining = mount_points_under(str(data.root.resolve()))
        if remaining:
            raise DownError(f"not removing {data.root}: still mounted there: {remaining}")
        shutil.rmtree(data.root)
        say(f"  ✓ removed {data.root}")
    say(f"done in {time.monotonic() - started:.1f}s: nothing of the cluster is left running")
    return 0
