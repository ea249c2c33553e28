"""Real kubectl (v1.33) against a real `inplace up`: what a user types, and what they see."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import Cluster
from tests.e2e.manifests import EVERY_KIND
from tests.poll import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tour(cluster: Cluster) -> Cluster:
    """The manifest of every kind, applied once with kubectl's default validation."""
    result = cluster.kubectl("apply", "-f", "-", input=EVERY_KIND)
    assert "pod/worker created" in result.stdout
    assert "verticalpodautoscaler.autoscaling.k8s.io/sequence-vpa created" in result.stdout
    return cluster


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def test_apply_creates_every_kind_and_get_prints_upstream_columns(tour: Cluster) -> None:
    expected = {
        "pods": "NAME READY STATUS RESTARTS AGE",
        "deployments": "NAME READY UP-TO-DATE AVAILABLE AGE",
        "replicasets": "NAME DESIRED CURRENT READY AGE",
        "jobs": "NAME STATUS COMPLETIONS DURATION AGE",
        "pdb": "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
        "leases": "NAME HOLDER AGE",
        "vpa": "NAME MODE CPU MEM PROVIDED AGE",
        "configmaps": "NAME DATA AGE",
        "secrets": "NAME TYPE DATA AGE",
        "serviceaccounts": "NAME SECRETS AGE",
        "services": "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
        "endpoints": "NAME ENDPOINTS AGE",
        "endpointslices": "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
    }
    for resource, columns in expected.items():
        out = tour.kubectl("get", resource, "-n", "tour").stdout
        assert " ".join(header(out)) == columns, (resource, out)
    nodes = tour.kubectl("get", "nodes").stdout
    assert header(nodes) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "static-node" in nodes
    classes = tour.kubectl("get", "priorityclasses").stdout
    assert "batch-high" in classes and "1000" in classes


def test_get_wide_yaml_label_and_field_selectors(tour: Cluster) -> None:
    wide = tour.kubectl("get", "pods", "-n", "tour", "-o", "wide").stdout
    assert header(wide)[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    as_yaml = yaml.safe_load(
        tour.kubectl("get", "pod", "worker", "-n", "tour", "-o", "yaml").stdout
    )
    assert as_yaml["spec"]["priority"] == 1000
    assert as_yaml["status"]["qosClass"] == "Burstable"
    assert as_yaml["metadata"]["generation"] == 1
    by_label = tour.kubectl("get", "pods", "-n", "tour", "-l", "app=worker", "-o", "name").stdout
    assert by_label.split() == ["pod/worker"]
    assert tour.kubectl("get", "pods", "-n", "tour", "-l", "app=nothing", "-o", "name").stdout == ""
    by_field = tour.kubectl(
        "get", "pods", "-n", "tour", "--field-selector", "status.phase=Pending", "-o", "name"
    ).stdout
    assert "pod/worker" in by_field.split()
    none = tour.kubectl(
        "get", "pods", "-n", "tour", "--field-selector", "spec.nodeName=nowhere", "-o", "name"
    ).stdout
    assert none == ""


def test_describe_shows_events(tour: Cluster) -> None:
    uid = tour.kubectl(
        "get", "pod", "worker", "-n", "tour", "-o", "jsonpath={.metadata.uid}"
    ).stdout
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "worker.described", "namespace": "tour"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "tour",
            "name": "worker",
            "uid": uid,
            "apiVersion": "v1",
        },
        "reason": "Described",
        "message": "an event about this very pod",
        "type": "Normal",
        "source": {"component": "e2e"},
        "count": 1,
    }
    tour.kubectl("create", "-f", "-", input=json.dumps(event))
    out = tour.kubectl("describe", "pod", "worker", "-n", "tour").stdout
    events = out.split("Events:", 1)[1]
    assert "Described" in events and "an event about this very pod" in events, out


def test_three_patch_types(tour: Cluster) -> None:
    tour.kubectl(
        "patch",
        "lease",
        "holder",
        "-n",
        "tour",
        "-p",
        '{"metadata":{"labels":{"patched":"strategic"}}}',
    )
    tour.kubectl(
        "patch",
        "lease",
        "holder",
        "-n",
        "tour",
        "--type",
        "merge",
        "-p",
        '{"spec":{"holderIdentity":"merged"}}',
    )
    tour.kubectl(
        "patch",
        "lease",
        "holder",
        "-n",
        "tour",
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/spec/leaseDurationSeconds","value":15}]',
    )
    lease = json.loads(tour.kubectl("get", "lease", "holder", "-n", "tour", "-o", "json").stdout)
    assert lease["metadata"]["labels"]["patched"] == "strategic"
    assert lease["spec"]["holderIdentity"] == "merged"
    assert lease["spec"]["leaseDurationSeconds"] == 15


def test_patch_resize_subresource_bumps_generation(tour: Cluster) -> None:
    before = json.loads(tour.kubectl("get", "pod", "worker", "-n", "tour", "-o", "json").stdout)
    tour.kubectl(
        "patch",
        "pod",
        "worker",
        "-n",
        "tour",
        "--subresource",
        "resize",
        "-p",
        '{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"400m"},'
        '"limits":{"cpu":"800m"}}}]}}',
    )
    after = json.loads(tour.kubectl("get", "pod", "worker", "-n", "tour", "-o", "json").stdout)
    resources = after["spec"]["containers"][0]["resources"]
    assert resources["requests"]["cpu"] == "400m"
    assert resources["limits"]["cpu"] == "800m"
    assert resources["limits"]["memory"] == "128Mi"
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1


def test_resize_takes_resources_only_and_rejects_in_upstreams_words(tour: Cluster) -> None:
    image = tour.kubectl(
        "patch",
        "pod",
        "worker",
        "-n",
        "tour",
        "--subresource",
        "resize",
        "-p",
        '{"spec":{"containers":[{"name":"main","image":"other"}]}}',
        check=False,
    )
    # Upstream's resize strategy ignores everything but resources and resize policies.
    assert image.returncode == 0, image.stderr
    assert "pod/worker patched (no change)" in image.stdout
    pod = json.loads(tour.kubectl("get", "pod", "worker", "-n", "tour", "-o", "json").stdout)
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    # Requests equal to the limits: the Burstable pod would become Guaranteed.
    same = {"spec": {"containers": [{"name": "main", "resources": {"requests": limits}}]}}
    qos = tour.kubectl(
        "patch",
        "pod",
        "worker",
        "-n",
        "tour",
        "--subresource",
        "resize",
        "-p",
        json.dumps(same),
        check=False,
    )
    assert qos.returncode != 0
    assert "Pod QOS Class may not change as a result of resizing" in qos.stderr, qos.stderr


def test_get_watch_receives_a_change(tour: Cluster) -> None:
    watch = subprocess.Popen(
        [
            "kubectl",
            "get",
            "lease",
            "holder",
            "-n",
            "tour",
            "-w",
            "-o",
            'jsonpath={.spec.holderIdentity}{"\\n"}',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=tour.env(),
    )
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline().strip()
        assert first
        tour.kubectl(
            "patch",
            "lease",
            "holder",
            "-n",
            "tour",
            "--type",
            "merge",
            "-p",
            '{"spec":{"holderIdentity":"watched"}}',
        )
        seen = [watch.stdout.readline().strip() for _ in range(1)]
        assert seen == ["watched"]
    finally:
        watch.kill()
        watch.wait()


def test_delete_with_wait(tour: Cluster) -> None:
    tour.kubectl("create", "namespace", "doomed")  # kubectl sends this one as protobuf
    tour.kubectl(
        "apply",
        "-n",
        "doomed",
        "-f",
        "-",
        input="""\
apiVersion: v1
kind: Pod
metadata: {name: short}
spec:
  containers: [{name: c, image: busybox, command: ["true"]}]
""",
    )
    out = tour.kubectl("delete", "pod", "short", "-n", "doomed", "--wait=true", timeout=60)
    assert 'pod "short" deleted' in out.stdout
    gone = tour.kubectl("get", "pod", "short", "-n", "doomed", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    tour.kubectl("delete", "namespace", "doomed", "--wait=true", timeout=60)
    assert tour.kubectl("get", "namespace", "doomed", check=False).returncode != 0


def test_unknown_field_is_rejected_by_strict_validation(tour: Cluster) -> None:
    bad = tour.kubectl(
        "apply",
        "-f",
        "-",
        check=False,
        input="""\
apiVersion: v1
kind: Pod
metadata: {name: typo, namespace: tour}
spec:
  containers: [{name: c, image: busybox, imagePullPolicyy: Always}]
""",
    )
    assert bad.returncode != 0
    assert 'unknown field "spec.containers[0].imagePullPolicyy"' in bad.stderr


def test_explain_uses_the_served_schema(tour: Cluster) -> None:
    out = tour.kubectl("explain", "pod.spec.containers.resizePolicy").stdout
    assert "resourceName" in out and "restartPolicy" in out


def test_bad_quantity_is_422_naming_the_field(tour: Cluster) -> None:
    bad = tour.kubectl(
        "apply",
        "-f",
        "-",
        check=False,
        input="""\
apiVersion: v1
kind: Pod
metadata: {name: bad-quantity, namespace: tour}
spec:
  containers:
  - {name: c, image: busybox, resources: {limits: {memory: 12ZZ}}}
""",
    )
    assert bad.returncode != 0
    assert "spec.containers[0].resources.limits[memory]" in bad.stderr, bad.stderr


#: What EVERY_KIND created (the node agents' own Leases come and go on their own schedule).
MANIFEST_OBJECTS = (
    "get",
    "pods,deployments,replicasets,jobs,pdb,vpa,vpacheckpoint,leases,cm,secrets,sa,svc,ep,"
    "endpointslices,pvc",
    "-n",
    "tour",
    "-o",
    "name",
)


def test_restart_keeps_every_object(tmp_path: Path) -> None:
    from tests.conftest import start_cluster

    first = start_cluster(tmp_path / "data")
    try:
        first.kubectl("apply", "-f", "-", input=EVERY_KIND)
        before = first.kubectl(*MANIFEST_OBJECTS)
        first.stop(9)  # SIGKILL the supervisor: its API server dies with it
    finally:
        first.stop()
    deadline = time.monotonic() + 30
    second = None
    while second is None:
        try:
            second = start_cluster(tmp_path / "data", first.port)
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    try:
        after = second.kubectl(*MANIFEST_OBJECTS)
        # Everything there before is still there; the controllers may have added pods and
        # replica sets for the workloads since.
        assert set(before.stdout.split()) <= set(after.stdout.split())
        assert {"pod/worker", "deployment.apps/web", "replicaset.apps/cache"} <= set(
            after.stdout.split()
        )
    finally:
        second.stop()


def test_imperative_creates_sent_as_protobuf(tour: Cluster) -> None:
    """kubectl's typed clients send protobuf bodies; the server decodes them."""
    tour.kubectl(
        "create", "deployment", "imperative", "-n", "tour", "--image=nginx", "--replicas=0"
    )
    tour.kubectl("create", "job", "once", "-n", "tour", "--image=busybox", "--", "true")
    tour.kubectl("create", "priorityclass", "imperative-low", "--value=10")
    tour.kubectl(
        "create",
        "poddisruptionbudget",
        "imperative",
        "-n",
        "tour",
        "--selector=app=imperative",
        "--min-available=1",
    )
    deployment = json.loads(
        tour.kubectl("get", "deployment", "imperative", "-n", "tour", "-o", "json").stdout
    )
    assert deployment["spec"]["replicas"] == 0
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
    job = json.loads(tour.kubectl("get", "job", "once", "-n", "tour", "-o", "json").stdout)
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["true"]
    assert "imperative-low" in tour.kubectl("get", "priorityclasses", "-o", "name").stdout


def test_a_kind_the_server_does_not_serve_is_no_match(tour: Cluster) -> None:
    """kubectl validates a kind it finds in no /openapi/v3 document against /openapi/v2 (which
    has no model for it), and then says what upstream's users see."""
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n"
    applied = tour.kubectl("apply", "-f", "-", input=widget, check=False)
    assert applied.returncode == 1
    assert 'no matches for kind "Widget" in version "example.com/v1"' in applied.stderr
    assert "openapi" not in applied.stderr, applied.stderr
    listed = tour.kubectl("get", "widgets", check=False)
    assert listed.returncode == 1
    assert 'the server doesn\'t have a resource type "widgets"' in listed.stderr


def test_explain_reads_openapi_v2(tour: Cluster) -> None:
    out = tour.kubectl(
        "explain", "pods.spec.containers.resources", "--output=plaintext-openapiv2"
    ).stdout
    assert "ResourceRequirements describes the compute resource requirements." in out
    assert "limits\t<map[string]string>" in out


def test_a_body_over_the_limit_is_413(tour: Cluster) -> None:
    huge = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "huge", "namespace": "tour", "annotations": {"blob": "x" * (5 << 20)}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    created = tour.kubectl("create", "-f", "-", input=json.dumps(huge), check=False)
    assert created.returncode == 1
    assert (
        'Error from server (RequestEntityTooLarge): error when creating "STDIN": '
        "Request entity too large: limit is 3145728"
    ) in created.stderr
    assert "NotFound" in tour.kubectl("get", "pod", "huge", "-n", "tour", check=False).stderr


def diff_manifest(label: str | None = None) -> str:
    """EVERY_KIND in a namespace (and cluster-scoped names) of its own, with nothing that
    runs: what `kubectl diff` sees stays put once the controllers have had their say."""
    text = EVERY_KIND.replace("tour", "diffing").replace("static-node", "diffing-node")
    objects = [o for o in yaml.safe_load_all(text) if o]
    for obj in objects:
        if obj["kind"] == "PriorityClass":  # the pod keeps the tour's (admission needs one)
            obj["metadata"]["name"] = "diffing-high"
        if obj["kind"] in ("Deployment", "ReplicaSet"):
            obj["spec"]["replicas"] = 0
        if obj["kind"] == "Job":
            obj["spec"]["suspend"] = True
        if label:
            obj["metadata"].setdefault("labels", {})["diff"] = label
    return yaml.safe_dump_all(objects)


def test_diff_shows_changes_of_every_kind_and_writes_nothing(tour: Cluster) -> None:
    manifest = diff_manifest()
    kinds = len([o for o in yaml.safe_load_all(manifest) if o])
    try:
        # As upstream, a dry-run create needs its namespace to exist.
        tour.kubectl("create", "namespace", "diffing")
        new = tour.kubectl("diff", "-f", "-", input=manifest, check=False)
        assert new.returncode == 1, new.stderr
        assert new.stdout.count("diff -u -N ") == kinds
        tour.kubectl("apply", "-f", "-", input=manifest)
        # Controllers write status once after creation; after that nothing changes.
        wait_until(
            lambda: tour.kubectl("diff", "-f", "-", input=manifest, check=False).returncode == 0,
            what="kubectl diff of the applied manifest exits 0",
        )
        changed = tour.kubectl("diff", "-f", "-", input=diff_manifest("changed"), check=False)
        assert changed.returncode == 1, changed.stderr
        assert changed.stdout.count("diff -u -N ") == kinds
        assert changed.stdout.count("+    diff: changed") == kinds, changed.stdout
        assert "-  resourceVersion" not in changed.stdout
        live = json.loads(tour.kubectl("get", "-f", "-", "-o", "json", input=manifest).stdout)
        assert len(live["items"]) == kinds
        assert all("diff" not in (o["metadata"].get("labels") or {}) for o in live["items"])
    finally:
        tour.kubectl(
            "delete", "-f", "-", "--wait=true", "--ignore-not-found", input=manifest, timeout=90
        )
