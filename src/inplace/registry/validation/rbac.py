"""RBAC: Roles, ClusterRoles (with their aggregation rule), RoleBindings and
ClusterRoleBindings, as upstream's ``pkg/apis/rbac/validation`` checks them.

Names of roles and bindings follow upstream's "minimal" rule (a valid path segment: anything
but ``.``, ``..``, or a name holding ``/`` or ``%``), which is why ``system:node`` is a valid
name; a binding's ``roleRef`` may never change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.validation.errors import (
    FieldError,
    as_list,
    as_map,
    as_str,
    child_path,
    index_path,
    invalid,
    lookup,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    required,
)
from inplace.api.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)

__all__ = [
    "RBAC_GROUP",
    "path_segment_name_errors",
    "validate_cluster_role",
    "validate_cluster_role_binding",
    "validate_cluster_role_binding_update",
    "validate_role",
    "validate_role_binding",
    "validate_role_binding_update",
]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
_SUBJECT_KINDS: Final = ("ServiceAccount", "User", "Group")


def path_segment_name_errors(name: str, prefix: bool = False) -> list[str]:
    """Upstream ``path.IsValidPathSegmentName`` (the rule roles and bindings are named by)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def _strings(errs: list[FieldError], value: object, path: str) -> list[str]:
    return [
        as_str(errs, item, index_path(path, i)) for i, item in enumerate(as_list(errs, value, path))
    ]


def _validate_rule(
    errs: list[FieldError], rule: Mapping[str, Any], namespaced: bool, path: str
) -> None:
    """Upstream ``validatePolicyRule``."""
    verbs = _strings(errs, rule.get("verbs"), child_path(path, "verbs"))
    groups = _strings(errs, rule.get("apiGroups"), child_path(path, "apiGroups"))
    resources = _strings(errs, rule.get("resources"), child_path(path, "resources"))
    names = _strings(errs, rule.get("resourceNames"), child_path(path, "resourceNames"))
    urls = _strings(errs, rule.get("nonResourceURLs"), child_path(path, "nonResourceURLs"))
    if not verbs:
        errs.append(required(child_path(path, "verbs"), "verbs must contain at least one value"))
    if urls:
        if namespaced:
            errs.append(
                invalid(
                    child_path(path, "nonResourceURLs"),
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if groups or resources or names:
            errs.append(
                invalid(
                    child_path(path, "nonResourceURLs"),
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return
    if not groups:
        errs.append(
            required(
                child_path(path, "apiGroups"), "resource rules must supply at least one api group"
            )
        )
    if not resources:
        errs.append(
            required(
                child_path(path, "resources"), "resource rules must supply at least one resource"
            )
        )
    if names and len(resources) > 1:
        errs.append(
            required(
                child_path(path, "resourceNames"),
                "resource names cannot apply to multiple resources",
            )
        )


def _validate_rules(errs: list[FieldError], obj: Mapping[str, Any], namespaced: bool) -> None:
    for i, rule in enumerate(objects_in(as_list(errs, obj.get("rules"), "rules"))):
        _validate_rule(errs, rule, namespaced, index_path("rules", i))


def validate_role(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateRole``."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=path_segment_name_errors)
    _validate_rules(errs, obj, namespaced=True)


def validate_cluster_role(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateClusterRole``: its rules, and an aggregation rule with at least one
    valid selector."""
    validate_object_meta(errs, obj, namespaced=False, name_fn=path_segment_name_errors)
    _validate_rules(errs, obj, namespaced=False)
    rule = obj.get("aggregationRule")
    if rule is None:
        return
    selectors_path = "aggregationRule.clusterRoleSelectors"
    selectors = as_list(
        errs, as_map(errs, rule, "aggregationRule").get("clusterRoleSelectors"), selectors_path
    )
    if not selectors:
        errs.append(
            required(
                selectors_path,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            )
        )
    for i, selector in enumerate(selectors):
        validate_label_selector(errs, selector, index_path(selectors_path, i))


def _validate_role_ref(
    errs: list[FieldError], obj: Mapping[str, Any], kinds: tuple[str, ...]
) -> None:
    ref = as_map(errs, obj.get("roleRef"), "roleRef")
    group = as_str(errs, ref.get("apiGroup"), "roleRef.apiGroup")
    if group != RBAC_GROUP:
        errs.append(not_supported("roleRef.apiGroup", group, [RBAC_GROUP]))
    kind = as_str(errs, ref.get("kind"), "roleRef.kind")
    if kind not in kinds:
        errs.append(not_supported("roleRef.kind", kind, list(kinds)))
    name = as_str(errs, ref.get("name"), "roleRef.name")
    if not name:
        errs.append(required("roleRef.name"))
    else:
        errs.extend(invalid("roleRef.name", name, msg) for msg in path_segment_name_errors(name))


def _validate_subject(
    errs: list[FieldError], subject: Mapping[str, Any], namespaced: bool, path: str
) -> None:
    """Upstream ``validateRoleBindingSubject``."""
    name = as_str(errs, subject.get("name"), child_path(path, "name"))
    kind = as_str(errs, subject.get("kind"), child_path(path, "kind"))
    group = as_str(errs, subject.get("apiGroup"), child_path(path, "apiGroup"))
    namespace = as_str(errs, subject.get("namespace"), child_path(path, "namespace"))
    if not name:
        errs.append(required(child_path(path, "name")))
    if kind == "ServiceAccount":
        if name:
            errs.extend(
                invalid(child_path(path, "name"), name, msg)
                for msg in name_is_dns_subdomain(name, False)
            )
        if group:
            errs.append(not_supported(child_path(path, "apiGroup"), group, [""]))
        if not namespaced and not namespace:
            errs.append(required(child_path(path, "namespace")))
    elif kind in ("User", "Group"):
        if not name:
            what = "user" if kind == "User" else "group"
            errs.append(invalid(child_path(path, "name"), name, f"{what} name cannot be empty"))
        if group != RBAC_GROUP:
            errs.append(not_supported(child_path(path, "apiGroup"), group, [RBAC_GROUP]))
    else:
        errs.append(not_supported(child_path(path, "kind"), kind, list(_SUBJECT_KINDS)))


def _validate_binding(
    errs: list[FieldError], obj: Mapping[str, Any], namespaced: bool, kinds: tuple[str, ...]
) -> None:
    validate_object_meta(errs, obj, namespaced=namespaced, name_fn=path_segment_name_errors)
    _validate_role_ref(errs, obj, kinds)
    for i, subject in enumerate(objects_in(as_list(errs, obj.get("subjects"), "subjects"))):
        _validate_subject(errs, subject, namespaced, index_path("subjects", i))


def validate_role_binding(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateRoleBinding``: a RoleBinding may name a Role or a ClusterRole."""
    _validate_binding(errs, obj, True, ("Role", "ClusterRole"))


def validate_cluster_role_binding(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateClusterRoleBinding``: only a ClusterRole."""
    _validate_binding(errs, obj, False, ("ClusterRole",))


def _role_ref_unchanged(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    ref, old_ref = lookup(new, "roleRef"), lookup(old, "roleRef")
    if ref != old_ref:
        errs.append(invalid("roleRef", ref, "cannot change roleRef"))


def validate_role_binding_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateRoleBindingUpdate``: the roleRef is immutable."""
    validate_role_binding(errs, new)
    validate_object_meta_update(errs, new, old)
    _role_ref_unchanged(errs, new, old)


def validate_cluster_role_binding_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateClusterRoleBindingUpdate``: the roleRef is immutable."""
    validate_cluster_role_binding(errs, new)
    validate_object_meta_update(errs, new, old)
    _role_ref_unchanged(errs, new, old)
