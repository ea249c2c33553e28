"""The kinds of apiextensions.k8s.io: the CustomResourceDefinition kind itself, and the kinds
a CRD serves (one per served version), each with the strategy a custom resource gets.

A custom resource's strategy is upstream's (apiextensions-apiserver
`pkg/registry/customresource/strategy.go`, `validator.go`): its schema's defaults, its
metadata validated as ObjectMeta and its values against the schema, the status subresource's
split (the field check prunes unknown fields, `check.py`), `metadata.generation` bumped by
any change outside `metadata` (and `status`, when it is a subresource), creates refused while
the CRD is terminating, the printer columns' Table and `selectableFields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.selectors import SelectableFields
from inplace.api.tables import Column, TablePrinter
from inplace.api.tables.printer import NAME_COLUMN, name_of, text_at
from inplace.api.validation.errors import FieldError, name_is_dns_subdomain, or_empty
from inplace.api.validation.meta import (
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)
from inplace.apiserver.crds.columns import find, parse, print_value, printer_for
from inplace.apiserver.crds.model import (
    BUILTIN_VPA_CRDS,
    GROUP,
    by_priority,
    default_crd,
    prepare_crd_for_create,
    prepare_crd_for_update,
    storage_version,
    validate_crd,
    validate_crd_status_update,
    validate_crd_update,
)
from inplace.registry.kinds import Kind
from inplace.registry.schema.cel import has_rules, validate_rules
from inplace.registry.schema.custom import CustomResource, ScalePaths
from inplace.registry.schema.values import apply_schema_defaults, validate_values
from inplace.registry.strategy import ObjectReader, Rejected, Strategy

_CRD_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column(
            "Created At",
            "date",
            "CreationTimestamp is a timestamp representing the server "
            "time when this object was created.",
        ),
    ),
    lambda crd, now: ([name_of(crd), text_at(crd, "metadata", "creationTimestamp")], None),
)

CRD_KIND: Final = Kind(
    GROUP,
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    False,
    ("crd", "crds"),
    ("status",),
    ("api-extensions",),
    model="V1CustomResourceDefinition",
    strategy=Strategy(
        defaults=default_crd,
        prepare_for_create=prepare_crd_for_create,
        prepare_for_update=prepare_crd_for_update,
        validate=validate_crd,
        validate_update=validate_crd_update,
        validate_status_update=validate_crd_status_update,
        table=_CRD_TABLE,
        bumps_generation=True,
    ),
)


def kinds_from_crd(crd: Mapping[str, Any]) -> list[Kind]:
    """The kinds a (valid) CRD serves, its served versions in upstream's priority order (the
    first is the preferred version); none for the VPA's own CRDs, whose kinds are built in."""
    meta = or_empty(crd.get("metadata"))
    if meta.get("name") in BUILTIN_VPA_CRDS:
        return []
    spec = or_empty(crd.get("spec"))
    names = or_empty(spec.get("names"))
    storage = storage_version(crd) or ""
    revision = f"{meta.get('uid', '')}/{meta.get('generation', 1)}"
    versions = {
        v["name"]: v
        for v in spec.get("versions") or ()
        if isinstance(v, Mapping) and v.get("served") is True and isinstance(v.get("name"), str)
    }
    kinds = []
    for name in by_priority(versions):
        version = versions[name]
        subresources = or_empty(version.get("subresources"))
        scale = or_empty(subresources.get("scale"))
        custom = CustomResource(
            crd_name=str(meta.get("name", "")),
            singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
            list_kind=str(names.get("listKind") or f"{names.get('kind', '')}List"),
            schema=or_empty(or_empty(version.get("schema")).get("openAPIV3Schema")),
            storage=name == storage,
            storage_version=storage,
            printer_columns=tuple(
                c for c in version.get("additionalPrinterColumns") or () if isinstance(c, Mapping)
            ),
            scale=ScalePaths(
                str(scale.get("specReplicasPath", ".spec.replicas")),
                str(scale.get("statusReplicasPath", ".status.replicas")),
                scale.get("labelSelectorPath") or None,
            )
            if scale
            else None,
            deprecation_warning=_deprecation(crd, version),
            selectable_fields=tuple(
                str(f.get("jsonPath"))
                for f in version.get("selectableFields") or ()
                if isinstance(f, Mapping) and f.get("jsonPath")
            ),
        )
        kinds.append(
            Kind(
                str(spec.get("group", "")),
                name,
                str(names.get("kind", "")),
                str(names.get("plural", "")),
                spec.get("scope") == "Namespaced",
                tuple(str(n) for n in names.get("shortNames") or ()),
                tuple(s for s in ("status", "scale") if s in subresources),
                tuple(str(c) for c in names.get("categories") or ()),
                crd=custom,
                revision=revision,
                strategy=custom_resource_strategy(
                    custom,
                    namespaced=spec.get("scope") == "Namespaced",
                    status="status" in subresources,
                ),
            )
        )
    return kinds


def _deprecation(crd: Mapping[str, Any], version: Mapping[str, Any]) -> str | None:
    """Upstream's warning for a deprecated version: its own, or
    "<group>/<version> <Kind> is deprecated"."""
    if version.get("deprecated") is not True:
        return None
    warning = version.get("deprecationWarning")
    if isinstance(warning, str):
        return warning
    spec = or_empty(crd.get("spec"))
    kind = or_empty(spec.get("names")).get("kind", "")
    return f"{spec.get('group')}/{version.get('name')} {kind} is deprecated"


def custom_resource_strategy(custom: CustomResource, *, namespaced: bool, status: bool) -> Strategy:
    """What the server does with one version's custom resources."""
    schema = custom.schema

    def defaults(obj: dict[str, Any], on_create: bool) -> None:
        apply_schema_defaults(schema, obj)

    rules = has_rules(schema)

    def validate(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
        validate_object_meta(errs, obj, namespaced=namespaced, name_fn=name_is_dns_subdomain)
        validate_values(errs, schema, obj)
        if rules:
            validate_rules(errs, schema, obj)

    def validate_update(
        errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
    ) -> None:
        validate_object_meta_update(errs, new, old)
        validate_object_meta(errs, new, namespaced=namespaced, name_fn=name_is_dns_subdomain)
        validate_values(errs, schema, new)
        if rules:
            validate_rules(errs, schema, new, old)

    def validate_status_update(
        errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
    ) -> None:
        validate_status_metadata(errs, new, old)
        validate_values(errs, schema, new)
        if rules:
            validate_rules(errs, schema, new, old)

    def admit(obj: dict[str, Any], objects: ObjectReader) -> None:
        crd = objects.get(GROUP, "CustomResourceDefinition", custom.crd_name)
        if crd is not None and or_empty(crd.get("metadata")).get("deletionTimestamp"):
            raise Rejected(
                405, "create not allowed while custom resource definition is terminating"
            )

    def drop_status(obj: dict[str, Any]) -> None:
        obj.pop("status", None)  # written through /status only

    def keep_no_status(new: dict[str, Any], old: Mapping[str, Any]) -> None:
        if "status" not in old:
            new.pop("status", None)

    def finish_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
        ignored = {"metadata", "apiVersion", "kind", "spec"} | ({"status"} if status else set())
        if new.get("spec") == old.get("spec") and any(
            new.get(k) != old.get(k) for k in (set(new) | set(old)) - ignored
        ):
            meta = new.setdefault("metadata", {})
            meta["generation"] = int(or_empty(old.get("metadata")).get("generation") or 1) + 1

    return Strategy(
        defaults=defaults,
        admit=admit,
        prepare_for_create=drop_status if status else None,
        prepare_for_update=keep_no_status if status else None,
        finish_update=finish_update,
        validate=validate,
        validate_update=validate_update,
        validate_status_update=validate_status_update,
        table=printer_for(custom.printer_columns),
        selectable_fields=_selectable(custom.selectable_fields),
    )


def _selectable(paths: tuple[str, ...]) -> SelectableFields:
    fields = {}
    for path in paths:
        steps = parse(path)
        fields[path.lstrip(".")] = _extractor(steps)
    return SelectableFields(fields)


def _extractor(steps: list[Any]) -> Any:
    def read(obj: Mapping[str, Any]) -> str:
        found = find(obj, steps)
        return print_value(found[0]) if found and found[0] is not None else ""

    return read
