"""The field manager: who owns what after creates, updates, subresource writes and applies."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.registry import fieldpath as fp
from inplace.registry import managedfields as mf
from inplace.registry import strategy as defaults
from inplace.registry.fieldmanager import field_manager, scale_field_manager
from inplace.registry.fieldpath import set_of
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.managedfields import ApplyConflict, ApplyRefused


def kind(group: str, name: str) -> Kind:
    found = REGISTRY.by_kind(group, name)
    assert found is not None
    return found


PODS = kind("", "Pod")
DEPLOYMENTS = kind("apps", "Deployment")
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"


def deployment(replicas: int | None = 2, image: str = "nginx", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", **meta},
        "spec": spec,
    }


def created(obj: dict[str, Any], manager: str = "creator", when: str = T0) -> dict[str, Any]:
    """`obj` as the server stores it after `manager` created it."""
    stored = copy.deepcopy(obj)
    defaults.apply_defaults(DEPLOYMENTS, stored, on_create=False)
    stored["metadata"]["uid"] = "uid-1"
    stored["metadata"]["managedFields"] = field_manager(DEPLOYMENTS).update(
        None, stored, manager, when
    )
    return stored


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """An object through the store: JSON and back."""
    result: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return result


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """managedFields by manager (and operation, subresource when two share a manager)."""
    out = {}
    for entry in obj["metadata"].get("managedFields") or []:
        name = entry.get("manager", "")
        if entry.get("subresource"):
            name += "/" + entry["subresource"]
        out[name] = entry
    return out


def owned(obj: dict[str, Any], manager: str) -> fp.Set:
    return fp.canonical_fields_v1(entries(obj)[manager]["fieldsV1"])


def owns(obj: dict[str, Any], manager: str, *path: str) -> bool:
    return fp.has(owned(obj, manager), tuple(path))


REPLICAS = ("f:spec", "f:replicas")
IMAGE = (
    "f:spec",
    "f:template",
    "f:spec",
    "f:containers",
    'k:{"name":"main"}',
    "f:image",
)


# --- updates -----------------------------------------------------------------------------


def test_a_pod_create_is_owned_as_upstream_records_it() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"run": "nginx"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
    }
    defaults.apply_defaults(PODS, pod, on_create=False)
    assert field_manager(PODS).update(None, pod, "kubectl-run", T0) == [
        {
            "manager": "kubectl-run",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {},
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
        }
    ]


def test_an_update_takes_what_it_changes_and_a_removal_leaves_every_owner() -> None:
    live = stored(created(deployment(replicas=2)))
    new = copy.deepcopy(live)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    del new["spec"]["replicas"]
    result = field_manager(DEPLOYMENTS).update(live, new, "editor", T1)
    assert result is not None
    new["metadata"]["managedFields"] = result
    assert owns(new, "editor", *IMAGE)
    assert not fp.has(owned(new, "creator"), IMAGE)
    assert not fp.has(owned(new, "creator"), REPLICAS)
    assert entries(new)["creator"]["time"] == T0 and entries(new)["editor"]["time"] == T1


def test_a_write_that_changes_nothing_keeps_entries_and_times() -> None:
    live = stored(created(deployment()))
    again = field_manager(DEPLOYMENTS).update(live, copy.deepcopy(live), "someone", T2)
    assert again == live["metadata"]["managedFields"]


def test_entries_of_one_manager_merge_and_are_sorted_as_upstream() -> None:
    live = stored(created(deployment(), "b-creator"))
    fm = field_manager(DEPLOYMENTS)
    for replicas, when in ((3, T1), (4, T2)):
        new = copy.deepcopy(live)
        new["spec"]["replicas"] = replicas
        new["metadata"]["managedFields"] = fm.update(live, new, "a-scaler", when)
        live = stored(new)
    listed = live["metadata"]["managedFields"]
    assert [(e["manager"], e["time"]) for e in listed] == [("b-creator", T0), ("a-scaler", T2)]
    assert owns(live, "a-scaler", *REPLICAS)


def test_status_through_the_object_is_not_owned_and_status_writes_are_their_own_entry() -> None:
    live = stored(created(deployment()))
    through_object = copy.deepcopy(live)
    through_object["status"] = {"replicas": 5}
    assert (
        field_manager(DEPLOYMENTS).update(live, through_object, "x", T1)
        == live["metadata"]["managedFields"]
    )
    status = copy.deepcopy(live)
    status["status"] = {"replicas": 5}
    status["metadata"]["labels"] = {"sneaky": "1"}  # reset for deployments' /status
    status["metadata"]["managedFields"] = field_manager(DEPLOYMENTS, "status").update(
        live, status, "controller", T1
    )
    entry = entries(status)["controller/status"]
    assert entry["subresource"] == "status" and entry["operation"] == "Update"
    assert fp.canonical_fields_v1(entry["fieldsV1"]) == set_of(("f:status", "f:replicas"))


def test_resize_owns_only_container_resources() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"containers": [{"name": "main", "image": "a", "resources": {}}]},
    }
    pod["metadata"]["managedFields"] = field_manager(PODS).update(None, pod, "creator", T0)
    live = stored(pod)
    new = copy.deepcopy(live)
    new["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    new["spec"]["containers"][0]["image"] = "b"  # not the resize subresource's to write
    new["metadata"]["managedFields"] = field_manager(PODS, "resize").update(
        live, new, "resizer", T1
    )
    base = ("f:spec", "f:containers", 'k:{"name":"main"}', "f:resources")
    assert owned(new, "resizer/resize") == set_of(
        (*base, "f:requests"), (*base, "f:requests", "f:cpu")
    )


def test_a_client_may_clear_managed_fields_and_the_object_then_stays_untracked() -> None:
    live = stored(created(deployment()))
    fm = field_manager(DEPLOYMENTS)
    for cleared in ([], [{}]):
        new = copy.deepcopy(live)
        new["metadata"]["managedFields"] = cleared
        assert fm.update(live, new, "x", T1) is None
    untracked = copy.deepcopy(live)
    del untracked["metadata"]["managedFields"]
    changed = copy.deepcopy(untracked)
    changed["spec"]["replicas"] = 9
    assert fm.update(untracked, changed, "x", T1) is None


def test_a_subresource_cannot_set_managed_fields_by_hand() -> None:
    live = stored(created(deployment()))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = []
    new["status"] = {"replicas": 1}
    result = field_manager(DEPLOYMENTS, "status").update(live, new, "c", T1)
    assert result is not None and {e["manager"] for e in result} == {"creator", "c"}


def test_at_most_ten_update_entries_the_oldest_merge_into_ancient_changes() -> None:
    live = stored(created(deployment()))
    fm = field_manager(DEPLOYMENTS)
    for i in range(12):
        new = copy.deepcopy(live)
        new["metadata"].setdefault("labels", {})[f"l{i}"] = "x"
        new["metadata"]["managedFields"] = fm.update(
            live, new, f"m{i:02d}", f"2026-01-01T00:01:{i:02d}Z"
        )
        live = stored(new)
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert managers[0] == "ancient-changes"
    assert owns(live, "ancient-changes", "f:metadata", "f:labels", "f:l0")
    assert owns(live, "ancient-changes", "f:spec", "f:replicas")  # the creator's, merged
    assert "m11" in managers and "creator" not in managers


def test_unreadable_managed_fields_fall_back_to_the_live_ones() -> None:
    live = stored(created(deployment()))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = [{"manager": "x", "operation": "Bogus"}]
    new["spec"]["replicas"] = 7
    result = field_manager(DEPLOYMENTS).update(live, new, "editor", T1)
    assert result is not None and {e["manager"] for e in result} == {"creator", "editor"}


# --- apply -------------------------------------------------------------------------------


def apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    force: bool = False,
    when: str = T1,
) -> dict[str, Any] | None:
    return field_manager(DEPLOYMENTS).apply(live, config, manager, when, force=force)


def test_an_apply_owns_exactly_what_it_applied() -> None:
    result = apply(None, deployment(), "kubectl")
    assert result is not None
    assert entries(result)["kubectl"]["operation"] == "Apply"
    assert "apiVersion" not in entries(result)["kubectl"]["fieldsV1"]  # never owned
    assert owned(result, "kubectl") == set_of(
        ("f:spec", "f:replicas"),
        ("f:spec", "f:selector"),
        ("f:spec", "f:template", "f:metadata", "f:labels", "f:app"),
        ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"main"}'),
        (*IMAGE[:-1], "f:name"),
        IMAGE,
    )


def test_a_conflict_names_the_manager_and_the_field_as_upstream() -> None:
    live = stored(created(deployment(replicas=2), "kubectl-client-side-apply"))
    with pytest.raises(ApplyConflict) as caught:
        apply(live, deployment(replicas=3), "other")
    assert caught.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
        "apps/v1: .spec.replicas"
    )
    assert caught.value.causes() == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
            "field": ".spec.replicas",
        }
    ]


def test_several_conflicts_are_listed_by_manager() -> None:
    live = stored(created(deployment(replicas=2), "b-writer"))
    first = apply(live, deployment(replicas=2, image="nginx"), "a-applier")
    assert first is not None
    with pytest.raises(ApplyConflict) as caught:
        apply(stored(first), deployment(replicas=5, image="httpd"), "c")
    assert caught.value.message == (
        'Apply failed with 4 conflicts: conflicts with "a-applier":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="main"].image\n'
        'conflicts with "b-writer" using apps/v1:\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="main"].image'
    )


def test_equal_values_are_shared_not_conflicts_and_force_takes_ownership() -> None:
    live = stored(created(deployment(replicas=2)))
    shared = apply(live, deployment(replicas=2), "sharer")
    assert shared is not None
    assert owns(shared, "sharer", *REPLICAS) and owns(shared, "creator", *REPLICAS)
    forced = apply(stored(shared), deployment(replicas=4), "taker", force=True)
    assert forced is not None and forced["spec"]["replicas"] == 4
    assert owns(forced, "taker", *REPLICAS)
    assert not fp.has(owned(forced, "creator"), REPLICAS)
    assert not fp.has(owned(forced, "sharer"), REPLICAS)


def test_a_field_no_longer_applied_goes_unless_someone_else_owns_it() -> None:
    first = apply(None, deployment(labels={"a": "1", "b": "2"}), "mgr")
    assert first is not None
    second = apply(stored(first), deployment(labels={"a": "1"}), "mgr")
    assert second is not None and second["metadata"]["labels"] == {"a": "1"}
    # Another applier that also applies label b keeps it.
    other = apply(stored(first), deployment(labels={"b": "2"}), "other")
    assert other is not None
    kept = apply(stored(other), deployment(labels={"a": "1"}), "mgr")
    assert kept is not None and kept["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert owns(kept, "other", "f:metadata", "f:labels", "f:b")


def test_applying_the_same_configuration_again_changes_nothing() -> None:
    first = apply(None, deployment(), "mgr")
    assert first is not None
    assert apply(stored(first), deployment(), "mgr", when=T2) is None


def test_the_first_apply_credits_what_was_there_to_before_first_apply() -> None:
    live = stored(deployment(replicas=2))
    live["metadata"]["uid"] = "u"
    result = apply(live, deployment(replicas=2, labels={"new": "1"}), "mgr")
    assert result is not None
    assert owns(result, "before-first-apply", *REPLICAS)
    assert entries(result)["before-first-apply"]["operation"] == "Update"


def test_kubectl_takes_over_from_client_side_apply_without_conflicts() -> None:
    config = deployment(replicas=2)
    annotation = orjson.dumps(config).decode()
    live = stored(
        created(
            deployment(
                replicas=2,
                annotations={mf.LAST_APPLIED: annotation},
            ),
            "kubectl-client-side-apply",
        )
    )
    result = apply(live, deployment(replicas=3), "kubectl")
    assert result is not None and result["spec"]["replicas"] == 3
    assert owns(result, "kubectl", *REPLICAS)
    # The annotation follows what kubectl applied.
    annotations = result["metadata"]["annotations"]
    assert orjson.loads(annotations[mf.LAST_APPLIED])["spec"]["replicas"] == 3
    assert annotations[mf.LAST_APPLIED].endswith("\n")
    # Another manager gets no such pass.
    with pytest.raises(ApplyConflict):
        apply(live, deployment(replicas=3), "not-kubectl")


def test_kubectl_conflicts_on_what_client_side_apply_did_not_apply() -> None:
    annotation = orjson.dumps(deployment(replicas=None)).decode()
    live = stored(
        created(deployment(replicas=2, annotations={mf.LAST_APPLIED: annotation}), "x-writer")
    )
    with pytest.raises(
        ApplyConflict, match=r'conflict with "x-writer" using apps/v1: \.spec\.replicas'
    ):
        apply(live, deployment(replicas=3), "kubectl")


@pytest.mark.parametrize(
    ("config", "code", "message"),
    [
        (
            {**deployment(), "apiVersion": "apps/v2"},
            400,
            "invalid object type: apps/v2, Kind=Deployment",
        ),
        ({**deployment(), "kind": "Pod"}, 400, "invalid object type: apps/v1, Kind=Pod"),
        (
            deployment(managedFields=[]),
            400,
            "metadata.managedFields must be nil",
        ),
        (
            {**deployment(), "spec": {"replicaz": 1}},
            422,
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
            ".spec.replicaz: field not declared in schema",
        ),
    ],
)
def test_apply_refusals(config: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(ApplyRefused) as caught:
        apply(None, config, "mgr")
    assert (caught.value.code, caught.value.message) == (code, message)


# --- properties --------------------------------------------------------------------------

_label_maps = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["1", "2"]))
_containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["x", "y", "z"])},
        optional={
            "image": st.sampled_from(["i1", "i2"]),
            "args": st.lists(st.sampled_from(["p", "q"]), max_size=2),
            "ports": st.lists(
                st.fixed_dictionaries({"containerPort": st.sampled_from([80, 443])}),
                max_size=2,
                unique_by=lambda p: p["containerPort"],
            ),
        },
    ),
    max_size=3,
    unique_by=lambda c: c["name"],
)


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    config: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
    }
    labels = draw(_label_maps)
    if labels:
        config["metadata"]["labels"] = labels
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["replicas"] = draw(st.integers(0, 3))
    containers = draw(_containers)
    if containers:
        spec["template"] = {"spec": {"containers": containers}}
    if spec:
        config["spec"] = spec
    return config


_STRIPPED_TOP = {"f:apiVersion", "f:kind"}


def applied_set(config: dict[str, Any]) -> fp.Set:
    from inplace.registry.typed import field_set

    fields = field_set(config, field_manager(DEPLOYMENTS).atom)
    fields = {k: v for k, v in fields.items() if k not in _STRIPPED_TOP}
    meta = {
        k: v for k, v in fields.get("f:metadata", {}).items() if k not in ("f:name", "f:namespace")
    }
    if meta:
        fields["f:metadata"] = meta
    else:
        fields.pop("f:metadata", None)
    return fields


@settings(max_examples=80, deadline=None)
@given(configs(), configs())
def test_apply_is_idempotent_and_owns_exactly_what_was_applied(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    live = apply(None, first, "mgr")
    assert live is not None
    live = stored(live)
    assert apply(live, first, "mgr", when=T2) is None
    assert (owned(live, "mgr") if "mgr" in entries(live) else {}) == applied_set(first)
    after = apply(live, second, "mgr", when=T2)
    after = stored(after) if after is not None else live
    assert apply(after, second, "mgr", when=T2) is None
    assert (owned(after, "mgr") if "mgr" in entries(after) else {}) == applied_set(second)


def test_scale_sees_and_writes_the_owners_of_replicas() -> None:
    live = stored(created(deployment(replicas=2)))
    parent = live["metadata"]["managedFields"]
    view = mf.scale_entries(parent)
    assert view is not None and [e["apiVersion"] for e in view] == ["autoscaling/v1"]
    assert view[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    scales = scale_field_manager()
    old = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web", "managedFields": view},
        "spec": {"replicas": 2},
    }
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    after_scale = scales.update(old, new, "kubectl", T1)
    after = mf.parent_entries_after_scale(parent, after_scale, "apps/v1")
    assert after is not None
    by = {(e["manager"], e.get("subresource")): e for e in after}
    assert by[("kubectl", "scale")]["apiVersion"] == "apps/v1"
    assert by[("kubectl", "scale")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in by[("creator", None)]["fieldsV1"]["f:spec"]
