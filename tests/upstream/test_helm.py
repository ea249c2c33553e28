"""The operator's Helm chart (``deploy/helm/inplace``) with the ``helm`` built from its Go module:
it lints, renders what ``inplace operator`` needs, grants least privilege (checked by the real
RBAC authorizer of the upstream test bed), and ``deploy/manifests/inplace.yaml`` is its current
default render."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import inplace
from testbed.build import BuildError, build
from testbed.chart import (
    CHART,
    MANIFEST,
    NAMESPACE,
    ChartError,
    operator_paths,
    render,
    scratch_mount_path,
)

from .conftest import Bed, down, start_bed

ACCOUNT = f"system:serviceaccount:{NAMESPACE}:inplace"


@pytest.fixture(scope="module")
def helm() -> Path:
    try:
        return build(log=False).path("helm")
    except BuildError as exc:
        pytest.fail(f"cannot build helm: {exc}")


def objects(manifest: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The rendered objects by (kind, name)."""
    docs = [doc for doc in yaml.safe_load_all(manifest) if doc]
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def container(rendered: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    spec = rendered[("Deployment", "inplace")]["spec"]["template"]["spec"]
    return dict(spec["containers"][0])


def test_lint_passes(helm: Path) -> None:
    out = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout


def test_default_render_runs_the_operator_behind_a_service(helm: Path) -> None:
    rendered = objects(render(helm))
    assert set(rendered) == {
        ("ServiceAccount", "inplace"),
        ("ClusterRole", "inplace"),
        ("ClusterRoleBinding", "inplace"),
        ("Role", "inplace"),
        ("RoleBinding", "inplace"),
        ("Deployment", "inplace"),
        ("Service", "inplace-webhook"),
        ("Service", "inplace-metrics"),
        ("PodDisruptionBudget", "inplace"),
        ("MutatingWebhookConfiguration", "inplace"),
    }
    deployment = rendered[("Deployment", "inplace")]
    assert deployment["metadata"]["namespace"] == NAMESPACE
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "inplace"
    assert pod["securityContext"]["runAsNonRoot"] is True
    c = container(rendered)
    assert c["command"] == ["inplace"]
    assert c["args"] == [
        "operator",
        "--namespace=$(POD_NAMESPACE)",
        "--identity=$(POD_NAME)",
        "--lease-name=inplace",
        "--webhook-port=9443",
        "--webhook-service=inplace-webhook",
        "--webhook-configuration=inplace",
        "--secret=inplace-webhook-tls",
        f"--own-user={ACCOUNT}",
        "--metrics-port=8080",
        "--health-port=8081",
        "--log-level=INFO",
        "--log-format=json",
    ]
    assert c["env"] == [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "TMPDIR", "value": "/tmp"},
    ]
    # the only place it writes, the root being read-only
    assert c["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert pod["volumes"] == [
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}
    ]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"webhook": 9443, "metrics": 8080, "health": 8081}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    webhook = rendered[("Service", "inplace-webhook")]["spec"]
    assert webhook["ports"] == [
        {"name": "https", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]
    assert webhook["selector"] == deployment["spec"]["selector"]["matchLabels"]
    metrics = rendered[("Service", "inplace-metrics")]["spec"]
    assert metrics["ports"][0]["port"] == 8080
    budget = rendered[("PodDisruptionBudget", "inplace")]["spec"]
    assert budget["minAvailable"] == 1
    # Helm owns the configuration (uninstall removes it); the operator writes its webhooks
    assert "webhooks" not in rendered[("MutatingWebhookConfiguration", "inplace")]


def test_scratch_mount_path_moves_the_volume_and_tmpdir(helm: Path) -> None:
    rendered = objects(render(helm, "--set", "scratch.mountPath=/var/tmp"))
    c = container(rendered)
    assert c["volumeMounts"] == [{"name": "tmp", "mountPath": "/var/tmp"}]
    assert {"name": "TMPDIR", "value": "/var/tmp"} in c["env"]


def test_the_bed_mounts_the_scratch_volume_where_it_hides_nothing(tmp_path: Path) -> None:
    """On an agent's node the emptyDir covers the host's directory: the bed keeps the chart's
    /tmp unless what the operator's pods run lies beneath it (a virtual environment or a
    checkout under /tmp: "exec failed: … No such file or directory")."""
    assert scratch_mount_path(["/usr/bin/python3", "/tmpfiles", "/"]) == "/tmp"
    assert scratch_mount_path(["/tmp/venv/bin/python", "/opt/src"]) == "/var/tmp"
    assert scratch_mount_path(["/tmp/venv", "/var/tmp/checkout"]) == "/run/inplace-operator"
    # a path is held both as written and where its links lead
    link = tmp_path / "python"
    link.symlink_to("/var/tmp/elsewhere/python")
    assert scratch_mount_path([str(link)], ("/var/tmp", "/srv")) == "/srv"
    with pytest.raises(ChartError, match="would hide what its pods run"):
        scratch_mount_path(["/tmp/venv"], ("/tmp",))
    # what the pods run: this interpreter, its installation, inplace itself
    held = operator_paths()
    assert sys.executable in held and sys.prefix in held
    assert str(Path(inplace.__file__).parent) in held


def test_webhook_url_replaces_the_service(helm: Path) -> None:
    url = "https://127.0.0.1:9443/mutate"
    args = container(objects(render(helm, "--set", f"webhook.url={url}")))["args"]
    assert f"--webhook-url={url}" in args
    assert not any(a.startswith("--webhook-service") for a in args)


def test_values_become_flags(helm: Path) -> None:
    rendered = objects(
        render(
            helm,
            "--set",
            "excludeNamespaces={batch-jobs,legacy}",
            "--set",
            "vpa.enabled=true",
            "--set",
            "rescue.enabled=true",
            "--set",
            "metrics.port=0",
            "--set",
            "replicaCount=3",
        )
    )
    args = container(rendered)["args"]
    assert [a for a in args if a.startswith("--exclude-namespace")] == [
        "--exclude-namespace=batch-jobs",
        "--exclude-namespace=legacy",
    ]
    assert "--vpa" in args and "--vpa-recommender-name=inplace" in args
    assert "--rescue" in args
    assert "--metrics-port=0" in args
    assert ("Service", "inplace-metrics") not in rendered
    assert "metrics" not in {p["name"] for p in container(rendered)["ports"]}
    assert rendered[("Deployment", "inplace")]["spec"]["replicas"] == 3


def test_kinds_are_refused_until_the_operator_takes_them(helm: Path) -> None:
    with pytest.raises(Exception, match="has no --kinds flag yet"):
        render(helm, "--set", "kinds={Deployment}")


def test_cluster_role_grants_no_secrets_and_no_exec(helm: Path) -> None:
    for options in ((), ("--set", "webhook.url=https://127.0.0.1:9443/mutate")):
        rules = objects(render(helm, *options))[("ClusterRole", "inplace")]["rules"]
        granted = {(g, res) for r in rules for g in r["apiGroups"] for res in r["resources"]}
        assert ("", "secrets") not in granted
        assert ("", "pods/exec") not in granted
        assert not any("*" in r["verbs"] or "*" in r["resources"] for r in rules)
        assert ("", "pods/resize") in granted
    # the kubelet's API through the node proxy only when the autoscaler is asked to use it
    assert all("nodes/proxy" not in r["resources"] for r in rules)
    rules = objects(render(helm, "--set", "nodeProxy=true"))[("ClusterRole", "inplace")]["rules"]
    assert {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]} in rules
    role = objects(render(helm))[("Role", "inplace")]["rules"]
    named = [r for r in role if r["resources"] == ["secrets"] and "get" in r["verbs"]]
    assert named == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["inplace-webhook-tls"],
            "verbs": ["get", "update", "patch"],
        }
    ]


def test_manifest_is_the_current_default_render(helm: Path) -> None:
    assert MANIFEST.read_text() == render(helm), (
        "deploy/manifests/inplace.yaml is stale: run `scripts/upstream manifest`"
    )


# -- on the real API server's RBAC authorizer ---------------------------------------------


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """The control plane alone: the authorizer judges, no pod runs."""
    directory = tmp_path_factory.mktemp("upstream-helm")
    plane = start_bed(directory, nodes=0, node_cpu="2", node_memory="2Gi")
    try:
        yield Bed(plane)
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


def can_i(bed: Bed, *args: str) -> bool:
    out = bed.kubectl("auth", "can-i", *args, f"--as={ACCOUNT}", check=False)
    assert out.stdout.strip() in ("yes", "no"), out.stderr
    return out.returncode == 0


def allowed(bed: Bed, verb: str, group: str, resource: str, subresource: str = "") -> bool:
    """A SubjectAccessReview for a resource the bed does not serve (the VPA's CRDs,
    metrics.k8s.io), which `kubectl auth can-i` cannot name without discovery."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": ACCOUNT,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{NAMESPACE}",
                "system:authenticated",
            ],
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": subresource,
            },
        },
    }
    out = bed.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review))
    return bool(json.loads(out.stdout)["status"].get("allowed"))


def test_rbac_as_the_api_server_judges_it(bed: Bed, helm: Path) -> None:
    rbac = render(
        helm,
        "--show-only",
        "templates/serviceaccount.yaml",
        "--show-only",
        "templates/clusterrole.yaml",
        "--show-only",
        "templates/role.yaml",
    )
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(rbac) if doc)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"]
    bed.kubectl("create", "namespace", NAMESPACE)
    bed.apply(rbac)

    assert can_i(bed, "patch", "pods", "--subresource=resize", "-n", "default")
    assert can_i(bed, "create", "pods", "--subresource=eviction", "-n", "default")
    assert can_i(bed, "update", "deployments.apps", "-n", "default")
    assert can_i(bed, "patch", "statefulsets.apps", "--subresource=status", "-A")
    assert allowed(bed, "create", "autoscaling.k8s.io", "verticalpodautoscalercheckpoints")
    assert allowed(bed, "patch", "autoscaling.k8s.io", "verticalpodautoscalers", "status")
    assert not allowed(bed, "update", "autoscaling.k8s.io", "verticalpodautoscalers")
    assert allowed(bed, "list", "metrics.k8s.io", "pods")
    assert not can_i(bed, "get", "secrets", "-A")
    assert not can_i(bed, "create", "pods", "--subresource=exec", "-n", "default")
    assert not can_i(bed, "delete", "pods", "-n", "default")
    assert not can_i(bed, "update", "pods", "-n", "default")
    # its own Secret and Lease, by name, in its namespace only
    assert can_i(bed, "get", "secret/inplace-webhook-tls", "-n", NAMESPACE)
    assert can_i(bed, "update", "secret/inplace-webhook-tls", "-n", NAMESPACE)
    assert not can_i(bed, "get", "secret/another", "-n", NAMESPACE)
    assert not can_i(bed, "get", "secret/inplace-webhook-tls", "-n", "default")
    assert can_i(bed, "create", "secrets", "-n", NAMESPACE)  # create cannot be named
    assert can_i(bed, "update", "lease/inplace", "-n", NAMESPACE)
    assert not can_i(bed, "update", "lease/node-1", "-n", "kube-node-lease")
    # its own webhook configuration; no other webhook can be rewritten
    assert can_i(bed, "update", "mutatingwebhookconfiguration/inplace")
    assert not can_i(bed, "update", "mutatingwebhookconfiguration/another")
    assert not can_i(bed, "update", "validatingwebhookconfigurations")
