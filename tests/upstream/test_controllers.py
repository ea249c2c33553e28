"""The real controllers drive inplace pods: a Deployment's rollout and undo, ReplicaSet scaling,
a Job to completion, a StatefulSet's ordered start, a DaemonSet's pod per node, a CronJob's Job,
``kubectl drain`` against a PodDisruptionBudget; ``kubectl logs`` and ``exec`` reach the agent
through the real API server."""

from __future__ import annotations

import datetime
import json
from typing import Any

from tests.poll import wait_until

from .conftest import Bed, wait_running

CONTAINER = """\
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "{command}"]
        resources:
          requests: {{cpu: 50m, memory: 32Mi}}
          limits: {{cpu: 100m, memory: 64Mi}}
"""

SLEEP = "echo started; exec sleep 3600"


def workload(kind: str, name: str, spec: str, command: str = SLEEP, api: str = "apps/v1") -> str:
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
{CONTAINER.format(command=command)}"""


def pods_of(bed: Bed, app: str) -> list[dict[str, Any]]:
    """The app's pods that are not terminating."""
    out = bed.kubectl("get", "pods", "-l", f"app={app}", "-o", "json")
    return [p for p in json.loads(out.stdout)["items"] if "deletionTimestamp" not in p["metadata"]]


def field(bed: Bed, kind: str, name: str, path: str) -> str:
    return bed.kubectl("get", kind, name, "-o", f"jsonpath={path}").stdout.strip()


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_deployment_rollout_scale_and_undo(bed: Bed) -> None:
    bed.apply(workload("Deployment", "web", "  replicas: 2"))
    try:
        bed.kubectl("rollout", "status", "deployment/web", "--timeout=90s", timeout=100)
        first = {p["metadata"]["name"] for p in pods_of(bed, "web")}
        assert len(first) == 2

        bed.kubectl("scale", "deployment/web", "--replicas=3")
        wait_until(
            lambda: field(bed, "deployment", "web", "{.status.readyReplicas}") == "3",
            timeout=90,
            what="3 ready replicas",
        )

        bed.kubectl("set", "env", "deployment/web", "FLAVOUR=new")
        bed.kubectl("rollout", "status", "deployment/web", "--timeout=120s", timeout=130)
        assert not first & {p["metadata"]["name"] for p in pods_of(bed, "web")}

        bed.kubectl("rollout", "undo", "deployment/web")
        bed.kubectl("rollout", "status", "deployment/web", "--timeout=120s", timeout=130)
        env = json.loads(
            field(bed, "deployment", "web", "{.spec.template.spec.containers[0].env}") or "null"
        )
        assert not env
        assert field(bed, "deployment", "web", "{.metadata.annotations}").find("revision") >= 0
    finally:
        bed.kubectl("delete", "deployment", "web", "--wait=false")


def test_job_runs_to_completion(bed: Bed) -> None:
    spec = "  completions: 2\n  parallelism: 2\n  backoffLimit: 0"
    job = workload("Job", "once", spec, command="echo done", api="batch/v1")
    job = job.replace("  selector: {matchLabels: {app: once}}\n", "").replace(
        "    spec:\n      terminationGracePeriodSeconds",
        "    spec:\n      restartPolicy: Never\n      terminationGracePeriodSeconds",
    )
    bed.apply(job)
    try:
        bed.kubectl("wait", "job/once", "--for=condition=Complete", "--timeout=90s", timeout=100)
        assert field(bed, "job", "once", "{.status.succeeded}") == "2"
    finally:
        bed.kubectl("delete", "job", "once", "--wait=false")


def test_statefulset_starts_in_order(bed: Bed) -> None:
    spec = "  replicas: 2\n  serviceName: db"
    bed.apply(workload("StatefulSet", "db", spec))
    try:
        wait_until(
            lambda: field(bed, "statefulset", "db", "{.status.readyReplicas}") == "2",
            timeout=120,
            what="2 ready StatefulSet replicas",
        )
        first, second = bed.get("pod", "db-0"), bed.get("pod", "db-1")
        assert first["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-0"
        ready = next(c for c in first["status"]["conditions"] if c["type"] == "Ready")
        # OrderedReady: db-1 was created only once db-0 was Ready
        assert parse_time(second["metadata"]["creationTimestamp"]) >= parse_time(
            ready["lastTransitionTime"]
        )
    finally:
        bed.kubectl("delete", "statefulset", "db", "--wait=false")


def test_daemonset_runs_one_pod_per_node(bed: Bed) -> None:
    bed.apply(workload("DaemonSet", "agent", "  updateStrategy: {type: RollingUpdate}"))
    try:
        wait_until(
            lambda: field(bed, "daemonset", "agent", "{.status.numberReady}") == "2",
            timeout=90,
            what="a ready DaemonSet pod on each node",
        )
        nodes = sorted(p["spec"]["nodeName"] for p in pods_of(bed, "agent"))
        assert nodes == ["node-1", "node-2"]
    finally:
        bed.kubectl("delete", "daemonset", "agent", "--wait=false")


def test_cronjob_makes_a_job(bed: Bed) -> None:
    cron = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: main
            image: busybox
            command: ["sh", "-c", "echo tick"]
            resources: {limits: {cpu: 50m, memory: 32Mi}}
"""
    bed.apply(cron)
    try:
        wait_until(
            lambda: field(bed, "cronjob", "tick", "{.status.lastSuccessfulTime}"),
            timeout=150,
            interval=1,
            what="a CronJob's Job succeeded",
        )
    finally:
        bed.kubectl("delete", "cronjob", "tick", "--wait=false")


def test_drain_respects_a_pod_disruption_budget(bed: Bed) -> None:
    bed.apply(workload("Deployment", "kept", "  replicas: 2"))
    bed.apply(
        """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: kept}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: kept}}
"""
    )
    try:
        bed.kubectl("rollout", "status", "deployment/kept", "--timeout=90s", timeout=100)
        node = pods_of(bed, "kept")[0]["spec"]["nodeName"]
        out = bed.kubectl(
            "drain", node, "--ignore-daemonsets", "--timeout=8s", check=False, timeout=40
        )
        assert out.returncode != 0
        assert "disruption budget" in out.stderr
        assert len(pods_of(bed, "kept")) == 2  # nothing was evicted
        bed.kubectl("patch", "pdb", "kept", "--type=merge", "-p", '{"spec":{"maxUnavailable":1}}')
        bed.kubectl("drain", node, "--ignore-daemonsets", "--timeout=90s", timeout=100)
        bed.kubectl("rollout", "status", "deployment/kept", "--timeout=90s", timeout=100)
        assert all(p["spec"]["nodeName"] != node for p in pods_of(bed, "kept"))
    finally:
        bed.kubectl("uncordon", "node-1", "node-2", check=False)
        bed.kubectl("delete", "deployment,pdb", "kept", "--wait=false")


def test_logs_and_exec_through_the_api_server(bed: Bed) -> None:
    bed.apply(
        """\
apiVersion: v1
kind: Pod
metadata: {name: talk}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
"""
    )
    try:
        pod = wait_running(bed, "talk")
        # the pod's own PID namespace: its command is PID 2, under the container's tiny init
        wait_until(
            lambda: bed.kubectl("logs", "talk", check=False).stdout.strip() == "pid 2",
            what="kubectl logs through kube-apiserver",
        )
        out = bed.kubectl("exec", "talk", "--", "sh", "-c", "echo from exec; exit 3", check=False)
        assert out.stdout.strip() == "from exec"
        assert out.returncode == 3
        # the exec'd shell runs in the pod's cgroup, beside the workload
        cg = bed.kubectl("exec", "talk", "--", "cat", "/proc/self/cgroup").stdout
        assert f"pod{pod['metadata']['uid']}" in cg
    finally:
        bed.kubectl("delete", "pod", "talk", "--wait=false")
