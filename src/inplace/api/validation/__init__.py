"""Validation of API objects: upstream's rules, field paths and messages, every error at once.

The API server validates each write after :func:`inplace.registry.strategy.apply_defaults` (as
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
(:mod:`inplace.registry.strategy`, paired with kinds in :mod:`inplace.registry.kinds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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
    type_invalid,
)
from inplace.api.validation.meta import object_name
from inplace.api.validation.resize import validate_pod_resize

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
    "UpdateRule",
    "ValidationError",
    "check_update",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "guarded",
    "label_value_errors",
    "qualified_name_errors",
    "raise_if_errors",
    "require_object",
    "validate_resize",
]

UpdateRule = Callable[[list[FieldError], Mapping[str, Any], Mapping[str, Any]], None]
"""An update rule: appends the errors of changing `old` (third) into `new` (second)."""


def raise_if_errors(kind: str, group: str, obj: object, errs: list[FieldError]) -> None:
    """Raise the :class:`ValidationError` of `kind` listing `errs`, if there are any."""
    if errs:
        raise ValidationError(kind, object_name(obj), errs, group=group)


def guarded(errs: list[FieldError], run: Callable[[], None]) -> None:
    """Run a validator; JSON nested deeper than Python's recursion allows is an error of the
    object, not of the server."""
    try:
        run()
    except RecursionError:
        errs.append(invalid("", Bare("<object>"), "object is nested too deeply"))


def require_object(errs: list[FieldError], obj: object) -> bool:
    """Whether `obj` is a JSON object; if not, the error saying so is appended."""
    if isinstance(obj, Mapping):
        return True
    errs.append(type_invalid("", obj, "object"))
    return False


def check_update(
    kind: str, group: str, rule: UpdateRule, new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Run an update `rule` over `new` and `old`; raise every error it found at once."""
    errs: list[FieldError] = []
    if require_object(errs, new) and isinstance(old, Mapping):
        guarded(errs, lambda: rule(errs, new, old))
    raise_if_errors(kind, group, new, errs)


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

    check_update("Pod", "", rule, new, old)
