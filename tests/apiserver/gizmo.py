"""A throw-away kind the server has never heard of, with a strategy of its own.

`Gizmo` (example.inplace.dev/v1) is defined here exactly as a served kind is in
`inplace.registry.kinds`: one `Kind(...)` entry naming its strategy, whose rules are plain
functions. Nothing in `src/` knows it, so whatever the tests see it do (defaults, admission,
validation messages, what its status and `tune` subresources may write, generation, graceful
deletion, its Table and field selectors) comes from the strategy alone. Its schema is
ReplicationController's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from inplace.api.selectors import SelectableFields
from inplace.api.tables import Column, TablePrinter
from inplace.api.validation.errors import (
    FieldError,
    as_int,
    invalid,
    lookup,
    name_is_dns_subdomain,
)
from inplace.api.validation.meta import (
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.served import Registry
from inplace.registry.strategy import (
    ObjectReader,
    Rejected,
    Strategy,
    SubresourceUpdate,
    copy_json,
)

GROUP = "example.inplace.dev"
NAMESPACE_UID_ANNOTATION = "example.inplace.dev/namespace-uid"
MAX_REPLICAS = 10


def default_gizmo(obj: dict[str, Any], on_create: bool) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("replicas") is None:
        spec["replicas"] = 1


def admit_gizmo(obj: dict[str, Any], objects: ObjectReader) -> None:
    """Stamps the uid of the gizmo's namespace; a namespace labelled `gizmos: forbidden`
    takes none."""
    meta = obj["metadata"]
    namespace = objects.get("", "Namespace", meta["namespace"])
    assert namespace is not None  # REST checked that it exists
    if (namespace["metadata"].get("labels") or {}).get("gizmos") == "forbidden":
        raise Rejected(403, f'gizmos "{meta.get("name")}" is forbidden: no gizmos here')
    meta.setdefault("annotations", {})[NAMESPACE_UID_ANNOTATION] = namespace["metadata"]["uid"]


def prepare_gizmo_for_create(obj: dict[str, Any]) -> None:
    obj["status"] = {"replicas": 0}


def validate_gizmo(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    replicas = as_int(errs, lookup(obj, "spec", "replicas"), "spec.replicas")
    if replicas is not None and replicas > MAX_REPLICAS:
        errs.append(invalid("spec.replicas", replicas, f"must be at most {MAX_REPLICAS}"))


def validate_gizmo_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_status_metadata(errs, new, old)
    ready = as_int(errs, lookup(new, "status", "readyReplicas"), "status.readyReplicas")
    wanted = lookup(new, "spec", "replicas")
    if ready is not None and isinstance(wanted, int) and ready > wanted:
        errs.append(invalid("status.readyReplicas", ready, "must not exceed spec.replicas"))


def take_replicas_only(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """`gizmos/tune` takes `spec.replicas` from the body and everything else from the
    stored object."""
    replicas = lookup(new, "spec", "replicas")
    new.clear()
    new.update(copy_json(old))
    new.setdefault("spec", {})["replicas"] = replicas


def validate_gizmo_tune(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_object_meta_update(errs, new, old)
    validate_gizmo(errs, new)


def gizmo_grace_period(obj: Mapping[str, Any], requested: Any) -> int:
    return 7 if requested is None else int(requested)


def gizmo_row(obj: Mapping[str, Any], now: datetime) -> tuple[list[Any], None]:
    return [obj["metadata"]["name"], lookup(obj, "spec", "replicas")], None


GIZMO_TABLE = TablePrinter(
    (
        Column("Name", "string", "The gizmo's name.", format="name"),
        Column("Replicas", "integer", "How many."),
    ),
    gizmo_row,
)

GIZMO_FIELDS = SelectableFields({"spec.replicas": lambda o: str(lookup(o, "spec", "replicas"))})

GIZMO = Kind(
    GROUP,
    "v1",
    "Gizmo",
    "gizmos",
    True,
    ("gz",),
    ("status", "tune"),
    model="V1ReplicationController",
    strategy=Strategy(
        defaults=default_gizmo,
        admit=admit_gizmo,
        prepare_for_create=prepare_gizmo_for_create,
        validate=validate_gizmo,
        validate_status_update=validate_gizmo_status_update,
        subresources={"tune": SubresourceUpdate(take_replicas_only, validate_gizmo_tune)},
        table=GIZMO_TABLE,
        selectable_fields=GIZMO_FIELDS,
        grace_period=gizmo_grace_period,
    ),
)

_NAMESPACE = REGISTRY.by_kind("", "Namespace")
assert _NAMESPACE is not None
NAMESPACE: Kind = _NAMESPACE
#: What a server serving gizmos (and the namespaces they live in) registers.
GIZMO_REGISTRY = Registry((NAMESPACE, GIZMO))


def gizmo(name: str = "g", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}
