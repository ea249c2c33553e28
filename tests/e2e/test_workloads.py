"""Workloads end to end: real `inplace up --nodes 2`, real kubectl, real processes.

What the issue asks to see, on two small nodes (1 CPU, 1Gi each), one cluster for the module:

* a Job's resources raised with `kubectl patch job`: same pods, same PIDs, no restart, no new
  pod; the Job then completes; an image change is refused with upstream's message;
* a Deployment's resources changed (`kubectl patch`, `kubectl set resources`): one ReplicaSet,
  the same pods, resized; an image change rolls out; `rollout status | history | undo |
  pause | resume | restart`, `kubectl scale`;
* `InPlacePreferred` on a full node: the pod moves to the other node at the new size; a budget
  that allows no disruption holds the move until it is relaxed;
* deleting a Deployment: background, `--cascade=orphan`, `--cascade=foreground`;
* the controller manager SIGKILLed mid-rollout and mid-resize: no pod made twice, every pod
  ends at the new size;
* a node agent stopped past the grace period: NotReady, tainted, its pods replaced elsewhere;
* bad Deployments refused with a 422 naming the field.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of, remove_empty_cgroup_root
from tests.conftest import Cluster, reap_cgroups, start_cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

GRACE = "20s"
"""The node monitor grace period: above the agents' 10 s Lease renewal, short for the test."""


class Workloads:
    def __init__(self, cluster: Cluster, tmp: Path) -> None:
        self.cluster = cluster
        self.tmp = tmp

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, **kw)

    def apply(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self.kubectl("apply", "-f", "-", input=json.dumps(obj))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        result = self.kubectl("get", kind, name, "-o", "json", check=False)
        if result.returncode != 0:
            return None
        obj: dict[str, Any] = json.loads(result.stdout)
        return obj

    def items(self, kind: str, selector: str) -> list[dict[str, Any]]:
        out = self.kubectl("get", kind, "-l", selector, "-o", "json").stdout
        return list(json.loads(out)["items"])

    def pods(self, selector: str) -> list[dict[str, Any]]:
        return [
            p for p in self.items("pods", selector) if not p["metadata"].get("deletionTimestamp")
        ]

    def component_pid(self, needle: str) -> int:
        for child in psutil.Process(self.cluster.process.pid).children():
            with contextlib.suppress(psutil.Error):
                if needle in " ".join(child.cmdline()):
                    return int(child.pid)
        raise AssertionError(f"no component matching {needle!r}")


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workloads]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("workloads") / "data"
    cluster = start_cluster(
        data_dir,
        None,
        "--nodes",
        "2",
        "--node-cpu",
        "1",
        "--node-memory",
        "1Gi",
        "--node-monitor-grace-period",
        GRACE,
    )
    try:
        running = Workloads(cluster, tmp_path_factory.mktemp("flags"))

        def nodes_ready() -> bool:
            out = cluster.kubectl("get", "nodes", "--no-headers", check=False).stdout
            return out.count(" Ready ") >= 2

        wait_until(nodes_ready, timeout=120, what="two nodes Ready")
        yield running
    finally:
        for kind in ("deployments", "replicasets", "jobs", "pdb"):
            cluster.kubectl("delete", kind, "--all", "--wait=false", check=False, timeout=60)
        cluster.stop()
        reap_cgroups(data_dir)
        remove_empty_cgroup_root(cgroup_root_of(DataDir(data_dir)))


# -- builders ---------------------------------------------------------------------------------

SMALL = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}


def container(command: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", command],
        "resources": json.loads(json.dumps(resources or SMALL)),
        "resizePolicy": [
            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
            {"resourceName": "memory", "restartPolicy": "NotRequired"},
        ],
    }


def deployment(
    name: str,
    replicas: int,
    *,
    resources: dict[str, Any] | None = None,
    policy: str | None = None,
    tolerate_seconds: int | None = None,
    strategy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"app": name}}
    if policy:
        meta["annotations"] = {"inplace.dev/resize-policy": policy}
    pod_spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [container("echo pid $$$$; exec sleep 3600", resources)],
    }
    if tolerate_seconds is not None:
        pod_spec["tolerations"] = [
            {
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": tolerate_seconds,
            }
            for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
        ]
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": meta, "spec": pod_spec},
    }
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


# -- reading pods -----------------------------------------------------------------------------


def pid_of(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["containerID"].removeprefix("inplace://"))


def restarts(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["restartCount"])


def actual(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(pod["status"]["containerStatuses"][0].get("resources") or {})


def running_pods(w: Workloads, selector: str, count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        pods = w.pods(selector)
        ok = [
            p
            for p in pods
            if p["status"].get("phase") == "Running"
            and (p["status"].get("containerStatuses") or [{}])[0].get("containerID")
        ]
        return ok if len(ok) == count and len(pods) == count else None

    found: list[dict[str, Any]] = wait_until(check, timeout=90, what=f"{count} pods {selector}")
    return found


def at_size(w: Workloads, selector: str, want: dict[str, Any], count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        pods = w.pods(selector)
        done = [p for p in pods if p["status"].get("containerStatuses") and actual(p) == want]
        return pods if len(done) == count == len(pods) else None

    found: list[dict[str, Any]] = wait_until(check, timeout=90, what=f"{selector} at {want}")
    return found


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond["type"] == kind:
            return dict(cond)
    return None


def cgroup_memory_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return int(Path(f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes").read_text())
    raise AssertionError("no memory cgroup")


class PodCreations:
    """The name of every pod a selector matches that existed while watching (`kubectl get -w`:
    the ones there at the start, then every one created)."""

    def __init__(self, w: Workloads, selector: str) -> None:
        self.names: set[str] = set()
        self._proc = subprocess.Popen(
            [
                "kubectl",
                "get",
                "pods",
                "-l",
                selector,
                "-w",
                "-o",
                'jsonpath={.metadata.name}{"\\n"}',
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=w.cluster.env(),
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.strip():
                self.names.add(line.strip())

    def close(self) -> set[str]:
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)
        return set(self.names)


# -- the tests --------------------------------------------------------------------------------


def test_job_is_resized_in_place_then_completes(w: Workloads) -> None:
    flag = w.tmp / "job-done"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sequencing"},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            **container(
                                f"echo pid $$$$; while [ ! -e {flag} ]; do sleep 0.2; done"
                            ),
                            # the host's flag reaches the pod through a volume, not its root
                            "volumeMounts": [{"name": "flags", "mountPath": str(w.tmp)}],
                        }
                    ],
                    "volumes": [{"name": "flags", "hostPath": {"path": str(w.tmp)}}],
                }
            },
        },
    }
    w.apply(job)
    before = running_pods(w, "job-name=sequencing", 2)
    uids = {p["metadata"]["uid"] for p in before}
    pids = {p["metadata"]["uid"]: pid_of(p) for p in before}
    w.kubectl(
        "patch",
        "job",
        "sequencing",
        "--type=json",
        "-p",
        json.dumps(
            [
                {
                    "op": "replace",
                    "path": "/spec/template/spec/containers/0/resources/limits/memory",
                    "value": "128Mi",
                }
            ]
        ),
    )
    want = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}
    after = at_size(w, "job-name=sequencing", want, 2)
    assert {p["metadata"]["uid"] for p in after} == uids, "pods were replaced"
    for pod in after:
        assert pid_of(pod) == pids[pod["metadata"]["uid"]], "the process was restarted"
        assert restarts(pod) == 0
        assert cgroup_memory_limit(pid_of(pod)) == 128 * 2**20
    wait_until(
        lambda: (
            (condition(w.get("job", "sequencing"), "PodsResized") or {}).get("status") == "True"
        ),
        what="PodsResized on the Job",
    )
    refused = w.kubectl("set", "image", "job/sequencing", "main=busybox:2", check=False)
    assert refused.returncode != 0
    assert 'Job.batch "sequencing" is invalid: spec.template: Invalid value:' in refused.stderr
    assert refused.stderr.rstrip().endswith("field is immutable"), refused.stderr
    flag.write_text("done")
    w.kubectl("wait", "--for=condition=complete", "job/sequencing", "--timeout=60s", timeout=90)
    final = w.get("job", "sequencing")
    assert final is not None and final["status"]["succeeded"] == 2
    assert len(w.items("pods", "job-name=sequencing")) == 2, "a new pod was created"
    w.kubectl("delete", "job", "sequencing", "--wait=true", timeout=90)


def test_deployment_resizes_in_place_and_rolls_out_everything_else(w: Workloads) -> None:
    w.apply(deployment("web", 3))
    w.kubectl("rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    before = running_pods(w, "app=web", 3)
    uids = {p["metadata"]["uid"]: pid_of(p) for p in before}
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "main", "resources": {"requests": {"cpu": "150m"}}}]
                }
            }
        }
    }
    w.kubectl("patch", "deployment", "web", "-p", json.dumps(patch))
    first = {"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}
    at_size(w, "app=web", first, 3)
    w.kubectl(
        "set",
        "resources",
        "deployment/web",
        "--requests=cpu=200m,memory=48Mi",
        "--limits=memory=96Mi",
    )
    second = {"requests": {"cpu": "200m", "memory": "48Mi"}, "limits": {"memory": "96Mi"}}
    resized = at_size(w, "app=web", second, 3)
    assert {p["metadata"]["uid"]: pid_of(p) for p in resized} == uids
    assert all(restarts(p) == 0 for p in resized)
    replica_sets = w.items("replicasets", "app=web")
    assert len(replica_sets) == 1
    original = replica_sets[0]["metadata"]["name"]
    described = w.kubectl("describe", "deployment", "web").stdout
    assert "PodsResized" in described and "InPlaceResize" in described
    history = w.kubectl("rollout", "history", "deployment/web").stdout
    assert history.split()[-2:] == ["1", "<none>"], history
    w.kubectl("set", "image", "deployment/web", "main=busybox:1.36")
    w.kubectl("rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    rolled = running_pods(w, "app=web", 3)
    assert not {p["metadata"]["uid"] for p in rolled} & set(uids), "old pods survived a rollout"
    sets = {r["metadata"]["name"]: r["spec"]["replicas"] for r in w.items("replicasets", "app=web")}
    assert len(sets) == 2 and sets[original] == 0
    w.kubectl("rollout", "undo", "deployment/web")
    w.kubectl("rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    sets = {r["metadata"]["name"]: r["spec"]["replicas"] for r in w.items("replicasets", "app=web")}
    assert sets[original] == 3 and len(sets) == 2, json.dumps(
        [r["spec"]["template"] for r in w.items("replicasets", "app=web")]
        + [w.get("deployment", "web")],
        indent=1,
    )
    undone = running_pods(w, "app=web", 3)
    assert all(p["spec"]["containers"][0]["image"] == "busybox" for p in undone)
    assert all(p["spec"]["containers"][0]["resources"] == second for p in undone)
    w.kubectl("scale", "deployment/web", "--replicas=2")
    running_pods(w, "app=web", 2)
    w.kubectl("rollout", "pause", "deployment/web")
    w.kubectl("set", "image", "deployment/web", "main=busybox:1.37")
    assert len(w.items("replicasets", "app=web")) == 2, "a paused deployment rolled out"
    w.kubectl("rollout", "resume", "deployment/web")
    w.kubectl("rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    w.kubectl("rollout", "restart", "deployment/web")
    w.kubectl("rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    sizes = sorted(r["spec"]["replicas"] for r in w.items("replicasets", "app=web"))
    assert sizes == [0, 0, 0, 2], sizes
    w.kubectl("delete", "deployment", "web", "--wait=true", timeout=90)


def test_in_place_preferred_moves_a_pod_and_a_budget_holds_it(w: Workloads) -> None:
    w.apply(
        deployment(
            "mover",
            1,
            resources={"requests": {"cpu": "300m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
            policy="InPlacePreferred",
        ),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "mover-budget"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "mover"}}},
        },
    )
    [pod] = running_pods(w, "app=mover", 1)
    home = pod["spec"]["nodeName"]
    filler = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "filler", "labels": {"app": "filler"}},
        "spec": {
            "nodeName": home,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                container(
                    "exec sleep 3600",
                    {"requests": {"cpu": "600m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                )
            ],
        },
    }
    w.apply(filler)
    running_pods(w, "app=filler", 1)
    w.kubectl("set", "resources", "deployment/mover", "--requests=cpu=500m,memory=32Mi")

    def held() -> bool:
        cond = condition(w.get("deployment", "mover"), "PodsResized")
        return cond is not None and "PodDisruptionBudget mover-budget" in cond["message"]

    wait_until(held, timeout=60, what="the move held by the budget, named")
    [still] = w.pods("app=mover")
    assert still["metadata"]["uid"] == pod["metadata"]["uid"]
    w.kubectl("patch", "pdb", "mover-budget", "--type=merge", "-p", '{"spec":{"minAvailable":0}}')
    want = {"requests": {"cpu": "500m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}
    [moved] = at_size(w, "app=mover", want, 1)
    assert moved["metadata"]["uid"] != pod["metadata"]["uid"]
    assert moved["spec"]["nodeName"] != home
    wait_until(
        lambda: (
            "1 moved"
            in (condition(w.get("deployment", "mover"), "PodsResized") or {}).get("message", "")
        ),
        what="the move counted",
    )
    w.kubectl("delete", "pod", "filler", "--wait=true", timeout=60)
    w.kubectl("delete", "pdb", "mover-budget")
    w.kubectl("delete", "deployment", "mover", "--wait=true", timeout=90)


def test_deleting_a_deployment_cascades_as_asked(w: Workloads) -> None:
    for name in ("gone", "kept", "waited"):
        w.apply(deployment(name, 2))
    for name in ("gone", "kept", "waited"):
        running_pods(w, f"app={name}", 2)
    w.kubectl("delete", "deployment", "gone")
    wait_until(
        lambda: not w.items("pods", "app=gone") and not w.items("replicasets", "app=gone"),
        what="background cascade",
    )
    w.kubectl("delete", "deployment", "kept", "--cascade=orphan")
    wait_until(lambda: w.get("deployment", "kept") is None, what="orphaning delete")
    [rs] = w.items("replicasets", "app=kept")
    assert not rs["metadata"].get("ownerReferences")
    assert len(w.pods("app=kept")) == 2
    w.kubectl("delete", "deployment", "waited", "--cascade=foreground", "--wait=true", timeout=90)
    assert not w.items("pods", "app=waited") and not w.items("replicasets", "app=waited")
    w.kubectl("delete", "replicaset", "-l", "app=kept", "--wait=true", timeout=90)
    wait_until(lambda: not w.items("pods", "app=kept"), what="orphans cleaned up")


def test_controller_manager_killed_mid_rollout_and_mid_resize(w: Workloads) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    w.apply(deployment("crash", 4, strategy=strategy))
    w.kubectl("rollout", "status", "deployment/crash", "--timeout=90s", timeout=120)
    watcher = PodCreations(w, "app=crash")
    try:
        w.kubectl("set", "image", "deployment/crash", "main=busybox:2")

        def new_set_started() -> bool:
            sets = w.items("replicasets", "app=crash")
            return any(
                s["spec"]["replicas"] >= 1
                and s["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:2"
                for s in sets
            )

        wait_until(new_set_started, what="the rollout under way")
        os.kill(w.component_pid("controller-manager"), signal.SIGKILL)
        w.kubectl("rollout", "status", "deployment/crash", "--timeout=120s", timeout=150)
        new_hash = next(
            s["metadata"]["labels"]["pod-template-hash"]
            for s in w.items("replicasets", "app=crash")
            if s["spec"]["replicas"] == 4
        )
        rolled = running_pods(w, "app=crash", 4)
        created = watcher.close()
    finally:
        watcher.close()
    made_for_new = {name for name in created if name.startswith(f"crash-{new_hash}-")}
    assert len(made_for_new) == 4, f"pods made for the new replica set: {sorted(made_for_new)}"
    uids = {p["metadata"]["uid"]: pid_of(p) for p in rolled}
    watcher = PodCreations(w, "app=crash")
    try:
        w.kubectl(
            "set",
            "resources",
            "deployment/crash",
            "--requests=cpu=120m,memory=40Mi",
            "--limits=memory=80Mi",
        )
        os.kill(w.component_pid("controller-manager"), signal.SIGKILL)
        want = {"requests": {"cpu": "120m", "memory": "40Mi"}, "limits": {"memory": "80Mi"}}
        resized = at_size(w, "app=crash", want, 4)
        created = watcher.close()
    finally:
        watcher.close()
    assert {p["metadata"]["uid"]: pid_of(p) for p in resized} == uids
    assert created == {p["metadata"]["name"] for p in rolled}, "a pod was created for a resize"
    w.kubectl("delete", "deployment", "crash", "--wait=true", timeout=90)


def test_a_stopped_node_agent_is_marked_unknown_and_its_pods_move(w: Workloads) -> None:
    w.apply(deployment("survivor", 2, tolerate_seconds=2))
    pods = running_pods(w, "app=survivor", 2)
    victim = pods[0]["spec"]["nodeName"]
    agent = w.component_pid(f"--node-name {victim} ")
    os.kill(agent, signal.SIGSTOP)
    try:

        def unknown() -> bool:
            node = w.get("node", victim)
            ready = condition(node, "Ready")
            taints = {
                (t["key"], t["effect"])
                for t in ((node or {}).get("spec") or {}).get("taints") or ()
            }
            return (
                ready is not None
                and ready["status"] == "Unknown"
                and ("node.kubernetes.io/unreachable", "NoExecute") in taints
            )

        wait_until(unknown, timeout=90, what=f"{victim} Unknown and tainted")
        assert "NotReady" in w.kubectl("get", "node", victim).stdout

        def moved() -> bool:
            alive = [p for p in w.pods("app=survivor") if p["status"].get("phase") == "Running"]
            return len(alive) == 2 and all(p["spec"]["nodeName"] != victim for p in alive)

        wait_until(moved, timeout=90, what="the pods recreated on the other node")
        evicted = [
            p for p in w.items("pods", "app=survivor") if p["spec"].get("nodeName") == victim
        ]
        assert evicted and all(p["metadata"].get("deletionTimestamp") for p in evicted)
    finally:
        os.kill(agent, signal.SIGCONT)
    wait_until(
        lambda: (condition(w.get("node", victim), "Ready") or {}).get("status") == "True",
        timeout=90,
        what=f"{victim} Ready again",
    )
    wait_until(
        lambda: not ((w.get("node", victim) or {}).get("spec") or {}).get("taints"),
        what="taints removed",
    )
    w.kubectl("delete", "deployment", "survivor", "--wait=true", timeout=90)
    wait_until(
        lambda: not w.items("pods", "app=survivor"), timeout=90, what="evicted pods finalized"
    )


def test_bad_workloads_are_refused_with_a_422_naming_the_field(w: Workloads) -> None:
    bad_selector = deployment("bad", 1)
    bad_selector["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    negative = deployment("bad", -1)
    frozen = deployment(
        "bad",
        1,
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
    )
    for manifest, field in (
        (bad_selector, "spec.template.metadata.labels: Invalid value"),
        (negative, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        (
            frozen,
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
            "`maxSurge` is 0",
        ),
    ):
        refused = w.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)
        assert refused.returncode != 0
        assert 'The Deployment "bad" is invalid' in refused.stderr, refused.stderr
        assert field in refused.stderr, refused.stderr
    assert w.get("deployment", "bad") is None
