"""The merge types of every served kind: upstream's schema, the CRDs', Go's zero values."""

from __future__ import annotations

import pytest

from inplace.registry.fieldschema import DEDUCED, kind_atom, named_atom, zero_object
from inplace.registry.kinds import REGISTRY, Kind

POD = named_atom("io.k8s.api.core.v1.Pod")
DEPLOYMENT = named_atom("io.k8s.api.apps.v1.Deployment")


@pytest.mark.parametrize("kind", [k for k in REGISTRY.kinds if k.stored], ids=lambda k: k.kind)
def test_every_stored_kind_has_its_merge_types(kind: Kind) -> None:
    atom = kind_atom(kind)
    assert atom is not DEDUCED
    assert atom.fields is not None and {"metadata", "apiVersion", "kind"} <= set(atom.fields)
    assert atom.child("metadata") is named_atom("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


def test_the_schema_knows_list_types_keys_defaults_and_atomic_structs() -> None:
    containers = POD.child("spec").child("containers")
    assert not containers.list_atomic and containers.keys == ("name",)
    ports = containers.list_elem.child("ports")  # type: ignore[union-attr]
    assert ports.keys == ("containerPort", "protocol")
    assert ports.list_elem.defaults["protocol"] == "TCP"  # type: ignore[union-attr]
    command = containers.list_elem.child("command")  # type: ignore[union-attr]
    assert command.list_atomic
    finalizers = POD.child("metadata").child("finalizers")
    assert not finalizers.list_atomic and finalizers.keys == ()
    assert DEPLOYMENT.child("spec").child("selector").map_atomic
    labels = POD.child("metadata").child("labels")
    assert labels.fields == {} and not labels.map_atomic


def test_zeros_are_what_go_always_prints() -> None:
    container = POD.child("spec").child("containers").list_elem
    assert container is not None
    assert container.zeros == {"name": "", "resources": {}}
    template = {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}
    assert DEPLOYMENT.zeros == {
        "metadata": {"creationTimestamp": None},
        "spec": {"template": template, "strategy": {}},
        "status": {},
    }
    assert DEDUCED.zeros == {}


def test_crd_lists_are_atomic_unless_typed_otherwise() -> None:
    vpa = kind_atom(REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler"))  # type: ignore[arg-type]
    policies = vpa.child("spec").child("resourcePolicy").child("containerPolicies")
    assert policies.list_atomic
    assert vpa.child("metadata") is named_atom("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


def test_the_zero_object_is_the_go_zero_value() -> None:
    pods = REGISTRY.by_kind("", "Pod")
    assert pods is not None
    assert zero_object(pods) == {
        "metadata": {"creationTimestamp": None},
        "spec": {"containers": None},
        "status": {},
    }
