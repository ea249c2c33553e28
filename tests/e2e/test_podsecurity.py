"""Pod Security Admission with real kubectl against a real `inplace up`: a restricted namespace
refuses a privileged pod with upstream's message, a baseline one warns."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Cluster

pytestmark = pytest.mark.e2e

PRIVILEGED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "priv"},
    "spec": {
        # About admission only: no node has this label, so nothing runs.
        "nodeSelector": {"inplace.dev/e2e": "admission-only"},
        "containers": [
            {
                "name": "app",
                "image": "busybox",
                "command": ["sleep", "3600"],
                "securityContext": {"privileged": True},
            }
        ],
    },
}


def test_a_restricted_namespace_refuses_a_privileged_pod(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "psa-restricted")
    cluster.kubectl(
        "label", "namespace", "psa-restricted", "pod-security.kubernetes.io/enforce=restricted"
    )
    result = cluster.kubectl(
        "apply", "-n", "psa-restricted", "-f", "-", input=json.dumps(PRIVILEGED_POD), check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "priv" is forbidden: '
        'violates PodSecurity "restricted:latest": privileged (container "app" must not set '
        'securityContext.privileged=true), allowPrivilegeEscalation != false (container "app" '
        "must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities "
        '(container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != '
        'true (pod or container "app" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")'
    )
    listed = cluster.kubectl("get", "pods", "-n", "psa-restricted", "-o", "name")
    assert listed.stdout == ""


def test_a_baseline_namespace_warns(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "psa-baseline")
    cluster.kubectl(
        "label", "namespace", "psa-baseline", "pod-security.kubernetes.io/warn=baseline"
    )
    result = cluster.kubectl(
        "apply", "-n", "psa-baseline", "-f", "-", input=json.dumps(PRIVILEGED_POD)
    )
    assert result.stdout.strip() == "pod/priv created"
    assert result.stderr.strip() == (
        'Warning: would violate PodSecurity "baseline:latest": privileged (container "app" must '
        "not set securityContext.privileged=true)"
    )
    # Enforcing baseline now warns about the pod already there (and keeps it).
    labelled = cluster.kubectl(
        "label", "namespace", "psa-baseline", "pod-security.kubernetes.io/enforce=baseline"
    )
    assert labelled.stderr.strip().splitlines() == [
        'Warning: existing pods in namespace "psa-baseline" violate the new PodSecurity enforce '
        'level "baseline:latest"',
        "Warning: priv: privileged",
    ]
    assert (
        cluster.kubectl("get", "pod", "priv", "-n", "psa-baseline", "-o", "name").stdout.strip()
        == "pod/priv"
    )
