"""The field manager: who owns which field after every write; server-side apply.

A port of upstream's field manager (apimachinery's ``util/managedfields`` around
structured-merge-diff's ``merge.Updater``), with its layers in the same order (the stored
form of the entries is :mod:`inplace.registry.managedfields`'s):

* every write that is not an apply (create, update, every patch type, ``/status``,
  ``/resize``) is an *Update*: the writer takes every field it added or changed, from every
  other owner, and a field it removed leaves every owner (:meth:`FieldManager.update`);
* an *Apply* merges the applied configuration into the live object by the kind's merge
  types, owns exactly the fields it applied, removes the fields it applied last time and no
  longer does unless someone else owns them, and fails with a conflict when it would change a
  value another manager owns, unless forced (:meth:`FieldManager.apply`);
* entries are per manager, operation and subresource (and API version, for updates), merged
  when the same manager writes again, stamped with the time of the last write that changed
  something, sorted as upstream sorts them; at most ten update entries are kept (older ones
  merge into ``ancient-changes``); ``apiVersion``, ``kind`` and the server-set metadata are
  never owned; each subresource's *reset fields* (a pod's ``status`` through the pod itself,
  its ``spec`` through ``/status``, only resources through ``/resize``) are never owned
  through it;
* the first apply to an object without managed fields gives what is there to
  ``before-first-apply``, and ``kubectl``'s first server-side apply of an object that
  client-side apply made takes over the fields its ``last-applied-configuration`` annotation
  lists without a conflict (upstream's "upgrade"), then keeps that annotation current.

Pure: callers pass the objects and the time; the API server writes the result.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from inplace.registry import fieldpath, typed
from inplace.registry.fieldpath import Set
from inplace.registry.fieldschema import Atom, kind_atom, named_atom, zero_object
from inplace.registry.kinds import Kind
from inplace.registry.managedfields import (
    LAST_APPLIED,
    ApplyConflict,
    ApplyRefused,
    Entry,
    Managed,
    cap_update_managers,
    decode,
    encode,
    is_reset,
    manager_identifier,
    set_managed_fields,
)
from inplace.registry.typed import MISSING, Comparison, TypedError

__all__ = [
    "BEFORE_FIRST_APPLY",
    "FieldManager",
    "ResetFields",
    "field_manager",
    "reset_fields",
    "scale_field_manager",
]

#: The manager the first apply credits with what an object already held.
BEFORE_FIRST_APPLY: Final = "before-first-apply"
_CURRENT: Final = "current-operation"
_ANNOTATIONS_LIMIT: Final = 256 * 1024

#: What nobody ever owns (upstream's stripMetaManager).
_STRIPPED: Final = fieldpath.set_of(
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    *(
        ("f:metadata", "f:" + name)
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    ),
)


# --- reset fields ------------------------------------------------------------------------

#: A prefix pattern (upstream's SetMatcher): element (or "*") -> what to match below it;
#: None matches everything.
Matcher = dict[str, Any] | None


@dataclass(frozen=True)
class ResetFields:
    """What a (sub)resource never lets a writer own: an excluded set (upstream's reset fields,
    removed with everything below them), or only what matches `include` (a reset-fields
    filter: pods/resize owns only containers' resources)."""

    exclude: Set | None = None
    include: Matcher = None

    def filter(self, fields: Set) -> Set:
        if not fields:
            return fields
        if self.exclude is not None:
            return fieldpath.recursive_difference(fields, self.exclude)
        return _include(fields, self.include)

    def filter_comparison(self, comparison: Comparison) -> Comparison:
        return Comparison(
            self.filter(comparison.removed),
            self.filter(comparison.modified),
            self.filter(comparison.added),
        )


def _include(fields: Set, matcher: Matcher) -> Set:
    if matcher is None:
        return fields
    out: Set = {}
    for element, node in fields.items():
        child = matcher.get("*", matcher.get(element, False))
        if child is False:
            continue
        member = not node or fieldpath.MEMBER in node
        kids = {k: v for k, v in node.items() if k != fieldpath.MEMBER}
        kids = _include(kids, child) if kids else {}
        if kids:
            out[element] = {fieldpath.MEMBER: {}, **kids} if member else kids
        elif member:
            out[element] = {}
    return out


def _prefix(*elements: str) -> Matcher:
    matcher: Matcher = None
    for element in reversed(elements):
        matcher = {element: matcher}
    return matcher


def _merge_matchers(*matchers: Matcher) -> Matcher:
    out: dict[str, Any] = {}
    for matcher in matchers:
        if matcher is None:
            return None
        for element, child in matcher.items():
            out[element] = _merge_matchers(out[element], child) if element in out else child
    return out


_EXCLUDE_STATUS: Final = ResetFields(exclude=fieldpath.set_of(("f:status",)))
_EXCLUDE_SPEC: Final = ResetFields(exclude=fieldpath.set_of(("f:spec",)))
_RESIZE: Final = ResetFields(
    include=_merge_matchers(
        *(
            _prefix("f:spec", containers, "*", part)
            for containers in ("f:containers", "f:initContainers")
            for part in ("f:resources", "f:resizePolicy")
        )
    )
)
#: Upstream's strategies' reset fields where they differ from the rule every kind follows
#: (a kind with a status subresource: ``status`` through the object, ``spec`` through
#: ``/status``).
_RESET_FIELDS: Final[dict[tuple[str, str, str | None], ResetFields | None]] = {
    ("", "Pod", "status"): ResetFields(
        exclude=fieldpath.set_of(
            ("f:spec",),
            ("f:metadata", "f:deletionTimestamp"),
            ("f:metadata", "f:ownerReferences"),
        )
    ),
    ("", "Pod", "resize"): _RESIZE,
    ("apps", "Deployment", "status"): ResetFields(
        exclude=fieldpath.set_of(("f:spec",), ("f:metadata", "f:labels"))
    ),
    ("apps", "StatefulSet", "status"): ResetFields(
        exclude=fieldpath.set_of(("f:spec",), ("f:metadata", "f:labels"))
    ),
}


def reset_fields(kind: Kind, subresource: str | None) -> ResetFields | None:
    """The reset fields of a kind's object or subresource."""
    found = _RESET_FIELDS.get((kind.group, kind.kind, subresource), MISSING)
    if found is not MISSING:
        return found  # type: ignore[no-any-return]
    if "status" not in kind.subresources:
        return None
    if subresource is None:
        return _EXCLUDE_STATUS
    if subresource == "status":
        return _EXCLUDE_SPEC
    return None


# --- the updater (structured-merge-diff's merge.Updater) --------------------------------


class _Updater:
    """Ownership arithmetic for one kind's (sub)resource at one API version."""

    def __init__(self, atom: Atom, version: str, reset: ResetFields | None) -> None:
        self.atom = atom
        self.version = version
        self.reset = reset

    def _compare(self, live: Any, new: Any) -> Comparison:
        comparison = typed.compare(
            _without_managed_fields(live), _without_managed_fields(new), self.atom
        )
        return self.reset.filter_comparison(comparison) if self.reset else comparison

    def _filter(self, fields: Set) -> Set:
        return self.reset.filter(fields) if self.reset else fields

    def _take(
        self,
        live: Any,
        new: Any,
        managers: dict[str, Entry],
        workflow: str,
        *,
        force: bool,
    ) -> Comparison:
        """Every other manager loses what `new` changes and removes (upstream
        ``Updater.update``); unforced, a change to another manager's field is a conflict.
        Managers of another API version cannot be compared and are dropped, as upstream
        drops versions it cannot convert to."""
        comparison = self._compare(live, new)
        changed = comparison.changed
        removed = comparison.removed
        conflicts: dict[str, Set] = {}
        for manager, entry in list(managers.items()):
            if manager == workflow:
                continue
            if entry.api_version != self.version:
                del managers[manager]
                continue
            if changed:
                overlap = fieldpath.intersection(entry.fields, changed)
                if overlap:
                    conflicts[manager] = overlap
        if conflicts and not force:
            raise ApplyConflict(conflicts)
        for manager, overlap in conflicts.items():
            entry = managers[manager]
            managers[manager] = entry.with_fields(fieldpath.difference(entry.fields, overlap))
        if removed:
            for manager, entry in list(managers.items()):
                if manager != workflow:
                    managers[manager] = entry.with_fields(
                        fieldpath.difference(entry.fields, removed)
                    )
        for manager in [m for m, e in managers.items() if not e.fields]:
            del managers[manager]
        return comparison

    def update(self, live: Any, new: Any, managers: dict[str, Entry], manager: str) -> None:
        """`manager` wrote `new` over `live` (upstream ``Updater.Update``), in place."""
        comparison = self._take(live, new, managers, manager, force=True)
        previous = managers.get(manager)
        fields = previous.fields if previous else {}
        fields = fieldpath.difference(fields, comparison.removed)
        fields = fieldpath.union(fields, comparison.modified)
        fields = fieldpath.union(fields, comparison.added)
        fields = self._filter(fields)
        if fields:
            managers[manager] = Entry(fields, self.version, False)
        else:
            managers.pop(manager, None)

    def apply(
        self, live: Any, config: Any, managers: dict[str, Entry], manager: str, *, force: bool
    ) -> Any:
        """Merge `config` into `live` for `manager` (upstream ``Updater.Apply``), updating
        `managers` in place; returns the new object, or MISSING when nothing changed."""
        new = typed.merge(live, config, self.atom)
        if new is MISSING:
            new = {}
        last = managers.get(manager)
        managers[manager] = Entry(
            self._filter(typed.field_set(config, self.atom)), self.version, True
        )
        new = self._prune(new, managers, manager, last)
        self._take(live, new, managers, manager, force=force)
        return MISSING if new == live else new

    def _prune(
        self, merged: Any, managers: dict[str, Entry], manager: str, last: Entry | None
    ) -> Any:
        """Remove what `manager` applied last time and not this time, unless another manager
        (or this one's new configuration) owns it (upstream ``Updater.prune``)."""
        if last is None or not last.fields or last.api_version != self.version:
            return merged
        atom = self.atom
        named = typed.named_fields_as_members
        pruned = _object(typed.remove_items(merged, named(last.fields, atom), atom))
        # Add back what anyone still owns.
        owned: Set = {}
        for entry in managers.values():
            if entry.api_version == self.version:
                owned = fieldpath.union(owned, entry.fields)
        merged_set = named(typed.field_set(merged, atom), atom)
        pruned_set = named(typed.field_set(pruned, atom), atom)
        keep = fieldpath.union(pruned_set, named(owned, atom))
        pruned = _object(typed.remove_items(merged, fieldpath.difference(merged_set, keep), atom))
        # Remove only what this manager owned last time (not items nobody owned).
        pruned_set = named(typed.field_set(pruned, atom), atom)
        dangling = fieldpath.intersection(
            fieldpath.difference(merged_set, pruned_set), named(last.fields, atom)
        )
        return _object(typed.remove_items(merged, dangling, atom))


def _object(data: Any) -> Any:
    return {} if data is MISSING or data is None else data


def _as_stored(new: Any, live: Any, atom: Atom) -> Any:
    """The merged object as upstream stores it after converting it to its Go type: a field
    set to ``null`` is not there, and neither is an empty list or map Go omits (``ports:
    []``), unless Go always prints the field. Values taken from the live object as they are
    stay as they are."""
    if new is live:
        return new
    if type(new) is dict and atom.fields is not None:
        old = live if type(live) is dict else {}
        zeros = atom.zeros
        out: dict[str, Any] = {}
        for name, value in new.items():
            before = old.get(name, MISSING)
            if value is before:
                out[name] = value
                continue
            child = atom.child(name)
            if name not in zeros and (
                value is None or value == [] or (value == {} and not child.fields)
            ):
                continue
            out[name] = _as_stored(value, before, child)
        return out
    if type(new) is list and atom.list_elem is not None and not atom.list_atomic:
        twins: dict[str, Any] = {}
        if type(live) is list:
            for item in live:
                try:
                    twins.setdefault(typed.item_element(atom, item), item)
                except TypedError:
                    pass
        out_items = []
        for item in new:
            try:
                twin = twins.get(typed.item_element(atom, item), MISSING)
            except TypedError:
                twin = MISSING
            out_items.append(_as_stored(item, twin, atom.list_elem))
        return out_items
    return new


def _without_managed_fields(obj: Any) -> Any:
    """The object as compared: its managedFields are never part of it."""
    if not isinstance(obj, dict):
        return obj
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


# --- the field manager -------------------------------------------------------------------


class FieldManager:
    """The field manager of one kind's object, or of one of its subresources."""

    def __init__(
        self,
        kind_name: str,
        api_version: str,
        atom: Atom,
        subresource: str | None,
        reset: ResetFields | None,
        empty: Mapping[str, Any],
    ) -> None:
        self.kind_name = kind_name
        self.api_version = api_version
        self.subresource = subresource
        self.atom = atom
        self.empty = empty
        self._updater = _Updater(atom, api_version, reset)

    # -- Update ---------------------------------------------------------------------------

    def update(
        self, live: Mapping[str, Any] | None, new: Mapping[str, Any], manager: str, now: str
    ) -> list[dict[str, Any]] | None:
        """The managedFields `new` gets when `manager` writes it over `live` (None for a
        create). A write to the object itself may set managedFields by hand (``[]`` or
        ``[{}]`` clears them); a subresource never can. An object that has none (it was
        cleared) stays without until an apply. Upstream's UpdateNoErrors: a value the
        schema cannot take keeps the live object's managedFields."""
        live_obj: Mapping[str, Any] = live if live is not None else self.empty
        live_entries = _meta(live_obj).get("managedFields")
        new_entries = _meta(new).get("managedFields")
        managed = self._decode_live_or_new(live_entries, new_entries)
        if not managed.fields and live is not None:
            return None
        before = dict(managed.fields)
        try:
            self._update_managed(live_obj, new, managed, manager, now)
        except (TypedError, ValueError):
            return live_entries if isinstance(live_entries, list) else None
        if (
            isinstance(live_entries, list)
            and managed.fields.keys() == before.keys()
            and all(managed.fields[k] is v and v.ordered for k, v in before.items())
        ):
            return live_entries  # nobody's fields changed: the stored entries, as they are
        cap_update_managers(managed)
        return encode(managed)

    def _decode_live_or_new(self, live_entries: Any, new_entries: Any) -> Managed:
        if self.subresource is None and not (
            new_entries is live_entries or new_entries == live_entries
        ):
            if is_reset(new_entries):
                return Managed({}, {})
            try:
                managed = decode(new_entries, canonical=True)
            except ValueError:
                managed = Managed({}, {})
            if managed.fields:
                return managed
        try:
            return decode(live_entries)
        except ValueError:
            return Managed({}, {})

    def _update_managed(
        self,
        live: Mapping[str, Any],
        new: Mapping[str, Any],
        managed: Managed,
        manager: str,
        now: str,
    ) -> None:
        """BuildManagerInfo, ManagedFieldsUpdater, StripMeta and Updater.Update, in place."""
        identifier = manager_identifier(
            manager or "unknown", "Update", self.api_version, self.subresource
        )
        fields = managed.fields
        self._updater.update(live, new, fields, _CURRENT)
        current = fields.pop(_CURRENT, None)
        if current is not None:
            stripped = fieldpath.difference(current.fields, _STRIPPED)
            if stripped:
                previous = fields.get(identifier)
                if previous is not None:
                    stripped = fieldpath.union(previous.fields, stripped)
                fields[identifier] = Entry(stripped, current.api_version, False)
                managed.times[identifier] = now

    # -- Apply ----------------------------------------------------------------------------

    def apply(
        self,
        live: Mapping[str, Any] | None,
        config: Mapping[str, Any],
        manager: str,
        now: str,
        *,
        force: bool = False,
    ) -> dict[str, Any] | None:
        """The object after `manager` applies `config` to `live` (None: to a new object),
        with its managedFields; None when the apply changes nothing at all. Raises
        ApplyConflict, or ApplyRefused for a configuration upstream refuses."""
        live_obj: Mapping[str, Any] = live if live is not None else self.empty
        try:
            managed = decode(_meta(live_obj).get("managedFields"))
        except ValueError as exc:
            raise ApplyRefused(500, f"failed to decode managed fields: {exc}") from None
        self._check_config(live_obj, config)
        try:
            new, result = self._apply_upgrading(live_obj, config, managed, manager, now, force)
        except ApplyConflict:
            raise
        except TypedError as exc:
            raise ApplyRefused(500, f"failed to merge config: {exc}") from None
        obj: dict[str, Any] = (
            dict(live_obj) if new is MISSING else _as_stored(new, live_obj, self.atom)
        )
        new = obj
        if manager == "kubectl" and _last_applied(new) is not None:
            _set_last_applied(new, config)
        if result.fields == managed.fields and _without_managed_fields(
            new
        ) == _without_managed_fields(live_obj):
            return None  # what upstream's store sees as a no-op (timestamps aside)
        meta = dict(_meta(new))
        set_managed_fields(meta, encode(result))
        obj["metadata"] = meta
        return obj

    def _check_config(self, live: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        """What upstream checks of an applied configuration before it merges anything."""
        group_version = config.get("apiVersion", "")
        kind = config.get("kind", "")
        if group_version != self.api_version or kind != self.kind_name:
            group, _, version = str(group_version).rpartition("/")
            raise ApplyRefused(400, f"invalid object type: {group}/{version}, Kind={kind}")
        if _meta(config).get("managedFields") is not None:
            raise ApplyRefused(400, "metadata.managedFields must be nil")
        errors = typed.check_applied(config, self.atom)
        if errors:
            meta = _meta(config)
            where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            group, _, version = self.api_version.rpartition("/")
            detail = (
                errors[0] if len(errors) == 1 else "errors:\n" + "\n".join(f"  {e}" for e in errors)
            )
            raise ApplyRefused(
                422,
                f"failed to create typed patch object ({where}; {group}/{version}, "
                f"Kind={self.kind_name}): {detail}",
                errors[0].split(":", 1)[0],
            )

    def _apply_upgrading(
        self,
        live: Mapping[str, Any],
        config: Mapping[str, Any],
        managed: Managed,
        manager: str,
        now: str,
        force: bool,
    ) -> tuple[Any, Managed]:
        """upstream's lastAppliedManager: kubectl taking over from client-side apply."""
        try:
            return self._apply_once(live, config, managed, manager, now, force)
        except ApplyConflict as conflict:
            if manager != "kubectl":
                raise
            allowed = self._allowed_conflicts(live)
            if allowed is None:
                raise
            remaining: dict[str, Set] = {}
            for owner, path in conflict.conflicts:
                if not fieldpath.has(allowed, path):
                    fieldpath.insert(remaining.setdefault(owner, {}), path)
            if remaining:
                raise ApplyConflict(remaining) from None
            return self._apply_once(live, config, managed, manager, now, True)

    def _allowed_conflicts(self, live: Mapping[str, Any]) -> Set | None:
        """The fields of the last-applied annotation whose values the live object still has."""
        text = _last_applied(live)
        if text is None:
            return None
        try:
            last = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(last, dict) or last.get("apiVersion") != self.api_version:
            return None
        try:
            fields = typed.field_set(last, self.atom)
            differs = typed.compare(last, _without_managed_fields(live), self.atom)
        except TypedError:
            return None
        for changed in (differs.modified, differs.added, differs.removed):
            fields = fieldpath.difference(fields, changed)
        return fields

    def _apply_once(
        self,
        live: Mapping[str, Any],
        config: Mapping[str, Any],
        managed: Managed,
        manager: str,
        now: str,
        force: bool,
    ) -> tuple[Any, Managed]:
        """SkipNonApplied, BuildManagerInfo, ManagedFieldsUpdater, StripMeta and
        Updater.Apply, on a copy of `managed`."""
        managed = managed.copy()
        if not managed.fields:
            # The first apply: whatever the object holds belongs to before-first-apply.
            self._update_managed(self.empty, live, managed, BEFORE_FIRST_APPLY, now)
        identifier = manager_identifier(manager, "Apply", "", self.subresource)
        new = self._updater.apply(live, config, managed.fields, identifier, force=force)
        entry = managed.fields.get(identifier)
        if entry is not None:
            stripped = fieldpath.difference(entry.fields, _STRIPPED)
            if stripped:
                managed.fields[identifier] = entry.with_fields(stripped)
            else:
                del managed.fields[identifier]
        if new is not MISSING:
            managed.times[identifier] = now
        return new, managed


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _last_applied(obj: Mapping[str, Any]) -> str | None:
    annotations = _meta(obj).get("annotations")
    if not isinstance(annotations, Mapping):
        return None
    text = annotations.get(LAST_APPLIED)
    return text if isinstance(text, str) and text else None


def _set_last_applied(obj: dict[str, Any], config: Mapping[str, Any]) -> None:
    """upstream's lastAppliedUpdater: the annotation becomes the applied configuration
    (without the annotation), as Go's encoder writes it; dropped when it would not fit."""
    applied = dict(config)
    applied_meta = dict(_meta(applied))
    applied_annotations = dict(applied_meta.get("annotations") or {})
    applied_annotations.pop(LAST_APPLIED, None)
    if applied_annotations:
        applied_meta["annotations"] = applied_annotations
    else:
        applied_meta.pop("annotations", None)
    applied["metadata"] = applied_meta
    text = fieldpath.go_json(applied) + "\n"
    meta = dict(_meta(obj))
    annotations = dict(meta.get("annotations") or {})
    annotations[LAST_APPLIED] = text
    if (
        sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
        > _ANNOTATIONS_LIMIT
    ):
        del annotations[LAST_APPLIED]
    meta["annotations"] = annotations
    obj["metadata"] = meta


# --- per kind ----------------------------------------------------------------------------


@functools.cache
def field_manager(kind: Kind, subresource: str | None = None) -> FieldManager:
    """The field manager of a kind's object (`subresource` None) or of one subresource."""
    empty = zero_object(kind)
    empty["apiVersion"] = kind.api_version
    empty["kind"] = kind.kind
    return FieldManager(
        kind.kind,
        kind.api_version,
        kind_atom(kind),
        subresource,
        reset_fields(kind, subresource),
        empty,
    )


@functools.cache
def scale_field_manager() -> FieldManager:
    """The field manager of ``/scale`` (an ``autoscaling/v1`` Scale)."""
    empty = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"creationTimestamp": None},
        "spec": {},
        "status": {"replicas": 0},
    }
    return FieldManager(
        "Scale",
        "autoscaling/v1",
        named_atom("io.k8s.api.autoscaling.v1.Scale"),
        "scale",
        None,
        empty,
    )
