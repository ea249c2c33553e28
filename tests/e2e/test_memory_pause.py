"""End to end: a spike past the memory limit is paused, bumped and finished, on `inplace up`.

One `inplace up --nodes 1` (1Gi node: the API server, the scheduler, the controller manager
with its memory-pause responder, a node agent with real cgroup v1 limits) for the module, real
kubectl, and `inplace stress` as the workload. What issue 10 says the feature must show:

* a pod with ``oom-kill-disable`` and ``memory-on-pause`` allocating past its limit is paused,
  not killed (restartCount 0, no ``OOMKilled``), ``MemoryPaused=True`` appears, it is bumped,
  resumes and exits 0;
* the same pod without the annotation is ``OOMKilled``;
* a pause whose bump finds no room stays paused, saying why, until another pod is deleted,
  then finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Cluster, start_cluster
from tests.poll import wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/memory"),
    reason="needs root and cgroup v1 (real limits are checked)",
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data = tmp_path_factory.mktemp("pause") / "data"
    running = start_cluster(data, None, "--nodes", "1", "--node-cpu", "2", "--node-memory", "1Gi")
    try:
        wait_until(lambda: node_ready(running), what="node-1 Ready")
        yield running
    finally:
        running.stop()


def node_ready(cluster: Cluster) -> bool:
    out = cluster.kubectl("get", "nodes", "-o", "json", check=False)
    if out.returncode != 0:
        return False
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for n in json.loads(out.stdout)["items"]
        for c in n["status"].get("conditions") or ()
    )


def stress_pod(name: str, memory: str, size: str, **annotations: str) -> str:
    """A pod whose command is `inplace stress` allocating ``size`` (held 1 s), then done."""
    env = []
    if os.environ.get("PYTHONPATH"):  # a source checkout: the pod runs the same inplace
        env = [{"name": "PYTHONPATH", "value": os.environ["PYTHONPATH"]}]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "python",
                    "command": [
                        sys.executable,
                        "-m",
                        "inplace",
                        "stress",
                        "--vm",
                        "1",
                        "--vm-bytes",
                        size,
                        "--vm-hold",
                        "1",
                    ],
                    "env": env,
                    "resources": {
                        "requests": {"cpu": "100m", "memory": memory},
                        "limits": {"cpu": "500m", "memory": memory},
                    },
                }
            ],
        },
    }
    return json.dumps(body)


def get_pod(cluster: Cluster, name: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout))


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in pod["status"].get("conditions") or ():
        if cond["type"] == ctype:
            return dict(cond)
    return None


def main_status(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = pod["status"].get("containerStatuses") or [{}]
    return dict(statuses[0])


def events_of(cluster: Cluster, name: str) -> dict[str, str]:
    out = cluster.kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
    )
    return {e["reason"]: e["message"] for e in json.loads(out.stdout)["items"]}


def finished(cluster: Cluster, name: str) -> dict[str, Any] | None:
    pod = get_pod(cluster, name)
    return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None


def paused(cluster: Cluster, name: str) -> dict[str, Any] | None:
    pod = get_pod(cluster, name)
    cond = condition(pod, "MemoryPaused")
    return pod if cond is not None and cond["status"] == "True" else None


class PodWatch:
    """Every state of one pod as a watch delivers it (`kubectl get pod NAME --watch`): a
    pause that the responder ends within a second is seen even if no poll would catch it."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.states: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            ["kubectl", "get", "pod", name, "--watch", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=cluster.env(),
        )
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for line in self.proc.stdout:
            buffer += line
            with contextlib.suppress(ValueError):
                obj, end = decoder.raw_decode(buffer.lstrip())
                self.states.append(obj)
                buffer = buffer.lstrip()[end:]

    def first(self, predicate: Any) -> dict[str, Any] | None:
        return next((s for s in list(self.states) if predicate(s)), None)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def is_paused(pod: dict[str, Any]) -> bool:
    cond = condition(pod, "MemoryPaused")
    return cond is not None and cond["status"] == "True"


def delete(cluster: Cluster, *names: str) -> None:
    cluster.kubectl("delete", "pod", *names, "--ignore-not-found", "--wait=true", timeout=90)


def test_paused_not_killed_bumped_resumed_and_done(cluster: Cluster) -> None:
    annotations = {"inplace.dev/oom-kill-disable": "true", "inplace.dev/memory-on-pause": "x2"}
    cluster.kubectl("apply", "-f", "-", input=stress_pod("spike", "128Mi", "200M", **annotations))
    watch = PodWatch(cluster, "spike")
    try:
        pod = wait_until(lambda: watch.first(is_paused), what="MemoryPaused=True")
        status = main_status(pod)
        assert status["restartCount"] == 0 and "running" in status["state"]
        cond = condition(pod, "MemoryPaused")
        assert cond is not None and cond["reason"] == "MemoryLimitReached"
        assert "by cgroup v1 memory.oom_control" in cond["message"]

        pod = wait_until(lambda: finished(cluster, "spike"), what="spike finished")
        status = main_status(pod)
        assert pod["status"]["phase"] == "Succeeded"
        assert status["restartCount"] == 0
        assert status["state"]["terminated"]["reason"] == "Completed"
        assert status["state"]["terminated"]["exitCode"] == 0
        assert "lastState" not in status or "terminated" not in (status.get("lastState") or {})
        assert status["resources"]["limits"]["memory"] == "256Mi"  # 128Mi x2
        assert condition(pod, "MemoryPaused") is None
        events = events_of(cluster, "spike")
        assert "MemoryPaused" in events
        assert "128Mi -> 256Mi" in events["MemoryBumped"]
        assert "ResizeCompleted" in events
    finally:
        watch.close()
        delete(cluster, "spike")


def test_the_same_pod_without_the_annotation_is_oom_killed(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=stress_pod("plain", "128Mi", "200M"))
    try:
        pod = wait_until(lambda: finished(cluster, "plain"), what="plain finished")
        terminated = main_status(pod)["state"]["terminated"]
        assert terminated["reason"] == "OOMKilled"
        assert terminated["exitCode"] == 137
        assert condition(pod, "MemoryPaused") is None
    finally:
        delete(cluster, "plain")


FILLER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "filler"},
    "spec": {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "command": ["sleep", "3600"],
                "resources": {"requests": {"memory": "700Mi"}, "limits": {"memory": "700Mi"}},
            }
        ],
    },
}


def test_a_pause_with_no_room_waits_until_a_pod_is_deleted(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(FILLER))
    annotations = {
        "inplace.dev/oom-kill-disable": "true",
        "inplace.dev/memory-on-pause": "+256Mi",
    }
    try:
        wait_until(
            lambda: "running" in main_status(get_pod(cluster, "filler")).get("state", {}),
            what="filler running",
        )
        cluster.kubectl(
            "apply", "-f", "-", input=stress_pod("squeezed", "128Mi", "200M", **annotations)
        )

        def waiting_for_room() -> dict[str, Any] | None:
            pod = paused(cluster, "squeezed")
            cond = condition(pod, "MemoryPaused") if pod else None
            if cond and "pending (Deferred)" in (cond.get("message") or ""):
                return pod
            return None

        pod = wait_until(waiting_for_room, what="paused, the bump deferred for room")
        cond = condition(pod, "MemoryPaused")
        assert cond is not None and "memory" in cond["message"]
        pending = condition(pod, "PodResizePending")
        assert pending is not None and pending["reason"] == "Deferred"
        assert main_status(pod)["restartCount"] == 0
        assert main_status(pod)["resources"]["limits"]["memory"] == "128Mi"
        # Still paused, still saying why, for as long as the room is taken.
        again = paused(cluster, "squeezed")
        assert again is not None and finished(cluster, "squeezed") is None

        delete(cluster, "filler")
        pod = wait_until(lambda: finished(cluster, "squeezed"), what="squeezed finished")
        status = main_status(pod)
        assert pod["status"]["phase"] == "Succeeded"
        assert status["restartCount"] == 0
        assert status["state"]["terminated"]["exitCode"] == 0
        assert status["resources"]["limits"]["memory"] == "384Mi"
    finally:
        delete(cluster, "squeezed", "filler")
