"""A VPA's target and the pods it controls (upstream's target and controller_fetcher rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from inplace.api.vpa_targets import (
    Lookup,
    answering_vpa,
    controlling_vpa,
    pod_matches,
    resolve_target,
    top_controller,
)

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

STATEFULSET = {
    "metadata": {"name": "db", "namespace": NS},
    "spec": {"selector": {"matchLabels": {"app": "db"}}},
}
DAEMONSET = {
    "metadata": {"name": "agent", "namespace": NS},
    "spec": {"selector": {"matchLabels": {"app": "agent"}}},
}
CRONJOB = {
    "metadata": {"name": "nightly", "namespace": NS},
    "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"app": "nightly"}}}}}},
}
CRONJOB_RUN = {
    "metadata": {
        "name": "nightly-29000000",
        "namespace": NS,
        "ownerReferences": owned("CronJob", "nightly"),
    },
    "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "x"}}},
}

OBJECTS: dict[tuple[str, str, str], Mapping[str, Any]] = {
    ("apps", "StatefulSet", "db"): STATEFULSET,
    ("apps", "DaemonSet", "agent"): DAEMONSET,
    ("batch", "CronJob", "nightly"): CRONJOB,
    ("batch", "Job", "nightly-29000000"): CRONJOB_RUN,
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
        ("StatefulSet", "db", None),
        ("DaemonSet", "agent", None),
        ("CronJob", "nightly", None),
        (
            "Job",
            "nightly-29000000",
            "The target apps/v1.Job/nightly-29000000 has a parent controller but it should "
            "point to a topmost well-known or scalable controller",
        ),
        (
            "ReplicationController",
            "old",
            "Cannot read targetRef. Reason: Unhandled targetRef apps/v1 / ReplicationController "
            "/ old, last error ReplicationController is not served by this cluster and has no "
            "scale subresource with a selector",
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
    run = pod({"app": "nightly"}, ("Job", "nightly-29000000"))
    assert top_controller(run, lookup) == ("CronJob", "nightly")
    target = resolve_target(vpa("CronJob", "nightly"), lookup)
    assert target.selector is not None and target.selector.matches({"app": "nightly"})
    assert pod_matches(run, vpa("CronJob", "nightly"), target, lookup)
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


# -- the one rule of coverage: the cases where the old per-component rules differed ---------

WEB_POD = pod({"app": "web"})  # owned by ReplicaSet web-1, owned by Deployment web


def with_mode(v: dict[str, Any], mode: str | None, namespace: str = NS) -> dict[str, Any]:
    if mode is not None:
        v["spec"]["updatePolicy"] = {"updateMode": mode}
    v["metadata"]["namespace"] = namespace
    return v


def no_deployment(group: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
    """The cache lost Deployment ``web`` (deleted, not yet synced): its target cannot be read."""
    return None if kind == "Deployment" else lookup(group, kind, name, namespace)


CASES = {
    # name: (vpas, lookup, the controlling VPA, the VPA whose updater answers)
    "none": ([], lookup, None, None),
    "the deployment": ([vpa("Deployment", "web", "web")], lookup, "web", "web"),
    "the deployment, Off": (
        [with_mode(vpa("Deployment", "web", "web"), "Off")],
        lookup,
        "web",
        None,
    ),
    "the deployment, Initial": (
        [with_mode(vpa("Deployment", "web", "web"), "Initial")],
        lookup,
        "web",
        None,
    ),
    # The target's name is the pod's top controller, but it cannot be read: no selector, so
    # no pods (a targetRef-only match called it covered and kept the responder away).
    "target not in the cache": ([vpa("Deployment", "web", "web")], no_deployment, None, None),
    "target does not exist": ([vpa("Deployment", "missing", "m")], lookup, None, None),
    # An intermediate ReplicaSet is not a valid target (ConfigUnsupported): it controls
    # nothing (an owner-chain match called it covering).
    "an intermediate ReplicaSet": ([vpa("ReplicaSet", "web-1", "rs")], lookup, None, None),
    "a kind this cluster does not serve": ([vpa("StatefulSet", "web", "s")], lookup, None, None),
    "two VPAs, the oldest wins (not the first by name)": (
        [
            vpa("Deployment", "web", "a-young", "2026-02-01T00:00:00Z"),
            vpa("Deployment", "web", "z-old", "2026-01-01T00:00:00Z"),
        ],
        lookup,
        "z-old",
        "z-old",
    ),
    "two VPAs, the oldest is Off: nobody's updater answers": (
        [
            vpa("Deployment", "web", "a-young", "2026-02-01T00:00:00Z"),
            with_mode(vpa("Deployment", "web", "z-old", "2026-01-01T00:00:00Z"), "Off"),
        ],
        lookup,
        "z-old",
        None,
    ),
    "two VPAs, the oldest cannot be read: the other controls": (
        [
            vpa("Deployment", "web", "young", "2026-02-01T00:00:00Z"),
            vpa("ReplicaSet", "web-1", "old", "2026-01-01T00:00:00Z"),
        ],
        lookup,
        "young",
        "young",
    ),
    "a VPA in another namespace": (
        [with_mode(vpa("Deployment", "web", "web"), None, "prod")],
        lookup,
        None,
        None,
    ),
}


@pytest.mark.parametrize(("vpas", "lookup_", "controlling", "answering"), CASES.values(), ids=CASES)
def test_one_rule_of_coverage(
    vpas: list[dict[str, Any]],
    lookup_: Lookup,
    controlling: str | None,
    answering: str | None,
) -> None:
    def name(v: Mapping[str, Any] | None) -> str | None:
        return v["metadata"]["name"] if v is not None else None

    assert name(controlling_vpa(WEB_POD, vpas, lookup_)) == controlling
    assert name(answering_vpa(WEB_POD, vpas, lookup_)) == answering


def test_a_pod_outside_the_targets_selector_is_not_controlled() -> None:
    """Owned by the target's ReplicaSet but relabelled out of its selector (orphaned by
    selector): the VPA does not control it, though its owner chain reaches the target."""
    relabelled = pod({"app": "debug"})
    assert controlling_vpa(relabelled, [vpa("Deployment", "web")], lookup) is None
