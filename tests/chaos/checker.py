"""The checker: follows pods, nodes and ReplicaSets by watch from the start and checks the
invariants of issue 14 at every observed resourceVersion, then once more after the storm.

Pure bookkeeping over watch events (``observe``); the I/O (watches, LISTs, /proc, cgroup
files) is in ``engine.py``. Its accounting is written here on purpose, independently of the
scheduler's: a checker that shares the code it checks shares its bugs.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

from inplace.api.annotations import OOM_KILL_DISABLE, RESIZE_POLICY
from inplace.api.quantity import Quantity

TERMINAL = ("Succeeded", "Failed")
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@dataclasses.dataclass
class Violation:
    invariant: str
    message: str
    objects: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    resource_version: int | None = None


def qty_milli(value: Any) -> int:
    return Quantity.parse(value).milli_value() if value is not None else 0


def qty(value: Any) -> int:
    return Quantity.parse(value).value() if value is not None else 0


def rv_of(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def _requests(block: dict[str, Any] | None) -> tuple[int, int]:
    requests = (block or {}).get("requests") or {}
    return qty_milli(requests.get("cpu")), qty(requests.get("memory"))


def resize_approved(pod: dict[str, Any]) -> bool:
    cond = condition(pod, "PodResizeScheduled")
    generation = pod["metadata"].get("generation", 1)
    return bool(
        cond and cond.get("status") == "True" and cond.get("observedGeneration") == generation
    )


def pod_charge(
    pod: dict[str, Any], bound: dict[str, tuple[int, int]] | None = None
) -> tuple[int, int]:
    """What a pod holds on its node: per container `max(allocated, desired if approved,
    actual)` requests, in milli-CPU and bytes. A pod its node has not admitted yet holds the
    smaller of what it was bound with (``bound``, from the watch history: the binding approved
    that size, not a growth sent after it; the node admits a growth only if it fits) and its
    spec (a shrink before admission is admitted at the smaller size, and the scheduler gives
    the difference to others at once)."""
    statuses = {cs["name"]: cs for cs in (pod.get("status") or {}).get("containerStatuses") or ()}
    approved = resize_approved(pod)
    cpu = memory = 0
    for spec in pod["spec"]["containers"]:
        desired = _requests(spec.get("resources"))
        cs = statuses.get(spec["name"])
        if cs is None or cs.get("allocatedResources") is None:
            at_binding = (bound or {}).get(spec["name"], desired)
            held = (min(at_binding[0], desired[0]), min(at_binding[1], desired[1]))
        else:
            allocated = _requests({"requests": cs.get("allocatedResources")})
            actual = _requests(cs.get("resources"))
            candidates = [allocated, actual, *([desired] if approved else [])]
            held = (max(c[0] for c in candidates), max(c[1] for c in candidates))
        cpu += held[0]
        memory += held[1]
    return cpu, memory


def counts_on_node(pod: dict[str, Any]) -> bool:
    return (
        bool(pod["spec"].get("nodeName")) and (pod.get("status") or {}).get("phase") not in TERMINAL
    )


def controller_uid(obj: dict[str, Any]) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref["uid"])
    return None


def active(pod: dict[str, Any]) -> bool:
    return (
        not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in TERMINAL
    )


@dataclasses.dataclass
class Tracked:
    """One container instance the checker saw running."""

    pid: int
    restarts: int


class Checker:
    """The model of the cluster the watches built, and the invariants checked on it."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> latest pod
        self.nodes: dict[str, dict[str, Any]] = {}
        self.replicasets: dict[str, dict[str, Any]] = {}
        self.max_replicas: dict[str, int] = defaultdict(int)
        self.violations: list[Violation] = []
        self.checks = 0
        self.events = 0
        self.seen: set[tuple[str, int]] = set()  # (uid, rv) of every pod event
        self.gaps: list[tuple[int, int]] = []  # (last rv before, relist rv) after a 410
        self.processes: dict[tuple[str, str], Tracked] = {}
        self.pids: set[int] = set()
        self.succeeded_by_index: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.last_rv: dict[str, int] = {}
        self.gone: dict[str, dict[str, Any]] = {}  # uid -> last version of deleted pods
        self.bound: dict[str, dict[str, tuple[int, int]]] = {}  # uid -> requests when bound
        self.disk_was_full = False
        """Set by the disk fault: an exit the node's shim could not record on the full disk
        is then reported as ``ContainerStatusUnknown``, a clear error rather than a loss."""

    def fail(
        self, invariant: str, message: str, *objects: dict[str, Any], rv: int | None = None
    ) -> None:
        self.violations.append(Violation(invariant, message, list(objects), rv))

    # -- the watch stream ------------------------------------------------------------------

    def continuity(self, stream: str, rv: int) -> None:
        """Events of one stream come in strictly increasing resourceVersion."""
        last = self.last_rv.get(stream, 0)
        if rv <= last:
            self.fail("watch", f"{stream}: resourceVersion {rv} after {last}", rv=rv)
        self.last_rv[stream] = rv

    def relisted(self, stream: str, before: int, after: int) -> None:
        """A 410 answered by a relist: events between the two versions were not observed."""
        if stream == "pods":
            self.gaps.append((before, after))
        self.last_rv[stream] = after

    def observe_pod(self, kind: str, pod: dict[str, Any]) -> None:
        uid, rv = pod["metadata"]["uid"], rv_of(pod)
        self.events += 1
        self.continuity("pods", rv)
        self.seen.add((uid, rv))
        old = self.pods.get(uid)
        self.note_binding(pod)
        if kind == "DELETED":
            self.pods.pop(uid, None)
            self.gone[uid] = pod
        else:
            self.pods[uid] = pod
        self.check_pod(pod, old, deleted=kind == "DELETED")
        for node in {(old or {}).get("spec", {}).get("nodeName"), pod["spec"].get("nodeName")}:
            if node:
                self.check_node(node, rv)
        self.check_slots(pod, rv)

    def note_binding(self, pod: dict[str, Any]) -> None:
        """Remember a pod's requests as of the first version seen bound to a node."""
        uid = pod["metadata"]["uid"]
        if uid not in self.bound and pod["spec"].get("nodeName"):
            self.bound[uid] = {
                c["name"]: _requests(c.get("resources")) for c in pod["spec"]["containers"]
            }

    def charge(self, pod: dict[str, Any]) -> tuple[int, int]:
        return pod_charge(pod, self.bound.get(pod["metadata"]["uid"]))

    def observe_node(self, kind: str, node: dict[str, Any]) -> None:
        self.events += 1
        self.continuity("nodes", rv_of(node))
        name = node["metadata"]["name"]
        if kind == "DELETED":
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = node
            self.check_node(name, rv_of(node))

    def observe_replicaset(self, kind: str, rs: dict[str, Any]) -> None:
        self.events += 1
        self.continuity("replicasets", rv_of(rs))
        uid = rs["metadata"]["uid"]
        if kind == "DELETED":
            self.replicasets.pop(uid, None)
        else:
            self.replicasets[uid] = rs
            self.max_replicas[uid] = max(self.max_replicas[uid], rs["spec"].get("replicas", 1))

    def reset(self, stream: str, items: list[dict[str, Any]]) -> None:
        """A relist replaces a stream's model (objects absent from it were deleted)."""
        if stream == "pods":
            listed = {p["metadata"]["uid"] for p in items}
            for uid in set(self.pods) - listed:
                self.gone[uid] = self.pods.pop(uid)
            for pod in items:
                self.pods[pod["metadata"]["uid"]] = pod
                self.note_binding(pod)
                self.seen.add((pod["metadata"]["uid"], rv_of(pod)))
        elif stream == "nodes":
            self.nodes = {n["metadata"]["name"]: n for n in items}
        else:
            self.replicasets = {r["metadata"]["uid"]: r for r in items}
            for rs in items:
                uid = rs["metadata"]["uid"]
                self.max_replicas[uid] = max(self.max_replicas[uid], rs["spec"].get("replicas", 1))

    # -- invariant 1: no node over-committed, at every observed revision --------------------

    def check_node(self, name: str, rv: int) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        self.checks += 1
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        on_node = [p for p in self.pods.values() if p["spec"].get("nodeName") == name]
        counted = [p for p in on_node if counts_on_node(p)]
        cpu = sum(self.charge(p)[0] for p in counted)
        memory = sum(self.charge(p)[1] for p in counted)
        over = []
        if cpu > qty_milli(allocatable.get("cpu")):
            over.append(f"cpu {cpu}m > {allocatable.get('cpu')}")
        if memory > qty(allocatable.get("memory")):
            over.append(f"memory {memory} > {allocatable.get('memory')}")
        if len(counted) > qty(allocatable.get("pods", "110")):
            over.append(f"pods {len(counted)} > {allocatable.get('pods')}")
        if over:
            self.fail(
                "1 over-commit",
                f"node {name} at resourceVersion {rv}: {', '.join(over)}",
                node,
                *counted,
                rv=rv,
            )

    # -- invariants 3 and 4 as they stream by ----------------------------------------------

    def check_pod(self, pod: dict[str, Any], old: dict[str, Any] | None, *, deleted: bool) -> None:
        meta = pod["metadata"]
        generation = meta.get("generation", 1)
        for cond in (pod.get("status") or {}).get("conditions") or ():
            observed = cond.get("observedGeneration")
            if observed is not None and observed > generation:
                self.fail(
                    "4 conditions",
                    f"pod {meta['name']}: {cond['type']} for generation {observed} > {generation}",
                    pod,
                    rv=rv_of(pod),
                )
        if pod["spec"].get("nodeName", "").startswith("sim-"):
            return
        statuses = (pod.get("status") or {}).get("containerStatuses") or ()
        for cs in statuses:
            self.follow_process(pod, cs, old)

    def follow_process(
        self, pod: dict[str, Any], cs: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """Every end of a process the checker saw running must be recorded by the node agent
        (``lastState``/``state.terminated`` naming its pid) and explained."""
        key = (pod["metadata"]["uid"], cs["name"])
        state = cs.get("state") or {}
        pid, restarts = _pid(cs), cs.get("restartCount", 0)
        before = self.processes.get(key)
        if before is not None and restarts < before.restarts:
            self.fail("3 processes", f"{_where(pod, cs)}: restartCount went down", old or {}, pod)
        if before is None:
            if state.get("running") is not None and pid is not None:
                self.processes[key] = Tracked(pid, restarts)
                self.pids.add(pid)
            return
        ended = None
        if state.get("terminated") is not None and _pid(state["terminated"]) == before.pid:
            ended = state["terminated"]
        last = (cs.get("lastState") or {}).get("terminated") or {}
        if _pid(last) == before.pid and restarts > before.restarts:
            ended = last
        if ended is not None:
            self.explain_end(pod, cs, ended, old)
            self.processes.pop(key)
        elif state.get("running") is not None and pid is not None and pid != before.pid:
            if restarts > before.restarts + 1:
                self.explain_end(pod, cs, last, old)  # restarted more than once meanwhile
            else:
                self.fail(
                    "3 processes",
                    f"{_where(pod, cs)}: pid {before.pid} became {pid} with its end unrecorded",
                    old or {},
                    pod,
                    rv=rv_of(pod),
                )
            self.processes.pop(key)
        if key not in self.processes and state.get("running") is not None and pid is not None:
            self.processes[key] = Tracked(pid, restarts)
            self.pids.add(pid)

    def explain_end(
        self,
        pod: dict[str, Any],
        cs: dict[str, Any],
        ended: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> None:
        """A process may end by an OOM kill of a pod that did not opt out, by itself (exit
        0), by a deletion, or by a resize whose policy asks for a restart."""
        reason = ended.get("reason")
        annotations = pod["metadata"].get("annotations") or {}
        if reason == "OOMKilled" and annotations.get(OOM_KILL_DISABLE) != "true":
            return
        if reason == "Completed" or pod["metadata"].get("deletionTimestamp"):
            return
        if reason == "ContainerStatusUnknown" and self.disk_was_full:
            return
        spec = next(c for c in pod["spec"]["containers"] if c["name"] == cs["name"])
        policies = {p.get("restartPolicy") for p in spec.get("resizePolicy") or ()}
        if "RestartContainer" in policies or annotations.get(RESIZE_POLICY) == "Restart":
            return  # a resize restarted it (its result is checked against the cgroups)
        self.fail(
            "3 processes",
            f"{_where(pod, cs)}: process ended ({reason or 'no reason'}, exit "
            f"{ended.get('exitCode')}) with no explanation",
            old or {},
            pod,
            rv=rv_of(pod),
        )

    def check_slots(self, pod: dict[str, Any], rv: int) -> None:
        """No two live pods for one Job index; never more live pods for a ReplicaSet than it
        ever asked for."""
        owner = controller_uid(pod)
        if owner is None:
            return
        labels = pod["metadata"].get("labels") or {}
        annotations = pod["metadata"].get("annotations") or {}
        index = annotations.get(INDEX_LABEL) or labels.get(INDEX_LABEL)
        if index is not None:
            if (pod.get("status") or {}).get("phase") == "Succeeded":
                self.succeeded_by_index[(owner, index)].add(pod["metadata"]["uid"])
            twins = [
                p
                for p in self.pods.values()
                if active(p)
                and controller_uid(p) == owner
                and (
                    (p["metadata"].get("annotations") or {}).get(INDEX_LABEL)
                    or (p["metadata"].get("labels") or {}).get(INDEX_LABEL)
                )
                == index
            ]
            if len(twins) > 1:
                self.fail("4 slots", f"job index {index}: {len(twins)} live pods", *twins, rv=rv)
        elif owner in self.replicasets:
            live = [p for p in self.pods.values() if active(p) and controller_uid(p) == owner]
            if len(live) > self.max_replicas[owner]:
                self.fail(
                    "4 slots",
                    f"ReplicaSet {self.replicasets[owner]['metadata']['name']}: {len(live)} live "
                    f"pods, never more than {self.max_replicas[owner]} replicas",
                    self.replicasets[owner],
                    *live,
                    rv=rv,
                )

    def in_gap(self, rv: int) -> bool:
        return any(before < rv <= after for before, after in self.gaps)


def _where(pod: dict[str, Any], cs: dict[str, Any]) -> str:
    return f"pod {pod['metadata']['name']} container {cs['name']}"


def _pid(cs: dict[str, Any]) -> int | None:
    container_id = cs.get("containerID") or ""
    if container_id.startswith("inplace://"):
        try:
            return int(container_id.removeprefix("inplace://"))
        except ValueError:
            return None
    return None


pid_of = _pid
