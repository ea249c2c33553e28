"""A VPA's target and the pods it controls (upstream's target and controller_fetcher rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from inplace.api.vpa_targets import controlling_vpa, pod_matches, resolve_target, top_controller

NS = "default"


def owned(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": name, "controller": True}]


DEPLOYMENT = {
    "metadata": {"name": "web", "namespace": NS},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}
REPLICASET = {
    "metadata": {"name": "web-1", "namespace": NS, "ownerReferences": owned("Deployment", "web")},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}
LONE_RS = {
    "metadata": {"name": "lone", "namespace": NS},
    "spec": {"selector": {"matchLabels": {"app": "lone"}}},
}
NO_SELECTOR = {"metadata": {"name": "bare", "namespace": NS}, "spec": {}}
JOB = {
    "metadata": {"name": "batch", "namespace": NS},
    "spec": {"selector": {"matchExpressions": [{"key": "job", "operator": "Exists"}]}},
}

OBJECTS: dict[tuple[str, str, str], Mapping[str, Any]] = {
    ("apps", "Deployment", "web"): DEPLOYMENT,
    ("apps", "Deployment", "bare"): NO_SELECTOR,
    ("apps", "ReplicaSet", "web-1"): REPLICASET,
    ("apps", "ReplicaSet", "lone"): LONE_RS,
    ("batch", "Job", "batch"): JOB,
}


def lookup(group: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
    return OBJECTS.get((group, kind, name)) if namespace == NS else None


def vpa(kind: str, name: str, vpa_name: str = "v", created: str = "2026-01-01T00:00:00Z") -> dict:
    return {
        "metadata": {"name": vpa_name, "namespace": NS, "creationTimestamp": created},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name}},
    }


def pod(labels: dict[str, str], owner: tuple[str, str] | None = ("ReplicaSet", "web-1")) -> dict:
    meta: dict[str, Any] = {"name": "p", "namespace": NS, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = owned(*owner)
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("Deployment", "web", None),
        ("ReplicaSet", "lone", None),
        ("Job", "batch", None),
        (
            "Deployment",
            "missing",
            "Cannot read targetRef. Reason: Deployment default/missing does not exist",
        ),
        ("Deployment", "bare", "Cannot read targetRef"),
        (
            "ReplicaSet",
            "web-1",
            "The target apps/v1.ReplicaSet/web-1 has a parent controller but it should point to "
            "a topmost well-known or scalable controller",
        ),
        (
            "StatefulSet",
            "db",
            "Cannot read targetRef. Reason: Unhandled targetRef apps/v1 / StatefulSet / db, last "
            "error StatefulSet is not served by this cluster and has no scale subresource with a "
            "selector",
        ),
    ],
)
def test_resolve_target(kind: str, name: str, message: str | None) -> None:
    target = resolve_target(vpa(kind, name), lookup)
    assert target.unsupported == message
    assert (target.selector is None) == (message is not None)


def test_a_vpa_without_target_ref_cannot_be_read() -> None:
    target = resolve_target({"metadata": {"namespace": NS}, "spec": {}}, lookup)
    assert target.unsupported == "Cannot read targetRef"


def test_top_controller_walks_owners_through_well_known_kinds() -> None:
    assert top_controller(pod({"app": "web"}), lookup) == ("Deployment", "web")
    assert top_controller(pod({}, ("ReplicaSet", "lone")), lookup) == ("ReplicaSet", "lone")
    assert top_controller(pod({}, ("ReplicaSet", "unknown")), lookup) == ("ReplicaSet", "unknown")
    assert top_controller(pod({}, ("MyKind", "x")), lookup) == ("MyKind", "x")
    assert top_controller(pod({}, None), lookup) is None


def test_a_pod_matches_by_namespace_selector_and_top_controller() -> None:
    v = vpa("Deployment", "web")
    target = resolve_target(v, lookup)
    assert pod_matches(pod({"app": "web"}), v, target, lookup)
    assert not pod_matches(pod({"app": "other"}), v, target, lookup)  # selector
    assert not pod_matches(pod({"app": "web"}, ("ReplicaSet", "lone")), v, target, lookup)
    elsewhere = pod({"app": "web"})
    elsewhere["metadata"]["namespace"] = "other"
    assert not pod_matches(elsewhere, v, target, lookup)


def test_the_oldest_matching_vpa_controls_a_pod() -> None:
    newer = vpa("Deployment", "web", "b-newer", "2026-02-01T00:00:00Z")
    older = vpa("Deployment", "web", "z-older", "2026-01-01T00:00:00Z")
    other = vpa("ReplicaSet", "lone", "a-other", "2025-01-01T00:00:00Z")
    chosen = controlling_vpa(pod({"app": "web"}), [newer, other, older], lookup)
    assert chosen is older
    assert controlling_vpa(pod({"app": "nothing"}), [newer, older], lookup) is None
