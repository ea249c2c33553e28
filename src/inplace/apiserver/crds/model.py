"""CustomResourceDefinitions as data: their validation, defaults and status, with upstream's
rules and messages (apiextensions-apiserver `pkg/apis/apiextensions/validation`,
`pkg/apiserver/schema/validation.go`, `pkg/apis/apiextensions/v1/defaults.go`, the naming
and establishing controllers). Pure functions; `kinds.py` turns a valid CRD into the kinds it
serves and `registrar.py` does the I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from inplace.api.names import dns1035_label_errors, dns1123_subdomain_errors
from inplace.api.validation.errors import (
    Bare,
    FieldError,
    as_list,
    as_map,
    child_path,
    forbidden,
    index_path,
    invalid,
    key_path,
    name_is_dns_subdomain,
    not_supported,
    or_empty,
    required,
)
from inplace.api.validation.meta import (
    validate_meta_common,
    validate_object_meta,
    validate_object_meta_update,
)
from inplace.registry.kinds import REGISTRY
from inplace.registry.schema.cel import compile_error

GROUP: Final = "apiextensions.k8s.io"
#: Upstream's finalizer: a CRD's objects are deleted before the CRD goes.
CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"
#: The CRDs upstream's VPA ships (kubernetes/autoscaler vpa-v1-crd-gen.yaml): accepted and
#: stored, while the built-in kinds they describe stay served as they are.
BUILTIN_VPA_CRDS: Final = frozenset(
    {
        "verticalpodautoscalers.autoscaling.k8s.io",
        "verticalpodautoscalercheckpoints.autoscaling.k8s.io",
    }
)
_SCOPES: Final = ("Cluster", "Namespaced")


# --- defaults ------------------------------------------------------------------------------


def default_crd(crd: dict[str, Any], on_create: bool) -> None:
    """Upstream's `SetDefaults_CustomResourceDefinitionSpec`: singular and listKind from the
    kind, conversion `None`."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    if not isinstance(spec.get("conversion"), dict):
        spec["conversion"] = {"strategy": "None"}


def prepare_crd_for_create(crd: dict[str, Any]) -> None:
    """Upstream's `PrepareForCreate`: status is the server's; the storage version is stored."""
    crd["status"] = {"storedVersions": [v] if (v := storage_version(crd)) else []}


def prepare_crd_for_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's `PrepareForUpdate`: the storage version joins `status.storedVersions`."""
    version = storage_version(new)
    stored = list(or_empty(new.get("status")).get("storedVersions") or [])
    if version and version not in stored:
        new.setdefault("status", {})["storedVersions"] = [*stored, version]


def storage_version(crd: Mapping[str, Any]) -> str | None:
    for version in or_empty(crd.get("spec")).get("versions") or ():
        if isinstance(version, Mapping) and version.get("storage") is True:
            name = version.get("name")
            return name if isinstance(name, str) else None
    return None


# --- validation ----------------------------------------------------------------------------


def validate_crd(errs: list[FieldError], crd: Mapping[str, Any]) -> None:
    """Upstream's `ValidateCustomResourceDefinition`."""
    spec = as_map(errs, crd.get("spec"), "spec")
    names = or_empty(spec.get("names"))
    wanted = f"{names.get('plural', '')}.{spec.get('group', '')}"

    def name_fn(name: str, prefix: bool) -> list[str]:
        problems = list(name_is_dns_subdomain(name, prefix))
        if name != wanted:
            problems.append('must be spec.names.plural+"."+spec.group')
        return problems

    validate_object_meta(errs, crd, namespaced=False, name_fn=name_fn)
    validate_spec(errs, spec)
    _validate_names(
        errs, or_empty(or_empty(crd.get("status")).get("acceptedNames")), "status.acceptedNames"
    )


def validate_crd_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream's `ValidateCustomResourceDefinitionUpdate`: what changes the resource's storage
    or name may not change."""
    validate_object_meta_update(errs, new, old)
    validate_crd(errs, new)
    spec, old_spec = or_empty(new.get("spec")), or_empty(old.get("spec"))
    names, old_names = or_empty(spec.get("names")), or_empty(old_spec.get("names"))
    immutable = [("spec.group", spec.get("group"), old_spec.get("group"))]
    immutable.append(("spec.names.plural", names.get("plural"), old_names.get("plural")))
    if is_established(old):
        immutable.append(("spec.scope", spec.get("scope"), old_spec.get("scope")))
        immutable.append(("spec.names.kind", names.get("kind"), old_names.get("kind")))
    for path, value, before in immutable:
        if value != before:
            errs.append(invalid(path, value, "field is immutable"))
    stored = or_empty(new.get("status")).get("storedVersions") or []
    versions = {v.get("name") for v in _versions(spec)}
    for i, name in enumerate(stored):
        if name not in versions:
            errs.append(
                invalid(
                    index_path("status.storedVersions", i), name, "must appear in spec.versions"
                )
            )


def validate_crd_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream's `ValidateUpdateCustomResourceDefinitionStatus`."""
    validate_object_meta_update(errs, new, old)
    validate_meta_common(errs, as_map(errs, new.get("metadata"), "metadata"), "metadata")
    _validate_names(
        errs, or_empty(or_empty(new.get("status")).get("acceptedNames")), "status.acceptedNames"
    )


def _versions(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in spec.get("versions") or () if isinstance(v, Mapping)]


def validate_spec(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    """Upstream's `ValidateCustomResourceDefinitionSpec` (v1: a schema per version)."""
    group = spec.get("group")
    if not group:
        errs.append(required("spec.group"))
    elif problems := dns1123_subdomain_errors(str(group)):
        errs.append(invalid("spec.group", group, ",".join(problems)))
    elif len(str(group).split(".")) < 2:
        errs.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(required("spec.scope"))
    elif scope not in _SCOPES:
        errs.append(not_supported("spec.scope", scope, _SCOPES))
    names = as_map(errs, spec.get("names"), "spec.names")
    for name in ("plural", "singular", "kind", "listKind"):
        if not names.get(name):
            errs.append(required(f"spec.names.{name}"))
    _validate_names(errs, names, "spec.names")
    if group and names.get("plural"):
        _refuse_builtin(errs, str(group), str(names["plural"]))
    versions = as_list(errs, spec.get("versions"), "spec.versions")
    if not versions:
        errs.append(
            required("spec.versions", "must have exactly one version marked as storage version")
        )
        return
    seen: set[Any] = set()
    unique, storage = True, 0
    for i, version in enumerate(versions):
        path = index_path("spec.versions", i)
        version = as_map(errs, version, path)
        version_name = version.get("name")
        if version_name in seen:
            unique = False
        seen.add(version_name)
        if version.get("storage") is True:
            storage += 1
        if problems := dns1035_label_errors(str(version_name or "")):
            errs.append(invalid(child_path(path, "name"), version_name, ",".join(problems)))
        _validate_version(errs, version, path)
    if not unique:
        errs.append(invalid("spec.versions", _VERSIONS, "must contain unique version names"))
    if storage != 1:
        errs.append(
            invalid(
                "spec.versions",
                _VERSIONS,
                "must have exactly one version marked as storage version",
            )
        )
    strategy = or_empty(spec.get("conversion")).get("strategy", "None")
    if strategy not in ("None", "Webhook"):
        errs.append(not_supported("spec.conversion.strategy", strategy, ("None", "Webhook")))


#: How the versions list is shown as the bad value (upstream prints Go's %#v of the whole list).
_VERSIONS: Final = Bare("[]apiextensions.CustomResourceDefinitionVersion{...}")


def _refuse_builtin(errs: list[FieldError], group: str, plural: str) -> None:
    """A CRD may not claim a resource this server builds in (the VPA's own CRDs excepted:
    they are accepted, and the built-in kinds keep being served)."""
    if f"{plural}.{group}" in BUILTIN_VPA_CRDS:
        return
    if any(k.group == group and k.plural == plural for k in REGISTRY.kinds):
        errs.append(
            invalid(
                "spec.names.plural",
                plural,
                f'"{plural}.{group}" is built into this API server and cannot be served by a '
                "CustomResourceDefinition",
            )
        )
    elif any(k.group == group for k in REGISTRY.kinds):
        errs.append(
            invalid(
                "spec.group",
                group,
                f'"{group}" is a group built into this API server; a CustomResourceDefinition '
                "cannot add resources to it",
            )
        )


def _validate_version(errs: list[FieldError], version: Mapping[str, Any], path: str) -> None:
    schema = or_empty(version.get("schema")).get("openAPIV3Schema")
    schema_path = child_path(child_path(path, "schema"), "openAPIV3Schema")
    if not isinstance(schema, Mapping):
        errs.append(required(schema_path, "schemas are required"))
    else:
        errs.extend(validate_structural(schema, schema_path))
    subresources = or_empty(version.get("subresources"))
    scale = subresources.get("scale")
    if isinstance(scale, Mapping):
        scale_path = child_path(child_path(path, "subresources"), "scale")
        for name, needed in (
            ("specReplicasPath", True),
            ("statusReplicasPath", True),
            ("labelSelectorPath", False),
        ):
            value = scale.get(name)
            field_path = child_path(scale_path, name)
            if not value:
                if needed:
                    errs.append(required(field_path))
                continue
            prefix = (
                ".spec."
                if name == "specReplicasPath"
                else ".status."
                if name == "statusReplicasPath"
                else None
            )
            if not isinstance(value, str) or not _SIMPLE_PATH.match(value):
                errs.append(invalid(field_path, value, "must be a simple json path"))
            elif prefix and not value.startswith(prefix):
                errs.append(
                    invalid(field_path, value, f"should be a json path under {prefix.rstrip('.')}")
                )
            elif not prefix and not value.startswith((".spec.", ".status.")):
                errs.append(
                    invalid(
                        field_path, value, "should be a json path under either .spec or .status"
                    )
                )
    for i, column in enumerate(version.get("additionalPrinterColumns") or ()):
        column_path = index_path(child_path(path, "additionalPrinterColumns"), i)
        column = or_empty(column)
        for name in ("name", "type", "jsonPath"):
            if not column.get(name):
                errs.append(required(child_path(column_path, name)))
        type_ = column.get("type")
        if type_ and type_ not in _COLUMN_TYPES:
            errs.append(not_supported(child_path(column_path, "type"), type_, _COLUMN_TYPES))


_SIMPLE_PATH: Final = re.compile(r"^(\.[A-Za-z0-9_\-]+)+$")
_COLUMN_TYPES: Final = ("boolean", "date", "integer", "number", "string")


def _validate_names(errs: list[FieldError], names: Mapping[str, Any], path: str) -> None:
    """Upstream's `ValidateCustomResourceDefinitionNames`."""
    for name in ("plural", "singular"):
        value = names.get(name)
        if value and (problems := dns1035_label_errors(str(value))):
            errs.append(invalid(child_path(path, name), value, ",".join(problems)))
    for name in ("kind", "listKind"):
        value = names.get(name)
        if value and (problems := dns1035_label_errors(str(value).lower())):
            errs.append(
                invalid(
                    child_path(path, name),
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(problems),
                )
            )
    for list_name in ("shortNames", "categories"):
        for i, value in enumerate(names.get(list_name) or ()):
            if problems := dns1035_label_errors(str(value)):
                errs.append(
                    invalid(index_path(child_path(path, list_name), i), value, ",".join(problems))
                )
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(
            invalid(
                child_path(path, "listKind"),
                names.get("listKind"),
                "kind and listKind may not be the same",
            )
        )


# --- structural schemas --------------------------------------------------------------------

_ROOT, _ITEM, _FIELD = range(3)
_EMPTY_TYPE: Final = {
    _ROOT: "must not be empty at the root",
    _ITEM: "must not be empty for specified array items",
    _FIELD: "must not be empty for specified object fields",
}


def validate_structural(schema: Mapping[str, Any], path: str) -> list[FieldError]:
    """Upstream's `ValidateStructural` (its invariants), sorted by message as upstream sorts."""
    errs: list[FieldError] = []
    _structural(errs, schema, _ROOT, path)
    return sorted(errs, key=lambda e: e.message())


def _structural(errs: list[FieldError], s: Mapping[str, Any], level: int, path: str) -> None:
    type_ = s.get("type") or ""
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    embedded = s.get("x-kubernetes-embedded-resource") is True
    properties = s.get("properties")
    if type_ == "array" and s.get("items") is None:
        errs.append(required(child_path(path, "items"), "must be specified"))
    items = s.get("items")
    if isinstance(items, Mapping):
        _structural(errs, items, _ITEM, child_path(path, "items"))
    if isinstance(properties, Mapping):
        for name, child in properties.items():
            if isinstance(child, Mapping):
                _structural(errs, child, _FIELD, key_path(child_path(path, "properties"), name))
    additional = s.get("additionalProperties")
    if additional is not None and additional is not True:
        if level == _ROOT:
            errs.append(
                forbidden(child_path(path, "additionalProperties"), "must not be used at the root")
            )
        if isinstance(properties, Mapping) and properties:
            errs.append(
                forbidden(
                    child_path(path, "additionalProperties"),
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        if isinstance(additional, Mapping):
            _structural(errs, additional, _FIELD, child_path(path, "additionalProperties"))
    if preserve is False:
        errs.append(
            invalid(
                child_path(path, "x-kubernetes-preserve-unknown-fields"),
                False,
                "must be true or undefined",
            )
        )
    if int_or_string and preserve is True:
        errs.append(
            invalid(
                child_path(path, "x-kubernetes-preserve-unknown-fields"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        errs.append(
            invalid(
                child_path(path, "x-kubernetes-embedded-resource"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if embedded and type_ != "object":
        if not type_:
            errs.append(
                required(
                    child_path(path, "type"),
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
        else:
            errs.append(
                invalid(
                    child_path(path, "type"),
                    type_,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
    elif not type_ and not int_or_string and preserve is not True:
        errs.append(required(child_path(path, "type"), _EMPTY_TYPE[level]))
    if level == _ROOT and type_ and type_ != "object":
        errs.append(invalid(child_path(path, "type"), type_, "must be object at the root"))
    if embedded and preserve is not True and not properties:
        errs.append(
            required(
                child_path(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    if isinstance(properties, Mapping) and isinstance(properties.get("metadata"), Mapping):
        _metadata(
            errs,
            properties["metadata"],
            level == _ROOT or embedded,
            level,
            key_path(child_path(path, "properties"), "metadata"),
        )
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            errs.append(
                invalid(
                    child_path(path, "pattern"),
                    pattern,
                    f"must be a valid regular expression, but isn't: {exc}",
                )
            )
    for i, rule in enumerate(s.get("x-kubernetes-validations") or ()):
        text = or_empty(rule).get("rule")
        rule_path = child_path(index_path(child_path(path, "x-kubernetes-validations"), i), "rule")
        if not isinstance(text, str) or not text:
            errs.append(required(rule_path))
        elif problem := compile_error(text):
            errs.append(invalid(rule_path, text, problem))
    if s.get("uniqueItems") is True:
        errs.append(
            forbidden(
                child_path(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )


def _metadata(
    errs: list[FieldError], s: Mapping[str, Any], check: bool, level: int, path: str
) -> None:
    if check and s.get("type") != "object":
        errs.append(invalid(child_path(path, "type"), s.get("type", ""), "must be object"))
    if level == _ROOT:
        rest = {k: v for k, v in s.items() if k not in ("type", "default", "description")}
        properties = rest.pop("properties", None)
        if (properties and set(properties) - {"name", "generateName"}) or rest:
            errs.append(
                forbidden(
                    path,
                    "must not specify anything other than name and generateName, but metadata "
                    "is implicitly specified",
                )
            )


# --- status --------------------------------------------------------------------------------


def condition(crd: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for item in or_empty(crd.get("status")).get("conditions") or ():
        if isinstance(item, Mapping) and item.get("type") == type_:
            return item
    return None


def is_established(crd: Mapping[str, Any]) -> bool:
    found = condition(crd, "Established")
    return found is not None and found.get("status") == "True"


def set_condition(
    status: dict[str, Any], type_: str, value: str, reason: str, message: str, now: str
) -> None:
    """Set a condition, keeping its transition time when its status did not change."""
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    for i, item in enumerate(conditions):
        if item.get("type") == type_:
            same = item.get("status") == value
            conditions[i] = {
                "type": type_,
                "status": value,
                "lastTransitionTime": item.get("lastTransitionTime") if same else now,
                "reason": reason,
                "message": message,
            }
            break
    else:
        conditions.append(
            {
                "type": type_,
                "status": value,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
        )
    status["conditions"] = conditions


def names_conflict(
    crd: Mapping[str, Any], others: Iterable[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """Upstream's naming controller: (reason, message) when another CRD of the group already
    accepted one of this CRD's names, else None."""
    spec = or_empty(crd.get("spec"))
    names = or_empty(spec.get("names"))
    group = spec.get("group")
    name = or_empty(crd.get("metadata")).get("name")
    for other in others:
        other_spec = or_empty(other.get("spec"))
        if other_spec.get("group") != group or or_empty(other.get("metadata")).get("name") == name:
            continue
        accepted = or_empty(or_empty(other.get("status")).get("acceptedNames"))
        taken = {
            accepted.get("plural"),
            accepted.get("singular"),
            *(accepted.get("shortNames") or ()),
        }
        for field in ("plural", "singular"):
            if names.get(field) in taken:
                return f"{field.capitalize()}Conflict", f'"{names[field]}" is already in use'
        for short in names.get("shortNames") or ():
            if short in taken:
                return "ShortNamesConflict", f'"{short}" is already in use'
        if names.get("kind") and names.get("kind") in (
            accepted.get("kind"),
            accepted.get("listKind"),
        ):
            return "KindConflict", f'"{names["kind"]}" is already in use'
        if names.get("listKind") and names.get("listKind") in (
            accepted.get("kind"),
            accepted.get("listKind"),
        ):
            return "ListKindConflict", f'"{names["listKind"]}" is already in use'
    return None


@functools.cache
def _version_key(name: str) -> tuple[int, int, int, str]:
    """Upstream's version priority: GA before beta before alpha, higher numbers first, then
    non-Kubernetes-style names alphabetically."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if match is None:
        return (3, 0, 0, name)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), name)


def by_priority(names: Iterable[str]) -> list[str]:
    return sorted(names, key=_version_key)
