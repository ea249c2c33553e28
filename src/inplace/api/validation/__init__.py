"""Validation of API objects: upstream's rules, field paths and messages, every error at once.

The API server validates each write after :func:`inplace.api.defaults.apply_defaults` (as
upstream validates after defaulting, so fields such as ``restartPolicy`` or
``terminationGracePeriodSeconds`` are *required* here) and answers a
:class:`ValidationError` with a 422 ``kind: Status`` whose text is what kube-apiserver would
send, so ``kubectl`` output and client error handling behave the same::

    The Pod "web" is invalid: spec.containers[0].resources.requests: Invalid value: "2":
    must be less than or equal to cpu limit of 1

Sources: ``pkg/apis/core/validation/validation.go`` (``ValidatePodCreate``,
``ValidatePodUpdate``, ``ValidatePodStatusUpdate``, ``ValidatePodResize`` as of v1.33,
``validateResourceRequirements``, ``validateResizePolicy``), apps/batch/policy/scheduling/
coordination validation, apimachinery ``ObjectMeta`` and ``util/validation`` (the DNS-1123 and
qualified-name messages), ``util/validation/field/errors.go`` (the message format).

Deliberate differences, each because this server works on JSON rather than Go structs:

* Input that upstream would fail to *decode* (a quantity that does not parse, a string where
  a number belongs) is reported as a field error naming the exact field, with upstream's
  decode message where it has one (``quantities must match the regular expression ...``),
  instead of a 400 naming no field.
* Composite bad values (objects, lists) are rendered as JSON where Go prints ``%#v``; string
  maps, the common case in selector errors, are printed the Go way
  (``map[string]string{"app":"web"}``). The diff appended to "pod updates may not change
  fields other than ..." lists the changed fields instead of ``cmp.Diff`` output. A
  ``[]string`` value is printed the Go way where upstream's messages show one
  (``[]string{"10.96.0.10"}``).
* Memory limit decreases on resize follow v1.34 (allowed; the node agent shrinks without
  killing, see DESIGN.md) unless ``allow_memory_limit_decrease=False`` asks for v1.33's rule.
* Job pod templates accept changes to container resources that the running pods can follow
  in place (the ``pods/resize`` rules, reported under ``spec.template``); upstream makes the
  whole template immutable.
* Events must name an ``involvedObject`` (ours; every component sets one).

Validation never raises anything but :class:`ValidationError`, whatever JSON it is given: a
crash here would be a 500 for bad input.

The rules are cut by concern: :mod:`.errors` (field errors, paths, formats, typed access to
JSON), :mod:`.meta` (metadata, labels, selectors), :mod:`.resources` (quantities, resource
requirements), :mod:`.pods` (containers, pod specs and templates, pods), :mod:`.resize`
(``pods/resize``), :mod:`.workloads` (deployments, replica sets, jobs, PDBs), :mod:`.cluster`
(the other kinds) and :mod:`.equality` (semantic equality and diffs). This module holds the
entry points the API server calls; which rules apply to a kind is its strategy's choice
(:mod:`inplace.api.strategy`, paired with kinds in :mod:`inplace.api.kinds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from inplace.api.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from inplace.api.validation.errors import (
    DUPLICATE,
    FORBIDDEN,
    INTERNAL,
    INVALID,
    NOT_FOUND,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    TYPE_INVALID,
    Bare,
    FieldError,
    ValidationError,
    invalid,
    lookup,
    name_is_dns_subdomain,
    type_invalid,
)
from inplace.api.validation.meta import (
    object_name,
    validate_object_meta,
    validate_object_meta_update,
)
from inplace.api.validation.resize import validate_pod_resize

if TYPE_CHECKING:
    from inplace.api.kinds import Kind

__all__ = [
    "DUPLICATE",
    "FORBIDDEN",
    "INTERNAL",
    "INVALID",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "REQUIRED",
    "TOO_LONG",
    "TYPE_INVALID",
    "FieldError",
    "ValidationError",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_value_errors",
    "qualified_name_errors",
    "validate_create",
    "validate_resize",
    "validate_status_update",
    "validate_update",
]

_UpdateRule = Callable[[list[FieldError], Mapping[str, Any], Mapping[str, Any]], None]


def _validate_new(kind: Kind, errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """The kind's create rule; a kind without one: its metadata only."""
    rule = kind.strategy.validate
    if rule is not None:
        rule(errs, obj)
    else:
        validate_object_meta(errs, obj, namespaced=kind.namespaced, name_fn=name_is_dns_subdomain)


def _update_rule(kind: Kind, subresource: str | None) -> _UpdateRule:
    """The whole rule for an update through the object itself or one of its subresources."""
    strategy = kind.strategy
    if subresource == "status":
        return strategy.validate_status_update
    if subresource is not None:
        return strategy.subresources[subresource].validate
    if strategy.validate_update is not None:
        return strategy.validate_update

    def standard(errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
        validate_object_meta_update(errs, new, old)
        _validate_new(kind, errs, new)

    return standard


def _raise(kind: str, group: str, obj: object, errs: list[FieldError]) -> None:
    if errs:
        raise ValidationError(kind, object_name(obj), errs, group=group)


def _guarded(errs: list[FieldError], run: Callable[[], None]) -> None:
    """Run a validator; JSON nested deeper than Python's recursion allows is an error of the
    object, not of the server."""
    try:
        run()
    except RecursionError:
        errs.append(invalid("", Bare("<object>"), "object is nested too deeply"))


def _require_object(errs: list[FieldError], obj: object) -> bool:
    if isinstance(obj, Mapping):
        return True
    errs.append(type_invalid("", obj, "object"))
    return False


def _check_update(
    kind: str, group: str, rule: _UpdateRule, new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    errs: list[FieldError] = []
    if _require_object(errs, new) and isinstance(old, Mapping):
        _guarded(errs, lambda: rule(errs, new, old))
    _raise(kind, group, new, errs)


def validate_create(kind: Kind, obj: Mapping[str, Any], *, namespace: str | None = None) -> None:
    """Validate a new object (after defaulting); raise :class:`ValidationError` listing every
    bad field. `namespace`, when given, is the request's: the object's must agree."""
    errs: list[FieldError] = []
    if _require_object(errs, obj):
        _guarded(errs, lambda: _validate_new(kind, errs, obj))
        object_ns = lookup(obj, "metadata", "namespace")
        if namespace is not None and object_ns and object_ns != namespace:
            errs.append(
                invalid(
                    "metadata.namespace",
                    object_ns,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                )
            )
    _raise(kind.kind, kind.group, obj, errs)


def validate_update(
    kind: Kind,
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    subresource: str | None = None,
) -> None:
    """Validate an update of `old` to `new` through the object itself or `subresource`
    (``status``, or one the kind's strategy declares, such as ``resize``): `new` is valid and
    changes only what that endpoint may change."""
    _check_update(kind.kind, kind.group, _update_rule(kind, subresource), new, old)


def validate_status_update(kind: Kind, new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """Validate a write to the ``status`` subresource (the spec is the old one's)."""
    validate_update(kind, new, old, subresource="status")


def validate_resize(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    allow_memory_limit_decrease: bool = True,
) -> None:
    """Validate a write to ``pods/NAME/resize`` (upstream ``ValidatePodResize``; see
    :mod:`inplace.api.validation.resize`): the resize strategy has already taken only the
    containers' resources and resize policies from the request; only cpu and memory may
    change, nothing may be removed, the QoS class must stay, containers keep their order
    and the new pod must be valid. Memory limit decreases are allowed (v1.34) unless
    `allow_memory_limit_decrease` is False (v1.33: only with ``RestartContainer``).
    """

    def rule(errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
        validate_pod_resize(errs, new, old, allow_memory_limit_decrease=allow_memory_limit_decrease)

    _check_update("Pod", "", rule, new, old)
