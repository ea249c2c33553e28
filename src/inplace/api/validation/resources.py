"""Quantities and container resource requirements (upstream ``validateResourceRequirements``,
``ValidateResourceQuantityValue`` and the resource-name rules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from inplace.api.names import (
    qualified_name_errors,
)
from inplace.api.quantity import ERR_FORMAT_WRONG, Quantity, QuantityError
from inplace.api.validation.errors import (
    NEGATIVE_MSG,
    Bare,
    FieldError,
    as_list,
    as_map,
    child_path,
    forbidden,
    index_path,
    invalid,
    key_path,
    objects_in,
    required,
)

# -- quantities and resource requirements ---------------------------------------------------------

CPU: Final = "cpu"
MEMORY: Final = "memory"
_HUGEPAGES_PREFIX: Final = "hugepages-"
_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES: Final = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "services.loadbalancers",
        "services.nodeports",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
    }
)
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "services.loadbalancers",
        "services.nodeports",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
    }
)


def _is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX)


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_hugepages(name)


def _is_standard_resource(name: str) -> bool:
    return (
        name in _STANDARD_RESOURCES
        or _is_hugepages(name)
        or name.startswith("requests." + _HUGEPAGES_PREFIX)
    )


def _container_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """Upstream ``validateContainerResourceName``."""
    errs = [invalid(path, name, msg) for msg in qualified_name_errors(name)]
    if not errs and "/" not in name and not _is_standard_resource(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def parse_quantity(errs: list[FieldError], value: object, path: str) -> Quantity | None:
    """A JSON value as a quantity; a bad one is reported at `path` with upstream's reason."""
    if isinstance(value, bool) or not (value is None or isinstance(value, str | int | float)):
        errs.append(invalid(path, value, ERR_FORMAT_WRONG))
        return None
    try:
        return Quantity.from_json(value)
    except QuantityError as exc:
        errs.append(invalid(path, value, exc.reason))
    except (ValueError, OverflowError, ArithmeticError):
        errs.append(invalid(path, value, ERR_FORMAT_WRONG))
    return None


def quantity_value_checks(errs: list[FieldError], name: str, q: Quantity, path: str) -> None:
    """Upstream ``ValidateResourceQuantityValue``: non-negative, whole where it must be."""
    if q.sign() < 0:
        errs.append(invalid(path, str(q), NEGATIVE_MSG))
    if (name in _INTEGER_RESOURCES or _is_extended(name)) and q.milli_value() % 1000:
        errs.append(invalid(path, Bare(str(q)), "must be an integer"))


def parse_resource_list(
    errs: list[FieldError],
    value: object,
    path: str,
    *,
    name_check: Callable[[str, str], list[FieldError]] | None = None,
) -> dict[str, Quantity]:
    parsed: dict[str, Quantity] = {}
    for name, raw in as_map(errs, value, path).items():
        name = str(name)
        item_path = key_path(path, name)
        if name_check is not None:
            errs.extend(name_check(name, item_path))
        q = parse_quantity(errs, raw, item_path)
        if q is None:
            continue
        quantity_value_checks(errs, name, q, item_path)
        parsed[name] = q
    return parsed


def validate_resource_requirements(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``validateResourceRequirements``: names, quantities, requests <= limits."""
    res = as_map(errs, value, path)
    lim_path, req_path = child_path(path, "limits"), child_path(path, "requests")
    raw_limits = as_map(errs, res.get("limits"), lim_path)
    limits = parse_resource_list(
        errs, raw_limits, lim_path, name_check=_container_resource_name_errors
    )
    requests = parse_resource_list(
        errs, res.get("requests"), req_path, name_check=_container_resource_name_errors
    )
    for name, quantity in requests.items():
        limit = limits.get(name)
        if limit is not None:
            if quantity != limit and not _overcommit_allowed(name):
                errs.append(
                    invalid(req_path, str(quantity), f"must be equal to {name} limit of {limit}")
                )
            elif quantity > limit:
                errs.append(
                    invalid(
                        req_path,
                        str(quantity),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif name not in raw_limits and not _overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
    names = set(limits) | set(requests)
    if any(_is_hugepages(n) for n in names) and not names & {CPU, MEMORY}:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    claims_path = child_path(path, "claims")
    for i, claim in enumerate(objects_in(as_list(errs, res.get("claims"), claims_path))):
        if not claim.get("name"):
            errs.append(required(index_path(claims_path, i)))
