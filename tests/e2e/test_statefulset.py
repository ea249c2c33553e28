"""StatefulSets end to end: a real `inplace up`, real kubectl, real processes and claims.

One cluster for the module, one StatefulSet taken through its life, test after test:

* upstream's example (the StatefulSet tutorial's ``web.yaml``: a headless Service and the
  set ``web`` with a ``www`` claim template) converges: web-0, web-1, web-2 made in order,
  each once the one before is Running and Ready, each with its own bound claim;
* ``kubectl set resources statefulset/web`` (QoS class kept): the same pods (uids, PIDs),
  no restart, no pod deleted, the new size in the spec, the status and the cgroup;
* an image change rolls out from web-2 down; ``partition`` holds the pods below it;
  ``kubectl rollout status | history | undo statefulset/web``;
* ``kubectl scale statefulset web --replicas=1`` removes web-2 then web-1, their claims kept;
* deleting the set deletes its pods.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from inplace.api.timestamps import parse_rfc3339
from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of, remove_empty_cgroup_root
from tests.conftest import Cluster, reap_cgroups, start_cluster
from tests.e2e.test_workloads import (
    Workloads,
    actual,
    at_size,
    cgroup_memory_limit,
    pid_of,
    restarts,
)
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SELECTOR = "app=nginx"

WEB = """\
apiVersion: v1
kind: Service
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  ports:
  - port: 80
    name: web
  clusterIP: None
  selector:
    app: nginx
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: "nginx"
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: registry.k8s.io/nginx-slim:0.7
        command: ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
        resources:
          requests:
            cpu: 100m
            memory: 32Mi
          limits:
            memory: 64Mi
        ports:
        - containerPort: 80
          name: web
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: [ "ReadWriteOnce" ]
      resources:
        requests:
          storage: 1Gi
"""
"""kubernetes/website's ``content/en/examples/application/web/web.yaml``, with three changes:
3 replicas (as the StatefulSet concepts page has them), a ``command`` (no image is run here:
a container is its command, run as a host process) and ``resources`` (so that a resize has a
QoS class to keep; the example's container has none, BestEffort)."""


class PodWatch:
    """Every pod of the set as ``kubectl get -w`` reports it: the order pods were first seen
    (by uid) and the order they were first seen terminating."""

    def __init__(self, w: Workloads, existing: int = 0) -> None:
        """``existing``: how many pods run now; the watch is ready once its first listing
        showed them, so nothing that happens next is missed."""
        self.created: list[tuple[str, str]] = []
        self.deleted: list[tuple[str, str]] = []
        template = '{.metadata.uid} {.metadata.name} {.metadata.deletionTimestamp}{"\\n"}'
        self._proc = subprocess.Popen(
            ["kubectl", "get", "pods", "-l", SELECTOR, "-w", "-o", f"jsonpath={template}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=w.cluster.env(),
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        try:
            wait_until(lambda: len(self.created) >= existing, timeout=30, what="its listing")
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            parts = line.split()
            if len(parts) < 2:
                continue
            entry = (parts[0], parts[1])
            if entry not in self.created:
                self.created.append(entry)
            if len(parts) > 2 and entry not in self.deleted:
                self.deleted.append(entry)

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)

    def deleted_names(self, uids: set[str]) -> list[str]:
        return [name for uid, name in self.deleted if uid in uids]


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workloads]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("statefulsets") / "data"
    cluster: Cluster = start_cluster(data_dir, None)
    try:

        def node_ready() -> bool:
            out = cluster.kubectl("get", "nodes", "--no-headers", check=False).stdout
            return " Ready " in out

        wait_until(node_ready, timeout=120, what="a node Ready")
        yield Workloads(cluster, tmp_path_factory.mktemp("unused"))
    finally:
        cluster.kubectl("delete", "statefulsets", "--all", "--wait=false", check=False, timeout=60)
        cluster.stop()
        reap_cgroups(data_dir)
        remove_empty_cgroup_root(cgroup_root_of(DataDir(data_dir)))


def running(w: Workloads, count: int, image: str | None = None) -> dict[str, dict[str, Any]]:
    """The set's pods by name once ``count`` run (their process started, Ready), all of
    ``image`` if given."""

    def check() -> dict[str, dict[str, Any]] | None:
        pods = w.pods(SELECTOR)
        ready = {
            p["metadata"]["name"]: p
            for p in pods
            if p["status"].get("phase") == "Running"
            and (p["status"].get("containerStatuses") or [{}])[0].get("ready")
            and (image is None or p["spec"]["containers"][0]["image"] == image)
        }
        return ready if len(ready) == count == len(pods) else None

    found: dict[str, dict[str, Any]] = wait_until(
        check, timeout=180, what=f"{count} running pods of web"
    )
    return found


def status(w: Workloads) -> dict[str, Any]:
    return dict((w.get("statefulset", "web") or {}).get("status") or {})


def ready_since(pod: dict[str, Any]) -> float:
    for cond in pod["status"].get("conditions") or ():
        if cond["type"] == "Ready" and cond["status"] == "True":
            return parse_rfc3339(cond["lastTransitionTime"]).timestamp()
    raise AssertionError(f"{pod['metadata']['name']} is not ready")


def created_at(pod: dict[str, Any]) -> float:
    return parse_rfc3339(pod["metadata"]["creationTimestamp"]).timestamp()


def rollout_status(w: Workloads) -> str:
    return w.kubectl("rollout", "status", "statefulset/web", "--timeout=180s", timeout=210).stdout


def test_upstream_example_converges_in_order_each_pod_with_its_bound_claim(
    w: Workloads,
) -> None:
    watch = PodWatch(w)
    try:
        w.kubectl("apply", "-f", "-", input=WEB)
        pods = running(w, 3)
        rollout_status(w)
    finally:
        watch.close()
    assert [name for _, name in watch.created] == ["web-0", "web-1", "web-2"]
    for lower, upper in (("web-0", "web-1"), ("web-1", "web-2")):
        # each made once the one before it was Ready (time stamps in whole seconds)
        assert created_at(pods[upper]) >= ready_since(pods[lower]), (lower, upper)
    for i in range(3):
        pod = pods[f"web-{i}"]
        assert pod["spec"]["hostname"] == f"web-{i}" and pod["spec"]["subdomain"] == "nginx"
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["www"]["persistentVolumeClaim"]["claimName"] == f"www-web-{i}"
        claim = w.get("pvc", f"www-web-{i}")
        assert claim is not None and claim["status"]["phase"] == "Bound"
        assert claim["metadata"]["labels"] == {"app": "nginx"}
    st = status(w)
    assert st["replicas"] == st["readyReplicas"] == st["availableReplicas"] == 3
    assert st["currentRevision"] == st["updateRevision"]
    events = w.kubectl("get", "events", "--field-selector", "involvedObject.name=web").stdout
    assert "create Pod web-2 in StatefulSet web successful" in events
    assert "create Claim www-web-2 Pod web-2 in StatefulSet web success" in events


def test_set_resources_resizes_the_same_pods_in_place(w: Workloads) -> None:
    before = running(w, 3)
    pids = {p["metadata"]["uid"]: pid_of(p) for p in before.values()}
    old_revision = status(w)["updateRevision"]
    watch = PodWatch(w, existing=3)
    try:
        w.kubectl("set", "resources", "statefulset/web", "--limits=memory=128Mi")
        want = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}
        after = at_size(w, SELECTOR, want, 3)
    finally:
        watch.close()
    assert {p["metadata"]["uid"]: pid_of(p) for p in after} == pids, "pods were replaced"
    assert watch.deleted == [], "a pod was deleted"
    for pod in after:
        assert restarts(pod) == 0
        assert pod["spec"]["containers"][0]["resources"] == want
        assert actual(pod) == want
        assert cgroup_memory_limit(pid_of(pod)) == 128 * 2**20

    def moved() -> dict[str, Any] | None:
        st = status(w)
        done = st.get("updateRevision") != old_revision
        return st if done and st.get("currentRevision") == st["updateRevision"] else None

    st = wait_until(moved, what="every pod at the new revision")
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in after} <= {
        old_revision,
        st["updateRevision"],
    }
    pods = running(w, 3)
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods.values()} == {
        st["updateRevision"]
    }


def test_an_image_change_rolls_out_from_the_top_and_the_partition_holds(w: Workloads) -> None:
    before = running(w, 3)
    uids = {p["metadata"]["uid"] for p in before.values()}
    watch = PodWatch(w, existing=3)
    try:
        patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}}
        w.kubectl("patch", "statefulset", "web", "-p", json.dumps(patch))
        w.kubectl("set", "image", "statefulset/web", "nginx=registry.k8s.io/nginx-slim:0.8")
        out = rollout_status(w)
        assert "partitioned roll out complete: 2 new pods have been updated" in out, out
        held = running(w, 3)
        assert held["web-0"]["metadata"]["uid"] == before["web-0"]["metadata"]["uid"]
        assert held["web-0"]["spec"]["containers"][0]["image"].endswith("nginx-slim:0.7")
        assert watch.deleted_names(uids) == ["web-2", "web-1"]
        patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
        w.kubectl("patch", "statefulset", "web", "-p", json.dumps(patch))
        out = rollout_status(w)
        running(w, 3, image="registry.k8s.io/nginx-slim:0.8")
    finally:
        watch.close()
    assert watch.deleted_names(uids) == ["web-2", "web-1", "web-0"]
    st = status(w)
    assert st["currentRevision"] == st["updateRevision"] and st["updatedReplicas"] == 3

    history = w.kubectl("rollout", "history", "statefulset/web").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == [
        "1",
        "2",
        "3",
    ], history
    rolled = {p["metadata"]["uid"] for p in running(w, 3).values()}
    watch = PodWatch(w, existing=3)
    try:
        w.kubectl("rollout", "undo", "statefulset/web")
        rollout_status(w)
        undone = running(w, 3, image="registry.k8s.io/nginx-slim:0.7")
    finally:
        watch.close()
    assert watch.deleted_names(rolled) == ["web-2", "web-1", "web-0"]
    limits = {"memory": "128Mi"}  # the undo went back to the resized template
    assert all(p["spec"]["containers"][0]["resources"]["limits"] == limits for p in undone.values())


def test_scale_down_removes_web_2_then_web_1_and_keeps_their_claims(w: Workloads) -> None:
    before = running(w, 3)
    uids = {p["metadata"]["uid"] for p in before.values()}
    watch = PodWatch(w, existing=3)
    try:
        w.kubectl("scale", "statefulset", "web", "--replicas=1")
        running(w, 1)
    finally:
        watch.close()
    assert watch.deleted_names(uids) == ["web-2", "web-1"]
    claims = json.loads(w.kubectl("get", "pvc", "-o", "json").stdout)["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["www-web-0", "www-web-1", "www-web-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims)


def test_deleting_the_set_deletes_its_pods(w: Workloads) -> None:
    running(w, 1)
    w.kubectl("delete", "statefulset", "web", "--wait=true", timeout=90)
    wait_until(lambda: w.items("pods", SELECTOR) == [], timeout=90, what="web's pods deleted")
    w.kubectl("delete", "service", "nginx")
