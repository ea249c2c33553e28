"""Server-side apply end to end: real kubectl and the official Python client against a real
`inplace up` (the session's shared cluster; everything here lives in its own namespace)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import dynamic as k8s_dynamic
from kubernetes.client.exceptions import ApiException

from tests.conftest import Cluster

NS = "ssa"


def manifest(name: str, replicas: int, image: str = "busybox") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "image": image,
                                "command": ["sleep", "3600"],
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                            }
                        ]
                    },
                },
            },
        }
    )


@pytest.fixture(scope="module")
def ssa(cluster: Cluster) -> Iterator[Cluster]:
    cluster.kubectl("create", "namespace", NS)
    try:
        yield cluster
    finally:
        # Gone before the next module runs: nothing of ours is left on the shared node.
        cluster.kubectl(
            "delete", "namespace", NS, "--wait=true", "--timeout=90s", check=False, timeout=120
        )


def get(cluster: Cluster, kind: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", kind, name, "-n", NS, "-o", "json", "--show-managed-fields")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    return next(e for e in obj["metadata"]["managedFields"] if e["manager"] == manager)


def test_kubectl_apply_server_side_conflicts_and_force(ssa: Cluster) -> None:
    applied = ssa.kubectl("apply", "--server-side", "-f", "-", input=manifest("web", 2))
    assert "deployment.apps/web serverside-applied" in applied.stdout
    shown = ssa.kubectl("get", "deployment", "web", "-n", NS, "-o", "yaml", "--show-managed-fields")
    assert "managedFields:" in shown.stdout
    assert "manager: kubectl" in shown.stdout and "operation: Apply" in shown.stdout
    assert 'k:{"name":"main"}:' in shown.stdout
    plain = ssa.kubectl("get", "deployment", "web", "-n", NS, "-o", "yaml")
    assert "managedFields" not in plain.stdout  # kubectl hides them unless asked
    fields = entry(get(ssa, "deployment", "web"), "kubectl")["fieldsV1"]
    assert fields["f:spec"]["f:replicas"] == {}
    assert fields["f:metadata"] == {"f:labels": {"f:app": {}}}

    scale = manifest("web", 3)
    refused = ssa.kubectl(
        "apply", "--server-side", "--field-manager=autoscaler", "-f", "-", input=scale, check=False
    )
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in refused.stderr
    assert get(ssa, "deployment", "web")["spec"]["replicas"] == 2

    forced = ssa.kubectl(
        "apply",
        "--server-side",
        "--field-manager=autoscaler",
        "--force-conflicts",
        "-f",
        "-",
        input=scale,
    )
    assert "serverside-applied" in forced.stdout
    live = get(ssa, "deployment", "web")
    assert live["spec"]["replicas"] == 3
    assert "f:replicas" in entry(live, "autoscaler")["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entry(live, "kubectl")["fieldsV1"]["f:spec"]

    # Applying the same manifest again changes nothing (the Deployment controller may still
    # write status, so compare the spec's generation and the managers' fields, not the
    # resourceVersion); a change shows in a server-side diff.
    same = manifest("web", 3)
    ssa.kubectl("apply", "--server-side", "--field-manager=autoscaler", "-f", "-", input=same)
    again = get(ssa, "deployment", "web")
    assert again["metadata"]["generation"] == live["metadata"]["generation"]
    assert entry(again, "autoscaler") == entry(live, "autoscaler")
    diff = ssa.kubectl(
        "diff",
        "--server-side",
        "--field-manager=autoscaler",
        "-f",
        "-",
        input=manifest("web", 4),
        check=False,
    )
    assert diff.returncode == 1, diff.stderr
    assert "-  replicas: 3" in diff.stdout and "+  replicas: 4" in diff.stdout


def test_kubectl_server_side_apply_takes_over_from_client_side_apply(ssa: Cluster) -> None:
    ssa.kubectl("apply", "-f", "-", input=manifest("csa", 2))
    created = get(ssa, "deployment", "csa")
    assert entry(created, "kubectl-client-side-apply")["operation"] == "Update"

    # Another manager changing what client-side apply set conflicts with it, by name.
    other = ssa.kubectl(
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        "-",
        input=manifest("csa", 5),
        check=False,
    )
    assert other.returncode == 1
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
        "apps/v1: .spec.replicas"
    ) in other.stderr

    # kubectl itself upgrades: the fields its last-applied annotation lists are its own.
    upgraded = ssa.kubectl("apply", "--server-side", "-f", "-", input=manifest("csa", 4))
    assert "serverside-applied" in upgraded.stdout
    live = get(ssa, "deployment", "csa")
    assert live["spec"]["replicas"] == 4
    assert "f:replicas" in entry(live, "kubectl")["fieldsV1"]["f:spec"]
    last = live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(last)["spec"]["replicas"] == 4


def test_unknown_field_under_strict_is_422_naming_it(ssa: Cluster) -> None:
    bad = yaml.safe_load(manifest("strict", 1))
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    result = ssa.kubectl(
        "apply",
        "--server-side",
        "--validate=strict",
        "-f",
        "-",
        input=yaml.safe_dump(bad),
        check=False,
    )
    assert result.returncode == 1
    assert (
        'spec.template.spec.containers[name="main"].imagePullPolicyy: field not declared in schema'
    ) in result.stderr
    assert ssa.kubectl("get", "deployment", "strict", "-n", NS, check=False).returncode == 1


def test_official_python_client_server_side_apply(ssa: Cluster) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(ssa.kubeconfig))
    try:
        dynamic = k8s_dynamic.DynamicClient(api_client)
        pods = dynamic.resources.get(api_version="v1", kind="Pod")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "py", "namespace": NS, "labels": {"by": "python"}},
            "spec": {
                "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]
            },
        }
        created = pods.server_side_apply(body=pod, namespace=NS, field_manager="python-app")
        assert created.metadata.labels["by"] == "python"
        managed = {e.manager: e for e in created.metadata.managedFields}
        assert managed["python-app"].operation == "Apply"

        core = k8s.CoreV1Api(api_client)
        relabel = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "py", "labels": {"by": "someone-else"}},
        }
        with pytest.raises(ApiException) as caught:
            core.patch_namespaced_pod(
                "py",
                NS,
                relabel,
                field_manager="other-app",
                _content_type="application/apply-patch+yaml",
            )
        assert caught.value.status == 409
        assert json.loads(caught.value.body)["message"] == (
            'Apply failed with 1 conflict: conflict with "python-app": .metadata.labels.by'
        )
        patched = core.patch_namespaced_pod(
            "py",
            NS,
            relabel,
            field_manager="other-app",
            force=True,
            _content_type="application/apply-patch+yaml",
        )
        assert patched.metadata.labels["by"] == "someone-else"
        owners = {e.manager: e.fields_v1 for e in patched.metadata.managed_fields}
        assert owners["other-app"] == {"f:metadata": {"f:labels": {"f:by": {}}}}
    finally:
        api_client.close()
