"""``inplace operator`` beside the real kube-controller-manager: a resources-only change of a
Deployment, StatefulSet, DaemonSet or running Job resizes the same pods in place (same UIDs,
PIDs, no restart, the new size in spec, status and cgroup files) instead of rolling out; an
image change rolls out; without the operator the same change rolls out (the control); a
SIGKILLed leader's standby takes over within the lease duration.

The operator runs here as host processes with the test bed's admin kubeconfig, each serving
its webhook on 127.0.0.1 and registering its own URL when it leads (the bed routes no
Service traffic). Installing it as pods with its Helm chart is ``test_operator_install.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.images import WORKLOAD_IMAGE
from tests.conftest import free_port
from tests.poll import wait_until

from .conftest import Bed, cgroup_file, pid_of, status_of

NAMESPACE = "inplace-system"
SMALL_ARGS = ["--requests=cpu=50m,memory=32Mi", "--limits=cpu=100m,memory=64Mi"]
BIG = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "128Mi"},
}
BIG_ARGS = ["--requests=cpu=100m,memory=64Mi", "--limits=cpu=200m,memory=128Mi"]

CONTAINER = f"""\
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: {WORKLOAD_IMAGE}
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "echo started; exec sleep 3600"]
        resources:
          requests: {{cpu: 50m, memory: 32Mi}}
          limits: {{cpu: 100m, memory: 64Mi}}
"""


def workload(kind: str, name: str, spec: str = "", api: str = "apps/v1", pod_spec: str = "") -> str:
    return f"""\
apiVersion: {api}
kind: {kind}
metadata: {{name: {name}}}
spec:
{spec}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{pod_spec}{CONTAINER}"""


class Operator:
    """One ``inplace operator`` process."""

    def __init__(self, bed: Bed, directory: Path, identity: str) -> None:
        self.port = free_port()
        self.identity = identity
        self.log = directory / f"operator-{identity}.log"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "inplace",
                    "operator",
                    "--kubeconfig",
                    str(bed.plane.kubeconfig),
                    "--namespace",
                    NAMESPACE,
                    "--identity",
                    identity,
                    "--webhook-host",
                    "127.0.0.1",
                    "--webhook-port",
                    str(self.port),
                    "--webhook-url",
                    f"https://127.0.0.1:{self.port}/mutate",
                    "--health-port",
                    str(free_port()),
                    "--lease-duration",
                    "6s",
                    "--renew-deadline",
                    "4s",
                    "--retry-period",
                    "1s",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def holder(bed: Bed) -> str:
    out = bed.kubectl(
        "get", "lease", "inplace-operator", "-n", NAMESPACE, "-o", "json", check=False
    )
    if out.returncode != 0:
        return ""
    return str(json.loads(out.stdout)["spec"].get("holderIdentity") or "")


def webhook_url(bed: Bed) -> str:
    out = bed.kubectl(
        "get", "mutatingwebhookconfiguration", "inplace-operator", "-o", "json", check=False
    )
    if out.returncode != 0:
        return ""
    return str(json.loads(out.stdout)["webhooks"][0]["clientConfig"].get("url") or "")


@pytest.fixture(scope="module")
def operators(bed: Bed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Operator]]:
    bed.kubectl("create", "namespace", NAMESPACE)
    running: list[Operator] = []
    try:
        yield running
    finally:
        for op in running:
            op.stop()
        bed.kubectl("delete", "mutatingwebhookconfiguration", "inplace-operator", check=False)


def lead(bed: Bed, operators: list[Operator], directory: Path, identity: str) -> Operator:
    op = Operator(bed, directory, identity)
    operators.append(op)
    wait_until(
        lambda: holder(bed) == identity and webhook_url(bed).endswith(f":{op.port}/mutate"),
        timeout=60,
        what=f"{identity} leads with its webhook registered",
    )
    return op


def pods_of(bed: Bed, app: str) -> list[dict[str, Any]]:
    out = bed.kubectl("get", "pods", "-l", f"app={app}", "-o", "json")
    return sorted(
        (p for p in json.loads(out.stdout)["items"] if "deletionTimestamp" not in p["metadata"]),
        key=lambda p: p["metadata"]["name"],
    )


def all_running(bed: Bed, app: str, count: int) -> list[dict[str, Any]] | None:
    pods = pods_of(bed, app)
    if len(pods) != count:
        return None
    for pod in pods:
        statuses = pod["status"].get("containerStatuses") or []
        if not statuses or not all("running" in cs["state"] for cs in statuses):
            return None
    return pods


def resized(bed: Bed, app: str, count: int) -> list[dict[str, Any]] | None:
    """Every pod of ``app`` at BIG in its spec and in its status (the node applied it)."""
    pods = all_running(bed, app, count)
    if pods is None:
        return None
    for pod in pods:
        if pod["spec"]["containers"][0]["resources"] != BIG:
            return None
        actual = status_of(pod, "main").get("resources") or {}
        if actual.get("limits", {}).get("memory") != "128Mi":
            return None
    return pods


def replica_sets(bed: Bed, app: str) -> list[str]:
    out = bed.kubectl("get", "rs", "-l", f"app={app}", "-o", "json")
    return sorted(rs["metadata"]["name"] for rs in json.loads(out.stdout)["items"])


def released(bed: Bed, kind: str, name: str) -> dict[str, Any] | None:
    """The workload once the operator gave it back: no hold left on it."""
    obj = bed.get(kind, name)
    held = "inplace.dev/held" in (obj["metadata"].get("annotations") or {})
    return None if held or obj["spec"].get("paused") else obj


def identities(pods: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(p["metadata"]["uid"], pid_of(p)) for p in pods]


def assert_in_place(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    assert identities(after) == identities(before)
    for pod in after:
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid_of(pod), "memory", "memory.limit_in_bytes") == str(128 * 2**20)
        assert cgroup_file(pid_of(pod), "cpu", "cpu.cfs_quota_us") == "20000"


def test_deployment_resized_in_place_and_without_the_operator_rolled_out(
    bed: Bed, operators: list[Operator], tmp_path: Path
) -> None:
    # The control: no operator yet, so the real controllers roll the change out.
    bed.apply(workload("Deployment", "control", "  replicas: 2"))
    wait_until(lambda: all_running(bed, "control", 2), timeout=90, what="control running")
    first = replica_sets(bed, "control")
    bed.kubectl("set", "resources", "deployment/control", *BIG_ARGS)
    wait_until(lambda: len(replica_sets(bed, "control")) == 2, timeout=60, what="a rollout")
    bed.kubectl("delete", "deployment", "control", "--wait=false")
    assert len(first) == 1

    lead(bed, operators, tmp_path, "op-a")
    bed.apply(workload("Deployment", "web", "  replicas: 5"))
    before = wait_until(lambda: all_running(bed, "web", 5), timeout=120, what="web running")
    sets = replica_sets(bed, "web")
    collisions = bed.get("deployment", "web")["status"].get("collisionCount")
    bed.kubectl("set", "resources", "deployment/web", *BIG_ARGS)
    after = wait_until(lambda: resized(bed, "web", 5), timeout=120, what="web resized in place")
    assert_in_place(before, after)
    assert replica_sets(bed, "web") == sets  # the same ReplicaSet, no new one
    d = wait_until(lambda: released(bed, "deployment", "web"), timeout=30, what="released")
    assert d["status"].get("collisionCount") == collisions

    def progress() -> dict[str, Any] | None:
        conditions = bed.get("deployment", "web")["status"].get("conditions") or []
        return next((c for c in conditions if c["type"] == "PodsResized"), None)

    cond = wait_until(progress, timeout=30, what="PodsResized on the Deployment")
    assert cond["status"] == "True", cond
    assert cond["message"].startswith("5/5 pods at the template's resources (5 resized in place")
    resized_events = [
        e for e in bed.events_of(after[1]["metadata"]["name"]) if e["reason"] == "ResizeRequested"
    ]
    assert resized_events and "Deployment web" in resized_events[0]["message"]
    assert d["spec"]["template"]["spec"]["containers"][0]["resources"] == BIG
    # A pod deleted afterwards comes back at the new size.
    bed.kubectl("delete", "pod", before[0]["metadata"]["name"], "--wait=false")
    wait_until(lambda: resized(bed, "web", 5), timeout=120, what="the new pod at the new size")
    # Anything else still rolls out.
    bed.kubectl("set", "image", "deployment/web", "main=busybox:1.37")
    wait_until(lambda: len(replica_sets(bed, "web")) == 2, timeout=60, what="an image rollout")
    bed.kubectl("delete", "deployment", "web", "--wait=false")


def test_stateful_and_daemon_sets_resized_in_place(
    bed: Bed, operators: list[Operator], tmp_path: Path
) -> None:
    if not operators:
        lead(bed, operators, tmp_path, "op-a")
    bed.apply(
        workload("StatefulSet", "db", "  replicas: 3\n  serviceName: db")
        + "---\n"
        + workload("DaemonSet", "agent")
    )
    db = wait_until(lambda: all_running(bed, "db", 3), timeout=180, what="db running")
    agents = wait_until(lambda: all_running(bed, "agent", 2), timeout=90, what="agents running")
    bed.kubectl("set", "resources", "statefulset/db", *BIG_ARGS)
    bed.kubectl("set", "resources", "daemonset/agent", *BIG_ARGS)
    assert_in_place(db, wait_until(lambda: resized(bed, "db", 3), timeout=120, what="db"))
    assert_in_place(agents, wait_until(lambda: resized(bed, "agent", 2), timeout=120, what="ds"))
    sts = wait_until(lambda: released(bed, "statefulset", "db"), timeout=30, what="released")
    assert sts["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    wait_until(
        lambda: all(
            p["metadata"]["labels"]["controller-revision-hash"]
            == bed.get("statefulset", "db")["status"]["updateRevision"]
            for p in pods_of(bed, "db")
        ),
        timeout=30,
        what="db's pods at the update revision",
    )
    ds = wait_until(lambda: released(bed, "daemonset", "agent"), timeout=30, what="released")
    assert ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    bed.kubectl("delete", "statefulset", "db", "--wait=false", check=False)
    bed.kubectl("delete", "daemonset", "agent", "--wait=false", check=False)


def test_a_running_jobs_pods_resized_and_a_retry_created_at_the_new_size(
    bed: Bed, operators: list[Operator], tmp_path: Path
) -> None:
    if not operators:
        lead(bed, operators, tmp_path, "op-a")
    bed.apply(
        workload(
            "Job",
            "crunch",
            "  parallelism: 2\n  completions: 2\n  manualSelector: true",
            api="batch/v1",
            pod_spec="      restartPolicy: Never\n",
        )
    )
    before = wait_until(lambda: all_running(bed, "crunch", 2), timeout=90, what="crunch")
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/resources", "value": BIG}]
    out = bed.kubectl("patch", "job", "crunch", "--type=json", "-p", json.dumps(patch))
    assert "immutable" in out.stderr  # the webhook's warning, shown by kubectl
    assert_in_place(before, wait_until(lambda: resized(bed, "crunch", 2), timeout=120, what="job"))
    bed.kubectl("delete", "pod", before[0]["metadata"]["name"], "--wait=false")
    wait_until(lambda: resized(bed, "crunch", 2), timeout=120, what="the retry at the new size")
    bed.kubectl("delete", "job", "crunch", "--wait=false")


def test_a_killed_leaders_standby_takes_over_and_a_stopped_operator_lets_changes_roll_out(
    bed: Bed, operators: list[Operator], tmp_path: Path
) -> None:
    if not operators:
        lead(bed, operators, tmp_path, "op-a")
    leader = next(op for op in operators if op.identity == holder(bed))
    standby = Operator(bed, tmp_path, "op-b")
    operators.append(standby)
    leader.stop(signal.SIGKILL)
    wait_until(
        lambda: holder(bed) == "op-b" and webhook_url(bed).endswith(f":{standby.port}/mutate"),
        timeout=30,
        what="the standby leads within the lease duration",
    )
    bed.apply(workload("Deployment", "after", "  replicas: 2"))
    before = wait_until(lambda: all_running(bed, "after", 2), timeout=90, what="after running")
    bed.kubectl("set", "resources", "deployment/after", *BIG_ARGS)
    assert_in_place(before, wait_until(lambda: resized(bed, "after", 2), timeout=120, what="b"))
    wait_until(lambda: released(bed, "deployment", "after"), timeout=30, what="released")
    # The operator stopped: the webhook fails open (Ignore) and the change rolls out.
    standby.stop()
    bed.kubectl("set", "resources", "deployment/after", *SMALL_ARGS)
    wait_until(lambda: len(replica_sets(bed, "after")) == 2, timeout=60, what="a rollout")
    bed.kubectl("delete", "deployment", "after", "--wait=false")
