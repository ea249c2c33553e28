"""Pod Security Admission through the API: enforce refuses with upstream's message, warn
answers with `Warning` headers, workloads are warned about, namespace labels are checked, and
exemptions and defaults come from an AdmissionConfiguration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from inplace.apiserver.podsecurity import ConfigError, load_admission_config
from tests.conftest import InProcessServer

NAMESPACES = "/api/v1/namespaces"
MERGE = "application/merge-patch+json"


def privileged_pod(name: str = "priv") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"inplace.dev/e2e": "none"},
            "containers": [
                {
                    "name": "app",
                    "image": "busybox",
                    "command": ["sleep", "1d"],
                    "securityContext": {"privileged": True},
                }
            ],
        },
    }


def restricted_pod(name: str = "tight") -> dict[str, Any]:
    pod = privileged_pod(name)
    pod["spec"]["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    pod["spec"]["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    return pod


async def call(
    server: InProcessServer, method: str, path: str, body: Any = None, content_type: str = ""
) -> tuple[int, Any, list[str]]:
    headers = {**server.headers(), "Content-Type": content_type or "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, server.url + path, data=orjson.dumps(body), headers=headers
        ) as response,
    ):
        answer = await response.json(content_type=None)
        return response.status, answer, response.headers.getall("Warning", [])


async def namespace(server: InProcessServer, name: str, **labels: str) -> None:
    body = {
        "metadata": {
            "name": name,
            "labels": {f"pod-security.kubernetes.io/{k}": v for k, v in labels.items()},
        }
    }
    status, answer, _ = await call(server, "POST", NAMESPACES, body)
    assert status == 201, answer


async def test_a_restricted_namespace_refuses_a_privileged_pod(apiserver: InProcessServer) -> None:
    await namespace(apiserver, "locked", enforce="restricted")
    status, body, _ = await call(apiserver, "POST", f"{NAMESPACES}/locked/pods", privileged_pod())
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged '
        '(container "app" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "app" must set '
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
        '"app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod '
        'or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
        'container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    )
    assert body["details"] == {"name": "priv", "kind": "pods"}
    status, _, warnings = await call(
        apiserver, "POST", f"{NAMESPACES}/locked/pods", restricted_pod()
    )
    assert (status, warnings) == (201, [])


async def test_server_side_apply_is_admitted_as_any_write(apiserver: InProcessServer) -> None:
    """An apply that creates a pod passes the same admission as a POST (refused), and an
    applied workload is warned about."""
    await namespace(apiserver, "applied", enforce="restricted", warn="restricted")
    apply = "application/apply-patch+yaml"
    pods = f"{NAMESPACES}/applied/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", **privileged_pod()}
    status, body, _ = await call(apiserver, "PATCH", f"{pods}/priv?fieldManager=me", pod, apply)
    assert status == 403
    assert body["message"].startswith(
        'pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged '
    )
    status, _, _ = await call(apiserver, "GET", f"{pods}/priv")
    assert status == 404
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {**privileged_pod()["spec"], "restartPolicy": "Never"}}},
    }
    path = "/apis/batch/v1/namespaces/applied/jobs/j?fieldManager=me"
    status, _, warnings = await call(apiserver, "PATCH", path, job, apply)
    assert status == 201
    assert warnings and warnings[0].startswith(
        '299 - "would violate PodSecurity \\"restricted:latest\\": privileged'
    )


async def test_a_baseline_warn_namespace_warns(apiserver: InProcessServer) -> None:
    await namespace(apiserver, "watched", warn="baseline")
    status, _, warnings = await call(
        apiserver, "POST", f"{NAMESPACES}/watched/pods", privileged_pod()
    )
    assert status == 201
    assert warnings == [
        '299 - "would violate PodSecurity \\"baseline:latest\\": privileged (container \\"app\\" '
        'must not set securityContext.privileged=true)"'
    ]
    # An update that changes no image is not evaluated again.
    status, _, warnings = await call(
        apiserver,
        "PATCH",
        f"{NAMESPACES}/watched/pods/priv",
        {"metadata": {"labels": {"x": "y"}}},
        MERGE,
    )
    assert (status, warnings) == (200, [])


async def test_workloads_are_warned_about_never_refused(apiserver: InProcessServer) -> None:
    await namespace(apiserver, "strict", enforce="restricted", warn="restricted")
    template = privileged_pod()
    template["metadata"] = {"labels": {"app": "w"}}
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": template},
    }
    status, _, warnings = await call(
        apiserver, "POST", "/apis/apps/v1/namespaces/strict/deployments", deployment
    )
    assert status == 201
    assert len(warnings) == 1 and 'would violate PodSecurity \\"restricted:latest\\"' in warnings[0]


async def test_namespace_labels_must_parse_and_raising_enforce_reports_pods(
    apiserver: InProcessServer,
) -> None:
    body = {
        "metadata": {"name": "typo", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}
    }
    status, answer, _ = await call(apiserver, "POST", NAMESPACES, body)
    assert status == 422
    assert answer["message"] == (
        'Namespace "typo" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted'
    )
    await namespace(apiserver, "growing")
    for name in ("b-pod", "a-pod", "c-pod"):
        status, _, _ = await call(
            apiserver, "POST", f"{NAMESPACES}/growing/pods", privileged_pod(name)
        )
        assert status == 201
    status, _, warnings = await call(
        apiserver,
        "PATCH",
        f"{NAMESPACES}/growing",
        {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}},
        MERGE,
    )
    assert status == 200
    assert warnings == [
        '299 - "existing pods in namespace \\"growing\\" violate the new PodSecurity enforce '
        'level \\"baseline:latest\\""',
        '299 - "a-pod (and 2 other pods): privileged"',
    ]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_admission_configuration_file(tmp_path: Path) -> None:
    config = load_admission_config(
        write(
            tmp_path / "admission.yaml",
            """
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline, enforce-version: v1.30, warn: restricted}
    exemptions: {usernames: [ci-bot], namespaces: [kube-system], runtimeClasses: []}
""",
        )
    )
    assert str(config.defaults.enforce) == "baseline:v1.30"
    assert str(config.defaults.warn) == "restricted:latest"
    assert str(config.defaults.audit) == "privileged:latest"
    assert config.exempt_usernames == {"ci-bot"} and config.exempt_namespaces == {"kube-system"}
    with pytest.raises(ConfigError, match=r"defaults\.enforce: must be one of"):
        load_admission_config(
            write(
                tmp_path / "bad.yaml",
                "kind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n"
                "    kind: PodSecurityConfiguration\n    defaults: {enforce: strict}\n",
            )
        )


@pytest.mark.parametrize(
    ("plural", "group", "spec"),
    [
        (
            "statefulsets",
            "apps",
            lambda t: {
                "serviceName": "s",
                "selector": {"matchLabels": {"app": "w"}},
                "template": t,
            },
        ),
        (
            "daemonsets",
            "apps",
            lambda t: {"selector": {"matchLabels": {"app": "w"}}, "template": t},
        ),
        (
            "cronjobs",
            "batch",
            lambda t: {
                "schedule": "@hourly",
                "jobTemplate": {
                    "spec": {"template": {**t, "spec": {**t["spec"], "restartPolicy": "Never"}}}
                },
            },
        ),
    ],
)
async def test_every_pod_template_kind_is_warned_about(
    apiserver: InProcessServer, plural: str, group: str, spec: Any
) -> None:
    """StatefulSets, DaemonSets and CronJobs (``spec.jobTemplate.spec.template``), as
    upstream's ``PodSpecExtractor``."""
    await namespace(apiserver, "strict", enforce="restricted", warn="baseline")
    template = privileged_pod()
    template["metadata"] = {"labels": {"app": "w"}}
    body = {"metadata": {"name": "w"}, "spec": spec(template)}
    status, answer, warnings = await call(
        apiserver, "POST", f"/apis/{group}/v1/namespaces/strict/{plural}", body
    )
    assert status == 201, answer
    assert warnings == [
        '299 - "would violate PodSecurity \\"baseline:latest\\": privileged (container \\"app\\" '
        'must not set securityContext.privileged=true)"'
    ]
