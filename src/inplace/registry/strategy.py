"""What the API server does with one kind's objects: upstream's registry strategies, as data.

Upstream gives every resource a strategy (``pkg/registry/<group>/<resource>/strategy.go``):
``PrepareForCreate``, ``Validate``, ``PrepareForUpdate`` and ``ValidateUpdate``, whether a
spec change bumps ``metadata.generation``, ``CheckGracefulDelete``, a table convertor, and a
strategy per subresource (``status``, ``resize``) whose "reset fields" say what the stored
object keeps whatever the request body says. Here a :class:`Strategy` carries the same
decisions as plain functions, each kind in :mod:`inplace.registry.kinds` names one, and the API
server, validation, defaulting, field selectors and the table printers follow it instead of
branching on a kind's name.

What every kind gets without saying so (so it is not a field here):

* the object itself keeps its stored ``status`` when the kind has a ``status`` subresource
  (:func:`keep_status`), and the ``status`` subresource keeps the stored ``spec``
  (:func:`keep_spec`) and runs no defaulting;
* every quantity is stored and returned as upstream serializes it (``0.5`` → ``500m``,
  :mod:`inplace.registry.canonical`), on every write, subresources included;
* a rejected field is a 422 listing every bad field
  (:class:`inplace.api.validation.ValidationError`); any other refusal raises
  :class:`Rejected` with upstream's code.

This module imports no kind-specific rules: :mod:`inplace.registry.kinds` pairs kinds with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from inplace.api.selectors import METADATA_FIELDS, SelectableFields
from inplace.api.tables import DEFAULT_TABLE, TablePrinter
from inplace.api.validation.errors import FieldError
from inplace.api.validation.meta import validate_status_metadata

if TYPE_CHECKING:
    from inplace.registry.kinds import Kind

__all__ = [
    "Admission",
    "Allocator",
    "Defaulter",
    "GracePeriod",
    "ObjectReader",
    "Rejected",
    "Reset",
    "Strategy",
    "SubresourceUpdate",
    "UpdateAdmission",
    "UpdateValidator",
    "Validator",
    "apply_defaults",
    "copy_json",
    "keep_spec",
    "keep_status",
    "no_defaults",
    "reset_status",
    "spec_changed",
]

#: Fills in a kind's defaults in place; the flag is True on create (admission-time defaults).
Defaulter = Callable[[dict[str, Any], bool], None]
#: Appends every bad field of an object to the list (upstream ``Validate``).
Validator = Callable[[list[FieldError], Mapping[str, Any]], None]
#: Appends every bad field of an update from the old object (last) to the new (upstream
#: ``ValidateUpdate``): the whole rule, metadata included.
UpdateValidator = Callable[[list[FieldError], Mapping[str, Any], Mapping[str, Any]], None]
#: Copies into the new object (first) what the stored one (second) keeps (upstream's
#: ``PrepareForUpdate`` and reset fields). The stored object must not be changed or shared.
Reset = Callable[[dict[str, Any], Mapping[str, Any]], None]
#: The grace period, in seconds, a delete of this object gets, from the request's
#: ``gracePeriodSeconds`` (None when absent); raises :class:`Rejected` for a bad value.
GracePeriod = Callable[[Mapping[str, Any], Any], int]


class ObjectReader(Protocol):
    """Read access to other stored objects, for admission steps that consult them (upstream's
    admission plugins read through listers)."""

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None:
        """The stored object, or None."""

    def list(self, group: str, kind: str) -> Iterable[Mapping[str, Any]]:
        """Every stored object of the kind, in every namespace."""


#: Mutating admission on create: may change the object, may consult other objects, raises
#: :class:`Rejected` to refuse it.
Admission = Callable[[dict[str, Any], ObjectReader], None]
#: Mutating or validating admission on an update of the object itself: the new object
#: (first), the stored one, and other objects; raises :class:`Rejected` to refuse it
#: (claims: upstream's ``PersistentVolumeClaimResize``).
UpdateAdmission = Callable[[dict[str, Any], Mapping[str, Any], ObjectReader], None]
#: What the server hands out from a shared pool (a Service's cluster IP and node ports): given
#: the object, the stored objects and, on update, the stored version (None on create). Raises
#: :class:`inplace.api.validation.ValidationError` (a 422 naming the field) or
#: :class:`Rejected`.
Allocator = Callable[[dict[str, Any], ObjectReader, Mapping[str, Any] | None], None]


class Rejected(Exception):
    """A request a strategy refuses outright (not a bad field): upstream's code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class SubresourceUpdate:
    """A subresource that updates the stored object in place, beyond ``status`` (which every
    kind with one gets): pods' ``resize``. `reset` keeps what the stored object keeps,
    `validate` is the whole rule, `defaults` whether defaulting runs first."""

    reset: Reset
    validate: UpdateValidator
    defaults: bool = True


def no_defaults(obj: dict[str, Any], on_create: bool) -> None:
    """Kinds upstream does not default (PDBs, leases, events, the VPA CRD)."""


@dataclass(frozen=True, eq=False)
class Strategy:
    """Everything kind-specific about creating, updating, printing and deleting one kind.

    Every field has the default that suits a kind with no rules of its own, so a new kind
    names only what it has: typically `validate`, `table` and perhaps `defaults`.
    """

    #: Upstream's scheme defaulting (``SetDefaults_*``); runs on create and on updates of the
    #: object itself, before validation.
    defaults: Defaulter = no_defaults
    #: Mutating admission on create, after defaulting (pods: the Priority plugin).
    admit: Admission | None = None
    #: Admission on updates of the object itself (not its subresources), before validation.
    admit_update: UpdateAdmission | None = None
    #: Upstream ``PrepareForCreate``: what the server sets whatever the request said (a pod's
    #: status starts ``Pending``).
    prepare_for_create: Callable[[dict[str, Any]], None] | None = None
    #: Upstream ``PrepareForUpdate`` of the object itself, after the stored status is kept:
    #: what the stored object lends a request that left it out (a Service's cluster IP).
    prepare_for_update: Reset | None = None
    #: The part of upstream's ``PrepareForUpdate`` that compares the decoded (defaulted,
    #: canonical) object with the stored one: a DaemonSet's template generation counts
    #: template changes. Runs on updates of the object itself, before the field manager.
    finish_update: Reset | None = None
    #: Upstream ``PrepareForUpdate`` of the ``status`` subresource, after the stored spec is
    #: kept: what else a status write may not change, or keeps when it leaves it out.
    prepare_for_status_update: Reset | None = None
    #: Allocation from a shared pool, on create and on updates of the object itself, before
    #: validation; the API server runs one allocation of a kind at a time, against a cache
    #: that has caught up with the store, so what it hands out is unique.
    allocate: Allocator | None = None
    #: Upstream ``Validate`` (create). None: metadata only (name, namespace, labels, ...).
    validate: Validator | None = None
    #: Upstream ``ValidateUpdate`` of the object itself, metadata included. None: the
    #: metadata's identity is unchanged and the new object passes `validate`.
    validate_update: UpdateValidator | None = None
    #: Upstream ``ValidateUpdate`` of the status strategy. The default checks the metadata.
    validate_status_update: UpdateValidator = validate_status_metadata
    #: Subresources beyond ``status`` that update the object in place, by name.
    subresources: Mapping[str, SubresourceUpdate] = field(default_factory=dict)
    #: How the kind prints as a Table (``kubectl get``).
    table: TablePrinter = DEFAULT_TABLE
    #: The field labels a ``fieldSelector`` may name (upstream ``GetAttrs``).
    selectable_fields: SelectableFields = METADATA_FIELDS
    #: Whether a change of ``spec`` bumps ``metadata.generation`` (False for kinds without a
    #: spec: events, priority classes).
    bumps_generation: bool = True
    #: Upstream ``CheckGracefulDelete``. None: objects go at once (or when their finalizers
    #: are gone). A kind with one also waits for its grace period when the last finalizer
    #: goes (a pod is removed by its node, not by the server).
    grace_period: GracePeriod | None = None


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value: an orjson round trip is several times faster than
    copy.deepcopy, and stored (cached) objects must never be mutated or shared."""
    return orjson.loads(orjson.dumps(value))


def keep_status(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """The object itself of a kind with a status subresource: the stored status stays."""
    if "status" in old:
        new["status"] = copy_json(old["status"])


def keep_spec(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """The status subresource: the stored spec stays (the body's status and metadata count)."""
    new["spec"] = copy_json(old.get("spec"))
    if new["spec"] is None:
        new.pop("spec")


def reset_status(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """A subresource that may not write status (pods/resize): the stored one, or none."""
    new["status"] = copy_json(old.get("status", {}))


def apply_defaults(kind: Kind, obj: dict[str, Any], *, on_create: bool = True) -> dict[str, Any]:
    """Fill in upstream's defaults for `kind`, in place, and return `obj` itself.

    `obj` is mutated (callers that hold a cached object must pass a copy). `on_create`
    enables what upstream does only when an object is created (admission plugins, the
    namespace finalizer, the job selector); plain defaults run on every write.
    """
    if not isinstance(obj, dict):
        return obj
    kind.strategy.defaults(obj, on_create)
    return obj


def spec_changed(kind: Kind, new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether `metadata.generation` must be bumped: the kind's strategy says its spec
    counts and the spec changed.

    Compared as stored JSON, so a no-op update (same spec re-sent) does not bump it.
    """
    if not kind.strategy.bumps_generation:
        return False
    new_spec = new.get("spec") if isinstance(new, Mapping) else None
    old_spec = old.get("spec") if isinstance(old, Mapping) else None
    return bool(new_spec != old_spec)
