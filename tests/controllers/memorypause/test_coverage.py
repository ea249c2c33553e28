"""Which VPA answers a paused pod: upstream's controlling VPA, when its mode touches pods."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.controllers.memorypause.coverage import (
    controlling_vpa,
    covering_vpa,
    top_controller,
)


def owned(kind: str, name: str, owner: tuple[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-the-controller"},
        ]
    return {"kind": kind, "metadata": meta}


OBJECTS = {
    ("ReplicaSet", "web-abc"): owned("ReplicaSet", "web-abc", ("Deployment", "web")),
    ("Deployment", "web"): owned("Deployment", "web"),
    ("ReplicaSet", "bare"): owned("ReplicaSet", "bare"),
    ("Job", "nightly-1"): owned("Job", "nightly-1", ("CronJob", "nightly")),
    ("CronJob", "nightly"): owned("CronJob", "nightly"),
    ("Job", "custom-run"): owned("Job", "custom-run", ("Pipeline", "ci")),
}


def lookup(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    assert namespace == "default"
    return OBJECTS.get((kind, name))


def vpa(
    name: str,
    kind: str,
    target: str,
    *,
    mode: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target}}
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    return {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("owner", "top"),
    [
        (None, None),
        (("ReplicaSet", "web-abc"), ("Deployment", "web")),
        (("ReplicaSet", "bare"), ("ReplicaSet", "bare")),
        (("ReplicaSet", "not-cached"), ("ReplicaSet", "not-cached")),
        (("Job", "nightly-1"), ("CronJob", "nightly")),
        (("Job", "custom-run"), ("Job", "custom-run")),  # an unknown kind is not climbed
        (("Pipeline", "ci"), ("Pipeline", "ci")),
    ],
)
def test_top_controller(owner: tuple[str, str] | None, top: tuple[str, str] | None) -> None:
    assert top_controller(owned("Pod", "p", owner), lookup) == top


POD = owned("Pod", "web-abc-xyz", ("ReplicaSet", "web-abc"))


@pytest.mark.parametrize(
    ("vpas", "controlling", "covering"),
    [
        ([], None, None),
        ([vpa("other", "Deployment", "api")], None, None),
        ([vpa("rs", "ReplicaSet", "web-abc")], None, None),  # not the top-most controller
        ([vpa("web", "Deployment", "web")], "web", "web"),  # Recreate by default
        ([vpa("web", "Deployment", "web", mode="InPlaceOrRecreate")], "web", "web"),
        ([vpa("web", "Deployment", "web", mode="Off")], "web", None),
        ([vpa("web", "Deployment", "web", mode="Initial")], "web", None),
        (
            [
                vpa("young", "Deployment", "web", created="2026-02-01T00:00:00Z"),
                vpa("old", "Deployment", "web", mode="Off", created="2026-01-01T00:00:00Z"),
            ],
            "old",
            None,  # the controlling one is Off: the responder answers
        ),
        (
            [vpa("b", "Deployment", "web"), vpa("a", "Deployment", "web", mode="InPlace")],
            "a",
            "a",
        ),
    ],
)
def test_controlling_and_covering(
    vpas: list[dict[str, Any]], controlling: str | None, covering: str | None
) -> None:
    found = controlling_vpa(POD, vpas, lookup)
    assert (found["metadata"]["name"] if found else None) == controlling
    assert covering_vpa(POD, vpas, lookup) == covering


def test_another_namespace_does_not_cover() -> None:
    elsewhere = vpa("web", "Deployment", "web")
    elsewhere["metadata"]["namespace"] = "prod"
    assert covering_vpa(POD, [elsewhere], lookup) is None
