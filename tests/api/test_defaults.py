"""Defaulting: what upstream fills in before validation, and when a spec counts as changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.api.defaults import image_pull_policy
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.strategy import apply_defaults, spec_changed


def kind(group: str, name: str) -> Kind:
    found = REGISTRY.by_kind(group, name)
    assert found is not None
    return found


POD = kind("", "Pod")
DEPLOYMENT = kind("apps", "Deployment")
REPLICASET = kind("apps", "ReplicaSet")
JOB = kind("batch", "Job")
STATEFULSET = kind("apps", "StatefulSet")
DAEMONSET = kind("apps", "DaemonSet")
CRONJOB = kind("batch", "CronJob")
CONTROLLERREVISION = kind("apps", "ControllerRevision")
PDB = kind("policy", "PodDisruptionBudget")
PRIORITY_CLASS = kind("scheduling.k8s.io", "PriorityClass")
NAMESPACE = kind("", "Namespace")
NODE = kind("", "Node")
EVENT = kind("", "Event")

NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
CONTAINER_DEFAULTS = {
    "imagePullPolicy": "IfNotPresent",
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
POD_SPEC_DEFAULTS = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
}


def test_pod_defaults() -> None:
    obj = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "busybox:1.36",
                    "ports": [{"containerPort": 80}],
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m"},
                    },
                }
            ],
            "initContainers": [
                {"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "2"}}}
            ],
        },
    }
    result = apply_defaults(POD, obj)
    assert result is obj  # defaulted in place
    assert obj["spec"] == {
        **POD_SPEC_DEFAULTS,
        "containers": [
            {
                "name": "app",
                "image": "busybox:1.36",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                # requests default to limits per resource, given requests are kept
                "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                },
                **CONTAINER_DEFAULTS,
            }
        ],
        "initContainers": [
            {
                "name": "init",
                "image": "busybox",
                "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}},
                **CONTAINER_DEFAULTS,
                "imagePullPolicy": "Always",
            }
        ],
        "enableServiceLinks": True,
        "tolerations": [NOT_READY, UNREACHABLE],
        "priority": 0,
    }
    # v1.33: no explicit resizePolicy defaulting (absent means NotRequired)
    assert "resizePolicy" not in obj["spec"]["containers"][0]


def test_pod_defaults_keep_given_values() -> None:
    spec = {
        "containers": [
            {
                "name": "app",
                "image": "busybox",
                "imagePullPolicy": "Never",
                "terminationMessagePolicy": "FallbackToLogsOnError",
            }
        ],
        "restartPolicy": "Never",
        "dnsPolicy": "Default",
        "terminationGracePeriodSeconds": 0,
        "enableServiceLinks": False,
        "priorityClassName": "high",
        "tolerations": [{"operator": "Exists"}],
    }
    obj = apply_defaults(POD, {"metadata": {"name": "p"}, "spec": copy.deepcopy(spec)})
    out = obj["spec"]
    assert out["restartPolicy"] == "Never" and out["dnsPolicy"] == "Default"
    assert out["terminationGracePeriodSeconds"] == 0 and out["enableServiceLinks"] is False
    assert out["containers"][0]["imagePullPolicy"] == "Never"
    assert out["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert out["tolerations"] == [{"operator": "Exists"}]  # already tolerates everything
    assert "priority" not in out  # resolved from the class by admission, not here


def test_pod_tolerations_only_added_when_missing() -> None:
    spec = {
        "containers": [{"name": "a", "image": "b"}],
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
        ],
    }
    out = apply_defaults(POD, {"spec": spec})["spec"]
    given = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert out["tolerations"] == [given, UNREACHABLE]
    update = apply_defaults(
        POD, {"spec": {"containers": [{"name": "a", "image": "b"}]}}, on_create=False
    )
    assert "tolerations" not in update["spec"] and "priority" not in update["spec"]


def test_quantities_round_up_to_milli() -> None:
    out = apply_defaults(
        POD,
        {
            "spec": {
                "containers": [
                    {
                        "name": "a",
                        "image": "b",
                        "resources": {"requests": {"cpu": "0.0001", "memory": "1Gi"}},
                    }
                ]
            }
        },
    )
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1m", "memory": "1Gi"}


def test_host_network_ports() -> None:
    out = apply_defaults(
        POD,
        {
            "spec": {
                "hostNetwork": True,
                "containers": [{"name": "a", "image": "b", "ports": [{"containerPort": 8080}]}],
            }
        },
    )
    assert out["spec"]["containers"][0]["ports"] == [
        {"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}
    ]


def test_probe_defaults() -> None:
    out = apply_defaults(
        POD,
        {
            "spec": {
                "containers": [
                    {"name": "a", "image": "b", "livenessProbe": {"httpGet": {"port": 80}}}
                ]
            }
        },
    )
    assert out["spec"]["containers"][0]["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("registry.local:5000/busybox", "Always"),
        ("registry.local:5000/busybox:1.0", "IfNotPresent"),
        ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
        ("busybox:latest@sha256:" + "a" * 64, "Always"),
        ("", "IfNotPresent"),
        (None, "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: Any, policy: str) -> None:
    assert image_pull_policy(image) == policy


def template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "image": "web:1", "resources": {"limits": {"cpu": "1"}}}]
        },
    }


def test_deployment_defaults() -> None:
    obj = apply_defaults(
        DEPLOYMENT, {"metadata": {"name": "web"}, "spec": {"template": template()}}
    )
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    pod_spec = spec["template"]["spec"]
    assert {k: pod_spec[k] for k in POD_SPEC_DEFAULTS} == POD_SPEC_DEFAULTS
    # pod-only defaults stay off templates, as upstream
    assert "enableServiceLinks" not in pod_spec and "tolerations" not in pod_spec
    assert pod_spec["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    recreate = apply_defaults(
        DEPLOYMENT, {"spec": {"strategy": {"type": "Recreate"}, "replicas": 0}}
    )
    assert (
        recreate["spec"]["strategy"] == {"type": "Recreate"} and recreate["spec"]["replicas"] == 0
    )


def test_replicaset_defaults() -> None:
    obj = apply_defaults(REPLICASET, {"spec": {"template": template()}})
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"


def test_job_defaults() -> None:
    tmpl = template()
    tmpl["spec"]["restartPolicy"] = "Never"
    obj = apply_defaults(
        JOB, {"metadata": {"name": "crunch", "uid": "abc-123"}, "spec": {"template": tmpl}}
    )
    spec = obj["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"  # stays as given
    assert obj["metadata"]["labels"] == {"app": "web"}  # copied before the generated ones
    assert spec["template"]["metadata"]["labels"] == {
        "app": "web",
        "job-name": "crunch",
        "batch.kubernetes.io/job-name": "crunch",
        "controller-uid": "abc-123",
        "batch.kubernetes.io/controller-uid": "abc-123",
    }
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc-123"}}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"parallelism": 5}, {"parallelism": 5}),  # completions stays unset: a work queue
        ({"completions": 5}, {"completions": 5, "parallelism": 1}),
        (
            {"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 3},
            {"backoffLimit": 2**31 - 1},
        ),
        (
            {"podFailurePolicy": {"rules": [{"onPodConditions": [{"type": "DisruptionTarget"}]}]}},
            {"podReplacementPolicy": "Failed"},
        ),
    ],
)
def test_job_count_defaults(given: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = apply_defaults(JOB, {"spec": copy.deepcopy(given)})["spec"]
    for key, value in expected.items():
        assert spec[key] == value
    if "completions" not in given and "parallelism" in given:
        assert "completions" not in spec
    if "podFailurePolicy" in given:
        assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


def test_job_manual_selector_is_not_generated() -> None:
    obj = apply_defaults(
        JOB,
        {
            "metadata": {"name": "j", "uid": "u"},
            "spec": {"manualSelector": True, "template": template()},
        },
    )
    assert "selector" not in obj["spec"]
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "web"}


def test_other_kinds() -> None:
    assert (
        apply_defaults(PRIORITY_CLASS, {"value": 5})["preemptionPolicy"] == "PreemptLowerPriority"
    )
    ns = apply_defaults(NAMESPACE, {"metadata": {"name": "team-a"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["status"] == {"phase": "Active"} and ns["spec"] == {"finalizers": ["kubernetes"]}
    node = apply_defaults(NODE, {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}})
    assert node["status"]["allocatable"] == {"cpu": "4"}
    pdb = {"spec": {"minAvailable": 1}}
    assert apply_defaults(PDB, copy.deepcopy(pdb)) == pdb
    event = {"reason": "x"}
    assert apply_defaults(EVENT, copy.deepcopy(event)) == event


def test_stateful_set_defaults() -> None:
    """``SetDefaults_StatefulSet`` (v1.36, ``MaxUnavailableStatefulSet`` off: no
    maxUnavailable), the template's pod defaults and the claim templates' claim defaults."""
    obj = apply_defaults(
        STATEFULSET,
        {
            "metadata": {"name": "web"},
            "spec": {
                "template": template(),
                "volumeClaimTemplates": [
                    {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {}}}}
                ],
            },
        },
    )
    spec = obj["spec"]
    assert {k: v for k, v in spec.items() if k not in ("template", "volumeClaimTemplates")} == {
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "replicas": 1,
        "revisionHistoryLimit": 10,
    }
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["status"] == {"phase": "Pending"}
    on_delete = apply_defaults(STATEFULSET, {"spec": {"updateStrategy": {"type": "OnDelete"}}})
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}
    given = apply_defaults(
        STATEFULSET,
        {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}},
    )
    assert given["spec"]["updateStrategy"]["rollingUpdate"] == {"partition": 2}


def test_daemon_set_defaults() -> None:
    obj = apply_defaults(
        DAEMONSET, {"metadata": {"name": "agent"}, "spec": {"template": template()}}
    )
    assert obj["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert obj["spec"]["revisionHistoryLimit"] == 10
    assert obj["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    # apps/v1 always shows the internal template generation (the strategy sets it).
    assert obj["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "0"}
    on_delete = apply_defaults(DAEMONSET, {"spec": {"updateStrategy": {"type": "OnDelete"}}})
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_cron_job_defaults_and_its_job_template_is_not_a_job() -> None:
    """``SetDefaults_CronJob`` and the pod template's defaults; the job template gets none of
    ``SetDefaults_Job`` (no completions, backoff limit, selector or labels)."""
    job_template = {
        "spec": {
            "template": template(),
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
            },
        }
    }
    obj = apply_defaults(
        CRONJOB,
        {
            "metadata": {"name": "tick", "uid": "u"},
            "spec": {"schedule": "@hourly", "jobTemplate": job_template},
        },
    )
    spec = obj["spec"]
    assert {k: v for k, v in spec.items() if k not in ("jobTemplate",)} == {
        "schedule": "@hourly",
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    }
    job_spec = spec["jobTemplate"]["spec"]
    assert set(job_spec) == {"template", "podFailurePolicy"}
    assert job_spec["template"]["spec"]["restartPolicy"] == "Always"
    assert job_spec["template"]["metadata"] == {"labels": {"app": "web"}}
    assert job_spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    assert "labels" not in obj["metadata"]


def test_controller_revisions_are_not_defaulted() -> None:
    revision = {"metadata": {"name": "r"}, "revision": 1, "data": {"spec": {}}}
    assert apply_defaults(CONTROLLERREVISION, copy.deepcopy(revision)) == revision


@pytest.mark.parametrize(
    "k",
    [
        POD,
        DEPLOYMENT,
        REPLICASET,
        JOB,
        NAMESPACE,
        PRIORITY_CLASS,
        NODE,
        STATEFULSET,
        DAEMONSET,
        CRONJOB,
    ],
)
def test_defaulting_is_idempotent(k: Kind) -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "x", "uid": "u"},
        "spec": {"containers": [{"name": "a", "image": "b"}], "template": template()},
    }
    once = apply_defaults(k, copy.deepcopy(obj))
    twice = apply_defaults(k, copy.deepcopy(once))
    assert once == twice


def test_spec_changed() -> None:
    old = {"metadata": {"generation": 1}, "spec": {"replicas": 1}, "status": {"replicas": 0}}
    assert not spec_changed(DEPLOYMENT, copy.deepcopy(old), old)
    assert not spec_changed(DEPLOYMENT, {**old, "status": {"replicas": 1}}, old)
    assert not spec_changed(DEPLOYMENT, {**old, "metadata": {"labels": {"a": "b"}}}, old)
    assert spec_changed(DEPLOYMENT, {**old, "spec": {"replicas": 2}}, old)
    assert spec_changed(PDB, {"spec": {"minAvailable": 2}}, {"spec": {"minAvailable": 1}})
    assert spec_changed(POD, {"spec": {"a": 1}}, {"spec": {"a": 2}})
    assert not spec_changed(EVENT, {"spec": {"a": 1}}, {"spec": {"a": 2}})  # no spec: no generation


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(
                st.text(max_size=6),
                st.sampled_from(
                    [
                        "spec",
                        "containers",
                        "resources",
                        "limits",
                        "requests",
                        "template",
                        "metadata",
                        "labels",
                        "tolerations",
                        "strategy",
                        "status",
                        "capacity",
                        "ports",
                        "selector",
                    ]
                ),
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=json_value, which=st.sampled_from(list(REGISTRY.kinds)), on_create=st.booleans())
def test_defaulting_never_fails_on_garbage(value: Any, which: Kind, on_create: bool) -> None:
    apply_defaults(which, value, on_create=on_create)
    if isinstance(value, dict):
        apply_defaults(
            which, {"spec": value, "metadata": value, "status": value}, on_create=on_create
        )
