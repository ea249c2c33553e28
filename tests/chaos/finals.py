"""After the storm: let the cluster settle, check the final state (invariants 2 to 4), then
delete everything and check that nothing is left behind (invariant 5)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of
from inplace.client import Client
from inplace.client.api import DEPLOYMENTS, JOBS, NODES, PODDISRUPTIONBUDGETS, PODS, REPLICASETS
from inplace.client.errors import APIConnectionError, APIError, APINotFoundError
from tests.chaos.checker import (
    Checker,
    active,
    condition,
    controller_uid,
    counts_on_node,
    pid_of,
    qty,
    qty_milli,
)
from tests.chaos.workloads import NAMESPACE

if TYPE_CHECKING:
    from tests.chaos.engine import ChaosCluster, Engine

CGROUP_FS = Path("/sys/fs/cgroup")


async def _list(client: Client, res: Any, namespace: str | None = NAMESPACE) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        try:
            return await client.list(res, namespace=namespace)
        except (APIError, APIConnectionError, OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def _values(block: dict[str, Any] | None) -> dict[str, tuple[int, int]]:
    """requests/limits → (cpu milli, memory bytes), compared by value."""
    out = {}
    for key in ("requests", "limits"):
        part = (block or {}).get(key) or {}
        out[key] = (qty_milli(part.get("cpu")), qty(part.get("memory")))
    return out


def resize_state(
    pod: dict[str, Any],
    others: list[dict[str, Any]],
    node: dict[str, Any] | None,
    charge: Callable[[dict[str, Any]], tuple[int, int]],
) -> str | None:
    """None when the pod's resize is terminal (applied, Infeasible, Error with a reason, or
    Deferred while it truly does not fit its node); otherwise what it waits in."""
    statuses = {cs["name"]: cs for cs in pod["status"].get("containerStatuses") or ()}
    applied = all(
        c["name"] in statuses
        and _values(statuses[c["name"]].get("resources")) == _values(c.get("resources"))
        for c in pod["spec"]["containers"]
    )
    pending = condition(pod, "PodResizePending")
    progress = condition(pod, "PodResizeInProgress")
    if applied:
        if pending is not None or (progress is not None and progress.get("reason") != "Error"):
            return f"applied but conditions say {pending or progress}"
        return None
    if pending is not None and pending.get("reason") == "Infeasible":
        return None
    if progress is not None and progress.get("reason") == "Error" and progress.get("message"):
        return None
    if pending is not None and pending.get("reason") == "Deferred" and node is not None:
        allocatable = node["status"]["allocatable"]
        used_cpu = sum(charge(p)[0] for p in others)
        used_memory = sum(charge(p)[1] for p in others)
        want = _values(pod["spec"]["containers"][0].get("resources"))["requests"]
        if used_cpu + want[0] > qty_milli(allocatable["cpu"]) or used_memory + want[1] > qty(
            allocatable["memory"]
        ):
            return None
        return "Deferred although it fits its node"
    return f"not terminal (pending={pending}, in progress={progress})"


async def settle_and_check(engine: Engine, client: Client, target: ChaosCluster) -> None:
    checker = engine.checker
    deadline = time.monotonic() + engine.settings.settle_seconds
    complaints: list[tuple[str, str, list[dict[str, Any]]]] = []
    while True:
        complaints = await _complaints(client, checker)
        if not complaints or time.monotonic() > deadline:
            break
        await asyncio.sleep(1.0)
    for invariant, message, objects in complaints:
        checker.fail(invariant, f"after settling: {message}", *objects)
    pods = (await _list(client, PODS))["items"]
    _check_processes_and_cgroups(engine, pods)
    _check_acknowledged(
        engine,
        pods,
        (await _list(client, DEPLOYMENTS))["items"],
        (await _list(client, PODDISRUPTIONBUDGETS))["items"],
    )
    await _check_watch_matches_list(engine, client)
    for (owner, index), uids in checker.succeeded_by_index.items():
        if len(uids) > 1:
            checker.fail("4 slots", f"job {owner} index {index} succeeded {len(uids)} times")


async def _complaints(
    client: Client, checker: Checker
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    pods = (await _list(client, PODS))["items"]
    nodes = {n["metadata"]["name"]: n for n in (await _list(client, NODES, None))["items"]}
    out: list[tuple[str, str, list[dict[str, Any]]]] = []
    for pod in pods:
        if (
            not active(pod)
            or not pod["spec"].get("nodeName")
            or pod["status"].get("phase") != "Running"
        ):
            continue
        node_name = pod["spec"]["nodeName"]
        others = [
            p
            for p in pods
            if p is not pod and p["spec"].get("nodeName") == node_name and counts_on_node(p)
        ]
        state = resize_state(pod, others, nodes.get(node_name), checker.charge)
        if state is not None:
            out.append(("2 resizes", f"pod {pod['metadata']['name']}: {state}", [pod]))
        for dead in _dead_but_running(pod):
            out.append(("3 processes", f"pod {pod['metadata']['name']}: {dead}", [pod]))
    replicasets = (await _list(client, REPLICASETS))["items"]
    for rs in replicasets:
        live = [p for p in pods if active(p) and controller_uid(p) == rs["metadata"]["uid"]]
        if len(live) != rs["spec"].get("replicas", 1) and not rs["metadata"].get(
            "deletionTimestamp"
        ):
            out.append(
                (
                    "4 slots",
                    f"ReplicaSet {rs['metadata']['name']}: {len(live)} live pods for "
                    f"{rs['spec'].get('replicas')} replicas",
                    [rs, *live],
                )
            )
    return out


def _dead_but_running(pod: dict[str, Any]) -> list[str]:
    """Containers whose status says running with a process that is gone (a death the node
    agent has not reported)."""
    if pod["spec"].get("nodeName", "").startswith("sim-"):
        return []
    out = []
    for cs in pod["status"].get("containerStatuses") or ():
        pid = pid_of(cs)
        running = (cs.get("state") or {}).get("running") is not None
        if running and pid is not None and not (psutil.pid_exists(pid) and _alive(pid)):
            out.append(f"status says pid {pid} runs; it does not")
    return out


def _cgroup_dir(pid: int, controller: str) -> Path | None:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return CGROUP_FS / controllers / path.lstrip("/")
    return None


def _check_processes_and_cgroups(engine: Engine, pods: list[dict[str, Any]]) -> None:
    """Invariant 3: a container the status says is running has its process; invariant 2: an
    applied resize is what the cgroup files say."""
    checker = engine.checker
    for pod in pods:
        if not active(pod) or pod["spec"].get("nodeName", "").startswith("sim-"):
            continue
        specs = {c["name"]: c for c in pod["spec"]["containers"]}
        for cs in pod["status"].get("containerStatuses") or ():
            pid = pid_of(cs)
            if (cs.get("state") or {}).get("running") is None or pid is None:
                continue
            name = pod["metadata"]["name"]
            if not (psutil.pid_exists(pid) and _alive(pid)):
                continue  # reported by the settling check
            memory_dir, cpu_dir = _cgroup_dir(pid, "memory"), _cgroup_dir(pid, "cpu")
            if (
                memory_dir is None
                or cpu_dir is None
                or pod["metadata"]["uid"] not in str(memory_dir)
            ):
                checker.fail(
                    "2 cgroups",
                    f"pod {name}: pid {pid} is not in its pod's cgroup ({memory_dir})",
                    pod,
                )
                continue
            actual = _values(cs.get("resources"))
            if actual != _values(specs[cs["name"]].get("resources")):
                continue  # not applied (terminal otherwise, checked above)
            limit = actual["limits"][1]
            got_memory = int((memory_dir / "memory.limit_in_bytes").read_text())
            if limit and got_memory != limit // 4096 * 4096:
                checker.fail(
                    "2 cgroups",
                    f"pod {name}: memory.limit_in_bytes {got_memory} for a {limit} limit",
                    pod,
                )
            shares = max(2, actual["requests"][0] * 1024 // 1000)
            got_shares = int((cpu_dir / "cpu.shares").read_text())
            if got_shares != shares:
                checker.fail(
                    "2 cgroups", f"pod {name}: cpu.shares {got_shares}, want {shares}", pod
                )
            quota = max(1000, actual["limits"][0] * 100) if actual["limits"][0] else -1
            got_quota = int((cpu_dir / "cpu.cfs_quota_us").read_text())
            if got_quota != quota:
                checker.fail(
                    "2 cgroups", f"pod {name}: cpu.cfs_quota_us {got_quota}, want {quota}", pod
                )


def _latest(engine: Engine, kind: str, name: str, field: str | None = None) -> list[Any]:
    """The values the object (or one ``field`` of it) may hold now: the last acknowledged
    write's, and those of any write sent after it whose answer was lost (it may have
    landed). Writes that did not set ``field`` are passed over."""
    assert engine.storm is not None
    writes = [w for w in engine.storm.writes if w.target == kind and w.name == name]
    allowed: list[Any] = []
    for write in reversed(writes):
        if field is not None:
            if not isinstance(write.value, dict) or field not in write.value:
                continue
            allowed.append(write.value[field])
        else:
            allowed.append(write.value)
        if write.acked:
            break
    return allowed


def _check_acknowledged(
    engine: Engine,
    pods: list[dict[str, Any]],
    deployments: list[dict[str, Any]],
    budgets: list[dict[str, Any]],
) -> None:
    """Invariant 4: no acknowledged write lost, in the watch history and in the final state."""
    checker = engine.checker
    storm = engine.storm
    assert storm is not None
    for write in storm.writes:
        if (
            write.acked
            and write.target == "pod"
            and write.uid
            and write.rv is not None
            and (write.uid, write.rv) not in checker.seen
            and not checker.in_gap(write.rv)
        ):
            checker.fail(
                "4 writes",
                f"{write.kind} {write.name} acknowledged at {write.rv}; the watch never showed it",
            )
    by_name = {p["metadata"]["name"]: p for p in pods}
    for name in storm.pods:
        pod = by_name.get(name)
        if pod is None:
            last = next((p for p in checker.gone.values() if p["metadata"]["name"] == name), None)
            if last is None or condition(last, "DisruptionTarget") is None:
                checker.fail(
                    "4 writes",
                    f"pod {name} acknowledged, never deleted by the storm, gone without a "
                    "recorded eviction",
                    *([last] if last else []),
                )
            continue
        resources = pod["spec"]["containers"][0]["resources"]
        if not any(_values(resources) == _values(v) for v in _latest(engine, "pod", name)):
            checker.fail(
                "4 writes",
                f"pod {name}: resources {resources}, acknowledged {_latest(engine, 'pod', name)}",
                pod,
            )
    deployed = {d["metadata"]["name"]: d for d in deployments}
    for name in storm.deployments:
        found = deployed.get(name)
        if found is None:
            checker.fail("4 writes", f"deployment {name} acknowledged and lost")
            continue
        requests = found["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        state = {
            "replicas": found["spec"]["replicas"],
            "cpu": qty_milli(requests["cpu"]),
            "memory": qty(requests["memory"]) // 2**20,
        }
        for field, value in state.items():
            allowed = _latest(engine, "deployment", name, field)
            if value not in allowed:
                checker.fail(
                    "4 writes", f"deployment {name}: {field} {value}, acknowledged {allowed}", found
                )
    present = {b["metadata"]["name"]: b for b in budgets}
    for name in storm.budgets:
        allowed = _latest(engine, "budget", name)
        budget = present.get(name)
        if budget is None or budget["spec"].get("minAvailable") not in allowed:
            checker.fail(
                "4 writes", f"budget {name}: {budget and budget['spec']}, acknowledged {allowed}"
            )


async def _check_watch_matches_list(engine: Engine, client: Client) -> None:
    """The watch's model and a LIST agree once the watch has reached the LIST's version: an
    event lost on the way (or invented) shows here."""
    checker = engine.checker
    listed = await _list(client, PODS, None)
    list_rv = int(listed["metadata"]["resourceVersion"])
    deadline = time.monotonic() + 60
    while checker.last_rv.get("pods", 0) < list_rv and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    if checker.last_rv.get("pods", 0) > list_rv:
        return  # something changed meanwhile; the per-write check above still holds
    want = {p["metadata"]["uid"]: p["metadata"]["resourceVersion"] for p in listed["items"]}
    have = {uid: p["metadata"]["resourceVersion"] for uid, p in checker.pods.items()}
    if want != have:
        diff = {
            k: (have.get(k), want.get(k))
            for k in set(want) | set(have)
            if want.get(k) != have.get(k)
        }
        checker.fail("4 watch", f"watch model differs from LIST at {list_rv}: {diff}")


async def cleanup_and_check(engine: Engine, client: Client, target: ChaosCluster) -> None:
    """Invariant 5: delete everything through the API; then no process, cgroup, mount or
    checkpoint of any pod of the run is left."""
    checker = engine.checker
    for res in (DEPLOYMENTS, JOBS, PODDISRUPTIONBUDGETS):
        for item in (await _list(client, res))["items"]:
            with contextlib.suppress(APINotFoundError, APIError, APIConnectionError):
                await client.delete(
                    res,
                    item["metadata"]["name"],
                    namespace=NAMESPACE,
                    propagation_policy="Background",
                )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pods = (await _list(client, PODS))["items"]
        if not pods:
            break
        for pod in pods:
            if not pod["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(APINotFoundError, APIError, APIConnectionError):
                    await client.delete(PODS, pod["metadata"]["name"], namespace=NAMESPACE)
        await asyncio.sleep(1.0)
    else:
        checker.fail("5 cleanup", "pods still present 120s after deleting everything", *pods)
    uids = set(checker.pods) | set(checker.gone)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and [
        p for p in checker.pids if psutil.pid_exists(p) and _alive(p)
    ]:
        await asyncio.sleep(0.5)
    for pid in sorted(checker.pids):
        if psutil.pid_exists(pid) and _alive(pid) and _in_cluster(pid, target.data_dir):
            checker.fail("5 cleanup", f"workload pid {pid} outlived its pod")
    data = target.data_dir
    for checkpoint in data.glob("nodes/*/checkpoints/*"):
        checker.fail("5 cleanup", f"checkpoint left: {checkpoint}")
    root = cgroup_root_of(DataDir(data.resolve()))
    for hierarchy in CGROUP_FS.glob("*"):
        top = hierarchy / root
        if top.is_dir():
            for directory in top.rglob("*"):
                if directory.is_dir() and any(uid in directory.name for uid in uids):
                    checker.fail("5 cleanup", f"cgroup left: {directory}")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split(" ")[4]
        if point.startswith(str(data.resolve())) and any(uid in point for uid in uids):
            checker.fail("5 cleanup", f"mount left: {point}")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _in_cluster(pid: int, data_dir: Path) -> bool:
    """PIDs are reused: a live pid counts only if it is still in this cluster's cgroups."""
    root = cgroup_root_of(DataDir(data_dir.resolve()))
    try:
        return root in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False
