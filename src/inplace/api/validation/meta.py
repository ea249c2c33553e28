"""Object metadata, labels, annotations, owner references, finalizers and label selectors.

Upstream ``ValidateObjectMeta``, ``ValidateObjectMetaUpdate`` and ``ValidateLabelSelector``
(apimachinery), shared by every kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.names import byte_len as _blen
from inplace.api.names import (
    label_value_errors,
    qualified_name_errors,
)
from inplace.api.validation.equality import semantic
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    FieldError,
    NameFn,
    as_list,
    as_map,
    as_str,
    as_str_map,
    child_path,
    forbidden,
    go_quote,
    index_path,
    invalid,
    lookup,
    name_is_dns_label,
    nonnegative,
    objects_in,
    or_empty,
    required,
    too_long,
)

# -- metadata ------------------------------------------------------------------------------------

#: Upstream's standard finalizers, plus the CRD cleanup finalizer, which upstream's
#: apiextensions validation (apimachinery's, which wants a qualified name only) lets through.
STANDARD_FINALIZERS: Final = frozenset(
    {"kubernetes", "orphan", "foregroundDeletion", "customresourcecleanup.apiextensions.k8s.io"}
)
_TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024


def validate_labels(errs: list[FieldError], value: object, path: str) -> dict[str, str]:
    """Upstream ``ValidateLabels``: keys are qualified names, values valid label values."""
    labels = as_str_map(errs, value, path)
    for k, v in labels.items():
        errs.extend(invalid(path, k, msg) for msg in qualified_name_errors(k))
        errs.extend(invalid(path, v, msg) for msg in label_value_errors(v))
    return labels


def validate_annotations(errs: list[FieldError], value: object, path: str) -> dict[str, str]:
    annotations = as_str_map(errs, value, path)
    total = 0
    for k, v in annotations.items():
        errs.extend(invalid(path, k, msg) for msg in qualified_name_errors(k.lower()))
        total += _blen(k) + _blen(v)
    if total > _TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, _TOTAL_ANNOTATION_SIZE_LIMIT))
    return annotations


def validate_object_meta(
    errs: list[FieldError],
    obj: Mapping[str, Any],
    *,
    namespaced: bool,
    name_fn: NameFn,
    path: str = "metadata",
) -> Mapping[str, Any]:
    """Upstream ``ValidateObjectMeta`` for a whole object's ``metadata``; returns it."""
    meta = as_map(errs, obj.get("metadata"), path)
    generate_name = as_str(errs, meta.get("generateName"), child_path(path, "generateName"))
    if generate_name:
        errs.extend(
            invalid(child_path(path, "generateName"), generate_name, msg)
            for msg in name_fn(generate_name, True)
        )
    name = as_str(errs, meta.get("name"), child_path(path, "name"))
    if not name:
        errs.append(required(child_path(path, "name"), "name or generateName is required"))
    else:
        errs.extend(invalid(child_path(path, "name"), name, msg) for msg in name_fn(name, False))
    namespace = as_str(errs, meta.get("namespace"), child_path(path, "namespace"))
    if namespaced:
        if not namespace:
            errs.append(required(child_path(path, "namespace")))
        else:
            errs.extend(
                invalid(child_path(path, "namespace"), namespace, msg)
                for msg in name_is_dns_label(namespace, False)
            )
    elif namespace:
        errs.append(forbidden(child_path(path, "namespace"), "not allowed on this type"))
    validate_meta_common(errs, meta, path)
    return meta


def validate_meta_common(errs: list[FieldError], meta: Mapping[str, Any], path: str) -> None:
    nonnegative(errs, meta.get("generation"), child_path(path, "generation"))
    validate_labels(errs, meta.get("labels"), child_path(path, "labels"))
    validate_annotations(errs, meta.get("annotations"), child_path(path, "annotations"))
    refs_path = child_path(path, "ownerReferences")
    controllers = []
    for ref in objects_in(as_list(errs, meta.get("ownerReferences"), refs_path)):
        api_version = ref.get("apiVersion")
        version = api_version.rsplit("/", 1)[-1] if isinstance(api_version, str) else ""
        if not version:
            errs.append(
                invalid(
                    child_path(refs_path, "apiVersion"), api_version, "version must not be empty"
                )
            )
        for key in ("kind", "name", "uid"):
            value = ref.get(key)
            if not isinstance(value, str) or not value:
                errs.append(invalid(child_path(refs_path, key), value or "", "must not be empty"))
        if ref.get("controller") is True:
            controllers.append(f"{ref.get('kind')}/{ref.get('name')}")
    if len(controllers) > 1:
        errs.append(
            invalid(
                refs_path,
                meta.get("ownerReferences"),
                'Only one reference can have Controller set to true. Found "true" in '
                f"references for {controllers[0]} and {controllers[1]}",
            )
        )
    fin_path = child_path(path, "finalizers")
    finalizers = as_list(errs, meta.get("finalizers"), fin_path)
    for i, finalizer in enumerate(finalizers):
        text = as_str(errs, finalizer, index_path(fin_path, i))
        errs.extend(invalid(fin_path, text, msg) for msg in qualified_name_errors(text))
        if "/" not in text and text not in STANDARD_FINALIZERS:
            errs.append(
                invalid(
                    index_path(fin_path, i),
                    text,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            invalid(
                fin_path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"
            )
        )


def validate_object_meta_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateObjectMetaUpdate``: identity and timestamps never change."""
    path = "metadata"
    new_meta, old_meta = or_empty(new.get("metadata")), or_empty(old.get("metadata"))
    if old_meta.get("deletionTimestamp"):
        old_fins = old_meta.get("finalizers")
        new_fins = new_meta.get("finalizers")
        extra = sorted(
            {f for f in (new_fins if isinstance(new_fins, list) else []) if isinstance(f, str)}
            - {f for f in (old_fins if isinstance(old_fins, list) else []) if isinstance(f, str)}
        )
        if extra:
            listed = ", ".join(go_quote(f) for f in extra)
            errs.append(
                forbidden(
                    child_path(path, "finalizers"),
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{listed}}}",
                )
            )
    new_gen, old_gen = new_meta.get("generation"), old_meta.get("generation")
    if isinstance(new_gen, int) and isinstance(old_gen, int) and new_gen < old_gen:
        errs.append(invalid(child_path(path, "generation"), new_gen, "must not be decremented"))
    for key in (
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ):
        new_value, old_value = new_meta.get(key), old_meta.get(key)
        if semantic(new_value) != semantic(old_value):
            shown = new_value if new_value is not None or key != "name" else ""
            errs.append(invalid(child_path(path, key), shown, IMMUTABLE_MSG))


def validate_status_metadata(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """What every status update checks of the metadata: identity unchanged, the rest valid."""
    validate_object_meta_update(errs, new, old)
    validate_meta_common(errs, as_map(errs, new.get("metadata"), "metadata"), "metadata")


def object_name(obj: object) -> str:
    name = lookup(obj, "metadata", "name")
    if isinstance(name, str) and name:
        return name
    generate = lookup(obj, "metadata", "generateName")
    return generate if isinstance(generate, str) else ""


# -- label selectors -----------------------------------------------------------------------------

_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(errs: list[FieldError], value: object, path: str) -> bool:
    """Upstream ``ValidateLabelSelector``; True when the selector is usable for matching."""
    before = len(errs)
    selector = as_map(errs, value, path)
    validate_labels(errs, selector.get("matchLabels"), child_path(path, "matchLabels"))
    exprs_path = child_path(path, "matchExpressions")
    for i, expr in enumerate(
        objects_in(as_list(errs, selector.get("matchExpressions"), exprs_path))
    ):
        expr_path = index_path(exprs_path, i)
        operator = as_str(errs, expr.get("operator"), child_path(expr_path, "operator"))
        values = as_list(errs, expr.get("values"), child_path(expr_path, "values"))
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(
                    required(
                        child_path(expr_path, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    forbidden(
                        child_path(expr_path, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(
                invalid(
                    child_path(expr_path, "operator"), operator, "not a valid selector operator"
                )
            )
        key = as_str(errs, expr.get("key"), child_path(expr_path, "key"))
        errs.extend(
            invalid(child_path(expr_path, "key"), key, msg) for msg in qualified_name_errors(key)
        )
        for j, item in enumerate(values):
            item_path = index_path(child_path(expr_path, "values"), j)
            text = as_str(errs, item, item_path)
            errs.extend(invalid(item_path, text, msg) for msg in label_value_errors(text))
    return len(errs) == before


def selector_is_empty(selector: Mapping[str, Any]) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a (validated) ``metav1.LabelSelector`` selects `labels`."""
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, Mapping):
        for k, v in match_labels.items():
            if labels.get(k) != (v if v is not None else ""):
                return False
    expressions = selector.get("matchExpressions")
    for expr in objects_in(expressions):
        key, op = expr.get("key"), expr.get("operator")
        raw_values = expr.get("values")
        values = raw_values if isinstance(raw_values, list) else []
        present = isinstance(key, str) and key in labels
        value = labels.get(key) if isinstance(key, str) else None
        if (
            (op == "In" and not (present and value in values))
            or (op == "NotIn" and present and value in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def template_labels(template: object) -> dict[str, str]:
    labels = lookup(template, "metadata", "labels")
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}
