"""The API server's validation entry points: a kind's rules, as its strategy names them.

:func:`validate_create`, :func:`validate_update` and :func:`validate_status_update` run what
a kind's strategy (:mod:`inplace.registry.strategy`) says for a write, over the rules shared
with every component in :mod:`inplace.api.validation` (metadata, pods, the resize) and the
kinds' own rules beside this module (workloads, storage, RBAC, admission registration …).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from inplace.api.validation import (
    FieldError,
    UpdateRule,
    check_update,
    guarded,
    raise_if_errors,
    require_object,
)
from inplace.api.validation.errors import invalid, lookup, name_is_dns_subdomain
from inplace.api.validation.meta import validate_object_meta, validate_object_meta_update

if TYPE_CHECKING:
    from inplace.registry.kinds import Kind

__all__ = ["validate_create", "validate_status_update", "validate_update"]


def _validate_new(kind: Kind, errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """The kind's create rule; a kind without one: its metadata only."""
    rule = kind.strategy.validate
    if rule is not None:
        rule(errs, obj)
    else:
        validate_object_meta(errs, obj, namespaced=kind.namespaced, name_fn=name_is_dns_subdomain)


def _update_rule(kind: Kind, subresource: str | None) -> UpdateRule:
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


def validate_create(kind: Kind, obj: Mapping[str, Any], *, namespace: str | None = None) -> None:
    """Validate a new object (after defaulting); raise :class:`ValidationError` listing every
    bad field. `namespace`, when given, is the request's: the object's must agree."""
    errs: list[FieldError] = []
    if require_object(errs, obj):
        guarded(errs, lambda: _validate_new(kind, errs, obj))
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
    raise_if_errors(kind.kind, kind.group, obj, errs)


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
    check_update(kind.kind, kind.group, _update_rule(kind, subresource), new, old)


def validate_status_update(kind: Kind, new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """Validate a write to the ``status`` subresource (the spec is the old one's)."""
    validate_update(kind, new, old, subresource="status")
