"""``scripts/upstream up --operator``: inplace's operator installed from its Helm chart by the
``helm`` built from its Go module, beside the real control plane, with nothing but the chart's
ServiceAccount to act as. Its Deployment is Available with two pods, each a real ``inplace
operator`` process on the host with its own identity from the downward API; one holds the
Lease and wrote the webhooks kube-apiserver now calls, so a resources-only change of a
Deployment resizes its pod in place; ``helm uninstall`` takes the release and its processes
away.

The bed is started as on a machine whose virtual environment lives under ``/tmp``, where the
chart's scratch volume goes by default: the operator's pods run that interpreter on the host's
root, so the bed must mount the volume elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from testbed.build import BuildError, build
from testbed.chart import NAMESPACE, RELEASE, uninstall
from testbed.cluster import ControlPlane
from tests.poll import wait_until

from .conftest import REPO, Bed, down, pid_of, wait_running

DEPLOYMENT = "inplace"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:inplace"


@pytest.fixture(scope="module")
def python_under_tmp() -> Iterator[Path]:
    """The interpreter of a throw-away virtual environment under ``/tmp`` that imports what this
    one does (a ``.pth`` adds this interpreter's site-packages, with their own ``.pth`` files:
    an editable install of inplace too), so nothing is downloaded and it works from a venv as
    well as from a base installation."""
    directory = Path(tempfile.mkdtemp(prefix="inplace-venv-", dir="/tmp"))
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(directory)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        inherited = site.getsitepackages()
        if site.ENABLE_USER_SITE:
            inherited.append(site.getusersitepackages())
        (directory / "lib" / version / "site-packages" / "inherited.pth").write_text(
            "import site; " + "; ".join(f"site.addsitedir({path!r})" for path in inherited) + "\n"
        )
        yield directory / "bin" / "python"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, python_under_tmp: Path) -> Iterator[Bed]:
    """Two inplace nodes under the real control plane, the operator installed with Helm: all of
    it started by ``scripts/upstream up --operator`` run with the interpreter under ``/tmp``."""
    directory = tmp_path_factory.mktemp("upstream-operator")
    try:
        build(log=False)
    except BuildError as exc:
        pytest.fail(f"cannot build the upstream control plane and helm: {exc}")
    argv = [str(python_under_tmp), "-m", "testbed", "up", str(directory), "--nodes", "2"]
    argv += ["--node-cpu", "2", "--node-memory", "2Gi", "--operator"]
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO / "upstream")},
    )
    try:
        if out.returncode != 0:
            pytest.fail(f"{' '.join(argv)} failed:\n{out.stdout}{out.stderr}")
        yield Bed(ControlPlane.load(directory.resolve()))
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


def operator_pods(bed: Bed) -> list[dict[str, Any]]:
    out = bed.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json")
    return list(json.loads(out.stdout)["items"])


def test_the_deployment_is_available_with_two_operator_processes(
    bed: Bed, python_under_tmp: Path
) -> None:
    assert bed.plane.operator["release"] == RELEASE
    deployment = bed.get("deployment", DEPLOYMENT, NAMESPACE)
    available = [c for c in deployment["status"]["conditions"] if c["type"] == "Available"]
    assert available[0]["status"] == "True"
    assert deployment["status"]["readyReplicas"] == 2
    pods = operator_pods(bed)
    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["serviceAccountName"] == "inplace"
        process = psutil.Process(pid_of(pod, "operator"))
        argv = process.cmdline()
        assert argv[:4] == [str(python_under_tmp), "-m", "inplace", "operator"]
        # the scratch volume, the operator's TMPDIR, is mounted where it hides no part of that
        container = pod["spec"]["containers"][0]
        scratch = container["volumeMounts"][0]["mountPath"]
        assert {"name": "TMPDIR", "value": scratch} in container["env"]
        assert not str(python_under_tmp).startswith(scratch.rstrip("/") + "/")
        # the downward API's values, expanded in the arguments as kubelet expands them
        assert f"--identity={pod['metadata']['name']}" in argv
        assert f"--namespace={NAMESPACE}" in argv
        assert f"--webhook-url={bed.plane.operator['webhook_url']}" in argv


def test_one_replica_holds_the_lease_and_wrote_the_webhooks(bed: Bed) -> None:
    names = {pod["metadata"]["name"] for pod in operator_pods(bed)}

    def holder() -> str | None:
        out = bed.kubectl("get", "lease", "inplace", "-n", NAMESPACE, "-o", "json", check=False)
        return json.loads(out.stdout)["spec"].get("holderIdentity") if out.returncode == 0 else None

    assert wait_until(holder, timeout=60, what="a Lease holder") in names

    def webhooks() -> list[dict[str, Any]] | None:
        return bed.get("mutatingwebhookconfiguration", "inplace", "").get("webhooks")

    hooks = wait_until(webhooks, timeout=60, what="the leader's webhooks")
    assert hooks[0]["clientConfig"]["url"] == bed.plane.operator["webhook_url"]
    assert hooks[0]["clientConfig"]["caBundle"]
    # Helm made the object (uninstall removes it); the operator wrote its webhooks
    labels = bed.get("mutatingwebhookconfiguration", "inplace", "")["metadata"]["labels"]
    assert labels["app.kubernetes.io/managed-by"] == "Helm"


WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: main
          image: busybox
          command: [sleep, "3600"]
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {cpu: 200m, memory: 128Mi}
"""


def test_a_resources_change_is_resized_in_place_as_the_chart_allows(bed: Bed) -> None:
    """The whole way through with the chart's RBAC: webhook, release, pods/resize."""
    bed.apply(WEB)

    def pod_name() -> str | None:
        names = bed.kubectl("get", "pods", "-l", "app=web", "-o", "name").stdout.split()
        return names[0].removeprefix("pod/") if names else None

    name = wait_until(pod_name, timeout=60, what="web's pod")
    before = wait_running(bed, name)
    bed.kubectl(
        "set", "resources", "deployment/web", "-c", "main", "--requests=cpu=150m,memory=80Mi"
    )

    def resized() -> dict[str, Any] | None:
        now = bed.get("pod", name)
        requests = now["status"]["containerStatuses"][0].get("resources", {}).get("requests", {})
        return now if requests.get("cpu") == "150m" else None

    after = wait_until(resized, timeout=90, what="web's pod resized in place")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert pid_of(after) == pid_of(before)
    assert after["status"]["containerStatuses"][0]["restartCount"] == 0
    replicasets = bed.kubectl("get", "rs", "-l", "app=web", "-o", "name").stdout.split()
    assert len(replicasets) == 1
    web = bed.get("deployment", "web")
    assert not web["spec"].get("paused")  # given back
    bed.kubectl("delete", "deployment", "web")


def test_helm_uninstall_removes_the_release(bed: Bed) -> None:
    pids = [pid_of(pod, "operator") for pod in operator_pods(bed)]
    uninstall(build(log=False).path("helm"), bed.plane.kubeconfig)
    wait_until(lambda: not operator_pods(bed), timeout=90, what="the operator's pods gone")
    wait_until(
        lambda: not any(psutil.pid_exists(pid) for pid in pids),
        timeout=30,
        what="the operator's processes gone",
    )
    for kind, name, namespace in (
        ("deployment", DEPLOYMENT, NAMESPACE),
        ("serviceaccount", "inplace", NAMESPACE),
        ("role", "inplace", NAMESPACE),
        ("rolebinding", "inplace", NAMESPACE),
        ("service", "inplace-webhook", NAMESPACE),
        ("service", "inplace-metrics", NAMESPACE),
        ("poddisruptionbudget", "inplace", NAMESPACE),
        ("clusterrole", "inplace", ""),
        ("clusterrolebinding", "inplace", ""),
        ("mutatingwebhookconfiguration", "inplace", ""),
    ):
        wait_until(
            lambda k=kind, n=name, ns=namespace: (
                "NotFound" in bed.kubectl("get", k, n, "-n", ns or "default", check=False).stderr
            ),
            timeout=120,
            what=f"{kind} {name} gone",
        )
    # what the operator made itself stays in its namespace (docs/operator.md, Install)
    left = bed.kubectl(
        "get", "secrets,leases", "-n", NAMESPACE, "-o", "jsonpath={.items[*].metadata.name}"
    )
    assert sorted(left.stdout.split()) == ["inplace", "inplace-webhook-tls"]
