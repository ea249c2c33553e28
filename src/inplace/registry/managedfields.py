"""``metadata.managedFields``: the stored form of who owns which field.

Upstream keeps one entry per manager, operation (``Apply`` or ``Update``), subresource and,
for updates, API version, each with its ``fieldsV1`` set and the time of the manager's last
change (apimachinery's ``util/managedfields``: ``managedfields.go``, ``buildmanagerinfo.go``,
``capmanagers.go``, ``conflict.go``, ``scalehandler.go``). This module is that form: entries
decoded and encoded exactly as upstream does (identifiers, order, the ten-entry cap, the
``/scale`` view), the 409 of a conflict with upstream's words, and the checks of a write's
``fieldManager`` and ``force``. What an update or an apply does to the entries is
:mod:`inplace.registry.fieldmanager`'s.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from inplace.api.timestamps import parse_rfc3339
from inplace.api.validation.errors import (
    TOO_LONG,
    FieldError,
    forbidden,
    go_quote,
    invalid,
    required,
)
from inplace.registry import fieldpath
from inplace.registry.fieldpath import FieldsError, Set

__all__ = [
    "ANCIENT_CHANGES",
    "LAST_APPLIED",
    "ApplyConflict",
    "ApplyRefused",
    "Entry",
    "Managed",
    "cap_update_managers",
    "decode",
    "encode",
    "is_reset",
    "manager_from_user_agent",
    "manager_identifier",
    "option_errors",
    "parent_entries_after_scale",
    "scale_entries",
    "set_managed_fields",
]

#: kubectl's client-side apply annotation (upstream ``LastAppliedConfigAnnotation``).
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
#: Upstream's limits: update entries kept, a field manager's length.
MAX_UPDATE_MANAGERS: Final = 10
MAX_MANAGER_LENGTH: Final = 128
ANCIENT_CHANGES: Final = "ancient-changes"


class ApplyConflict(Exception):
    """An apply that would change fields other managers own (upstream's 409)."""

    def __init__(self, conflicts: Mapping[str, Set]) -> None:
        self.conflicts = [
            (manager, path)
            for manager in sorted(conflicts)
            for path in fieldpath.paths(conflicts[manager])
        ]
        super().__init__(_conflict_message(self.conflicts))

    @property
    def message(self) -> str:
        return str(self)

    def causes(self) -> list[dict[str, str]]:
        return [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {_print_manager(manager)}",
                "field": fieldpath.format_path(path),
            }
            for manager, path in self.conflicts
        ]


class ApplyRefused(Exception):
    """An apply upstream refuses before merging, with its code (400, 422, 500)."""

    def __init__(self, code: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


def _conflict_message(conflicts: list[tuple[str, fieldpath.Path]]) -> str:
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        return (
            f"Apply failed with 1 conflict: conflict with {_print_manager(manager)}: "
            f"{fieldpath.format_path(path)}"
        )
    lines: list[str] = []
    current = None
    for manager, path in conflicts:
        if manager != current:
            lines.append(f"conflicts with {_print_manager(manager)}:")
            current = manager
        lines.append(f"- {fieldpath.format_path(path)}")
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


@functools.lru_cache(maxsize=1024)
def _print_manager(identifier: str) -> str:
    """Upstream's printManager: ``"kubectl-client-side-apply" using apps/v1``."""
    entry = orjson.loads(identifier)
    shown = go_quote(entry.get("manager", ""))
    if entry.get("subresource"):
        shown += f' with subresource "{entry["subresource"]}"'
    if entry.get("operation") == "Update":
        return f"{shown} using {entry.get('apiVersion', '')}"
    return shown


# --- entries -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One manager's fields (upstream's VersionedSet): the set, the API version it was
    written at, and whether it came from an apply."""

    fields: Set
    api_version: str
    applied: bool
    #: Whether `fields` is in upstream's order already (read from a stored object, which the
    #: server wrote ordered), so it is written back as it is.
    ordered: bool = dataclasses.field(default=False, compare=False)

    def with_fields(self, fields: Set) -> Entry:
        """This entry owning `fields` instead (itself when they are the same set)."""
        if fields is self.fields:
            return self
        return Entry(fields, self.api_version, self.applied)


@dataclass
class Managed:
    """Every manager's entry by identifier, and the time of each one's last change."""

    fields: dict[str, Entry]
    times: dict[str, str | None]

    def copy(self) -> Managed:
        return Managed(dict(self.fields), dict(self.times))


@functools.lru_cache(maxsize=4096)
def manager_identifier(
    manager: str, operation: str, api_version: str, subresource: str | None
) -> str:
    """Upstream's BuildManagerIdentifier: the entry without its fields and time, as JSON in
    Go's field order; appliers are one manager whatever API version they apply at."""
    entry: dict[str, str] = {}
    if manager:
        entry["manager"] = manager
    entry["operation"] = operation
    if api_version and operation != "Apply":
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return orjson.dumps(entry).decode()


def decode(entries: Any, *, canonical: bool = False) -> Managed:
    """The managedFields of an object (upstream DecodeManagedFields); ValueError names what is
    wrong. `canonical` rewrites each ``fieldsV1`` in canonical form, for entries a client
    wrote (the server's own are canonical already)."""
    managed = Managed({}, {})
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"managed fields entry {position} is not an object")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not api_version or not isinstance(api_version, str):
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType")
        if not fields_type:
            raise ValueError(f"missing fieldsType in managed fields entry {position}")
        if fields_type != "FieldsV1":
            raise ValueError(
                f'invalid fieldsType "{fields_type}" in managed fields entry {position}'
            )
        manager, subresource = entry.get("manager", ""), entry.get("subresource")
        if not isinstance(manager, str) or not isinstance(subresource, str | None):
            raise ValueError(f"managed fields entry {position} has a bad manager or subresource")
        identifier = manager_identifier(manager, operation, api_version, subresource)
        fields = entry.get("fieldsV1") or {}
        try:
            fields = fieldpath.canonical_fields_v1(fields) if canonical else fields
        except FieldsError as exc:
            raise ValueError(f"error decoding set: {exc}") from None
        if not isinstance(fields, dict):
            raise ValueError(f"fieldsV1 of managed fields entry {position} is not an object")
        managed.fields[identifier] = Entry(
            fields, api_version, operation == "Apply", ordered=not canonical
        )
        time = entry.get("time")
        managed.times[identifier] = time if isinstance(time, str) else None
    return managed


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """The managedFields to store (upstream encodeManagedFields), sorted as upstream sorts
    them: operation, time, manager, API version, subresource. None when nobody owns
    anything (the field is then left out)."""
    if not managed.fields:
        return None
    out = []
    for identifier, entry in managed.fields.items():
        ident = _parse_identifier(identifier)
        encoded: dict[str, Any] = {}
        if ident.get("manager"):
            encoded["manager"] = ident["manager"]
        encoded["operation"] = "Apply" if entry.applied else ident["operation"]
        encoded["apiVersion"] = entry.api_version
        time = managed.times.get(identifier)
        if time:
            encoded["time"] = time
        encoded["fieldsType"] = "FieldsV1"
        encoded["fieldsV1"] = (
            entry.fields if entry.ordered else fieldpath.to_fields_v1(entry.fields)
        )
        if ident.get("subresource"):
            encoded["subresource"] = ident["subresource"]
        out.append(encoded)
    out.sort(key=_entry_order)
    return out


@functools.lru_cache(maxsize=4096)
def _parse_identifier(identifier: str) -> dict[str, str]:
    parsed: dict[str, str] = orjson.loads(identifier)
    return parsed


def _entry_order(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (
        entry["operation"],
        _seconds(entry.get("time")),
        entry.get("manager", ""),
        entry["apiVersion"],
        entry.get("subresource", ""),
    )


@functools.lru_cache(maxsize=4096)
def _seconds(time: str | None) -> int:
    if not time:
        return 0
    try:
        return int(parse_rfc3339(time).timestamp())
    except ValueError:
        return 0


def set_managed_fields(meta: dict[str, Any], entries: list[dict[str, Any]] | None) -> None:
    """Store `entries` as an object's managedFields (None or none at all: the field is left
    out, as Go's ``omitempty`` leaves an empty list)."""
    if not entries:
        meta.pop("managedFields", None)
    else:
        meta["managedFields"] = entries


def manager_from_user_agent(user_agent: str) -> str:
    """Upstream's prefixFromUserAgent: what a writer that names no field manager is called
    (``kubectl/v1.33.1 (linux/amd64)`` -> ``kubectl``)."""
    out = []
    size = 0
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        width = len(char.encode())
        if size + width > MAX_MANAGER_LENGTH:
            break
        out.append(char)
        size += width
    return "".join(out)


def option_errors(manager: str, *, force_given: bool, apply: bool) -> list[FieldError]:
    """Upstream's checks of a write's ``fieldManager`` and ``force`` (ValidatePatchOptions,
    ValidateFieldManager): apply needs a manager, only apply may force, and a manager is at
    most 128 bytes of printable characters."""
    errors: list[FieldError] = []
    if apply and not manager:
        errors.append(required("fieldManager", "is required for apply patch"))
    if not apply and force_given:
        errors.append(forbidden("force", "may not be specified for non-apply patch"))
    if len(manager.encode()) > MAX_MANAGER_LENGTH:
        errors.append(
            FieldError(TOO_LONG, "fieldManager", f"may not be more than {MAX_MANAGER_LENGTH} bytes")
        )
    position = 0
    for char in manager:
        if not char.isprintable():
            errors.append(
                invalid(
                    "fieldManager",
                    manager,
                    f"invalid character U+{ord(char):04X} (at position {position})",
                )
            )
        position += len(char.encode())
    return errors


def is_reset(entries: Any) -> bool:
    """Whether a request's managedFields ask for them to be cleared: ``[]`` or ``[{}]``."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def cap_update_managers(managed: Managed) -> None:
    """upstream's capManagersManager: at most ten update entries; the oldest merge into one
    ``ancient-changes`` entry per API version."""
    updaters = [m for m, e in managed.fields.items() if not e.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda m: (_seconds(managed.times.get(m)), m))
    first_of_version: dict[str, str] = {}
    length = len(updaters)
    for manager in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry = managed.fields[manager]
        time = managed.times.get(manager)
        bucket = manager_identifier(ANCIENT_CHANGES, "Update", entry.api_version, None)
        first = first_of_version.get(entry.api_version)
        if first is None:
            first_of_version[entry.api_version] = manager
            continue
        if bucket not in managed.fields:
            managed.fields[bucket] = managed.fields.pop(first)
        merged = fieldpath.union(entry.fields, managed.fields[bucket].fields)
        managed.fields[bucket] = Entry(merged, entry.api_version, entry.applied)
        del managed.fields[manager]
        managed.times[bucket] = time
        length -= 1


_REPLICAS: Final = ("f:spec", "f:replicas")


def scale_entries(parent_entries: Any) -> list[dict[str, Any]] | None:
    """The managedFields of a ``/scale`` view: the owners of the object's ``spec.replicas``,
    as owners of the Scale's (upstream ScaleHandler.ToSubresource)."""
    try:
        parent = decode(parent_entries)
    except ValueError:
        return None
    scale = Managed({}, {})
    for identifier, entry in parent.fields.items():
        if fieldpath.has(entry.fields, _REPLICAS):
            scale.fields[identifier] = Entry(
                fieldpath.set_of(_REPLICAS), "autoscaling/v1", entry.applied
            )
            scale.times[identifier] = parent.times.get(identifier)
    return encode(scale)


def parent_entries_after_scale(
    parent_entries: Any, scale_after: Any, api_version: str
) -> list[dict[str, Any]] | None:
    """The object's managedFields after a write to ``/scale`` (upstream
    ScaleHandler.ToParent): whoever owns the Scale's replicas owns the object's, taking it
    from its other owners."""
    try:
        parent = decode(parent_entries)
        scale = decode(scale_after)
    except ValueError:
        return parent_entries if isinstance(parent_entries, list) else None
    out = Managed({}, {})
    scale_fields = dict(scale.fields)
    for identifier, entry in parent.fields.items():
        if not fieldpath.has(entry.fields, _REPLICAS):
            out.fields[identifier] = entry
            out.times[identifier] = parent.times.get(identifier)
        elif identifier not in scale_fields:
            rest = fieldpath.difference(entry.fields, fieldpath.set_of(_REPLICAS))
            if rest:
                out.fields[identifier] = entry.with_fields(rest)
                out.times[identifier] = parent.times.get(identifier)
        else:
            out.fields[identifier] = entry
            out.times[identifier] = parent.times.get(identifier)
            del scale_fields[identifier]
    for identifier, entry in scale_fields.items():
        if fieldpath.has(entry.fields, _REPLICAS):
            out.fields[identifier] = Entry(fieldpath.set_of(_REPLICAS), api_version, entry.applied)
            out.times[identifier] = parent.times.get(identifier)
    return encode(out)
