"""The operator's webhook: which changes it holds, how, and what passes untouched."""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest

from inplace.operator.admission import mutate, review_response
from inplace.registry.patch import apply_json_patch

SMALL = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
BIG = {"requests": {"cpu": "200m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
BURSTABLE_TO_GUARANTEED = {
    "requests": {"cpu": "1", "memory": "1Gi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}


def workload(kind: str, resources: dict[str, Any], image: str = "busybox", **spec: Any) -> Any:
    return {
        "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
        "kind": kind,
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            **spec,
            "template": {
                "metadata": {"labels": {"app": "w"}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": image, "resources": copy.deepcopy(resources)}
                    ]
                },
            },
        },
    }


def request(kind: str, old: Any, new: Any, *, user: str = "alice") -> dict[str, Any]:
    return {
        "uid": "u-1",
        "kind": {"group": "", "version": "v1", "kind": kind},
        "operation": "UPDATE",
        "namespace": "default",
        "userInfo": {"username": user},
        "object": new,
        "oldObject": old,
    }


def applied(obj: Any, kind: str, old: Any, **kwargs: Any) -> Any:
    """``obj`` after the webhook's patch, as the API server would store it."""
    answer = mutate(request(kind, old, obj), **kwargs)
    return apply_json_patch(obj, answer.patch) if answer.patch else obj


def held(obj: Any) -> Any:
    return orjson.loads(obj["metadata"]["annotations"]["inplace.dev/held"])


def test_a_deployment_resized_only_is_paused_in_the_same_write() -> None:
    old = workload("Deployment", SMALL, replicas=5)
    out = applied(workload("Deployment", BIG, replicas=5), "Deployment", old)
    assert out["spec"]["paused"] is True
    assert held(out) == {"paused": False}
    assert out["spec"]["template"]["spec"]["containers"][0]["resources"] == BIG  # kept


@pytest.mark.parametrize("kind", ["StatefulSet", "DaemonSet"])
def test_a_revisioned_workload_is_held_at_on_delete(kind: str) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    old = workload(kind, SMALL, updateStrategy=strategy)
    out = applied(workload(kind, BIG, updateStrategy=strategy), kind, old)
    assert out["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert held(out) == {"updateStrategy": strategy}
    # A second resources change while held keeps the user's strategy recorded.
    second = workload(kind, SMALL, updateStrategy={"type": "OnDelete"})
    second["metadata"] = out["metadata"]
    again = applied(second, kind, out)
    assert held(again) == {"updateStrategy": strategy}


@pytest.mark.parametrize(
    ("kind", "new"),
    [
        ("Deployment", workload("Deployment", BIG, image="nginx")),  # image: rolls out
        ("Deployment", workload("Deployment", BURSTABLE_TO_GUARANTEED)),  # QoS changes
        ("StatefulSet", workload("StatefulSet", SMALL, replicas=3)),  # no template change
        ("ReplicaSet", workload("ReplicaSet", BIG)),  # not a kind it holds
    ],
)
def test_everything_else_passes_untouched(kind: str, new: Any) -> None:
    old = workload(kind, SMALL)
    assert mutate(request(kind, old, new)).patch == []


def test_opt_out_and_the_operators_own_writes_pass_untouched() -> None:
    old = workload("Deployment", SMALL)
    opted = workload("Deployment", BIG)
    opted["metadata"]["annotations"] = {"inplace.dev/in-place": "false"}
    assert mutate(request("Deployment", old, opted)).patch == []
    own = request("Deployment", old, workload("Deployment", BIG), user="system:serviceaccount:x:op")
    assert mutate(own, own_user="system:serviceaccount:x:op").patch == []


def test_a_jobs_change_is_taken_out_of_its_template_and_recorded() -> None:
    old = workload("Job", SMALL)
    answer = mutate(request("Job", old, workload("Job", BIG)))
    out = apply_json_patch(workload("Job", BIG), answer.patch)
    assert out["spec"]["template"] == old["spec"]["template"]
    assert orjson.loads(out["metadata"]["annotations"]["inplace.dev/template-resources"]) == {
        "main": BIG
    }
    assert "immutable" in answer.warnings[0]


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "Job"])
def test_a_memory_limit_lowered_is_not_held_where_the_api_refuses_it_in_place(kind: str) -> None:
    """On 1.33 a memory limit cannot be lowered through ``pods/resize``: such a change rolls
    out (or, for a Job, is refused by the API server as immutable), never held and left
    undone; raising it, or lowering a request, is still held."""
    old, lowered = workload(kind, BIG), workload(kind, SMALL)
    assert mutate(request(kind, old, lowered), allow_memory_limit_decrease=False).patch == []
    assert mutate(request(kind, old, lowered)).patch  # 1.34 on: held
    raised = mutate(request(kind, workload(kind, SMALL), workload(kind, BIG)),
                    allow_memory_limit_decrease=False)  # fmt: skip
    assert raised.patch
    fewer = copy.deepcopy(BIG)
    fewer["requests"]["memory"] = "96Mi"
    kept = mutate(request(kind, old, workload(kind, fewer)), allow_memory_limit_decrease=False)
    assert kept.patch


def test_a_jobs_later_pod_is_created_at_the_recorded_resources() -> None:
    job = workload("Job", SMALL)
    job["metadata"]["annotations"] = {
        "inplace.dev/template-resources": orjson.dumps({"main": BIG}).decode()
    }
    pod = {
        "metadata": {
            "name": "w-x",
            "ownerReferences": [{"kind": "Job", "name": "w", "controller": True}],
        },
        "spec": copy.deepcopy(job["spec"]["template"]["spec"]),
    }
    req = {
        "uid": "u",
        "kind": {"kind": "Pod"},
        "operation": "CREATE",
        "namespace": "default",
        "object": pod,
    }
    answer = mutate(req, job=lambda ns, name: job if (ns, name) == ("default", "w") else None)
    out = apply_json_patch(pod, answer.patch)
    assert out["spec"]["containers"][0]["resources"] == BIG
    assert mutate(req, job=lambda ns, name: None).patch == []


def test_the_review_response_carries_a_base64_json_patch() -> None:
    old = workload("Deployment", SMALL)
    req = request("Deployment", old, workload("Deployment", BIG))
    review = review_response(req, mutate(req))
    response = review["response"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and response["uid"] == "u-1"
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(response["patch"]))[0]["op"] == "add"
    plain = review_response(req, mutate(request("Deployment", old, old)))
    assert "patch" not in plain["response"]
