"""The set of kinds one API server serves, and the look-ups every request makes over it.

Built from the table of built-in kinds (:data:`~inplace.registry.kinds.REGISTRY`); custom
resources join and leave it at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inplace.registry.kinds import Kind


class Registry:
    """Look-ups over a set of kinds by (group, version, plural), by kind name, by short name, or
    by storage prefix.

    The set changes at run time (a CustomResourceDefinition adds and removes kinds): `add` and
    `remove` rebuild the indexes, so look-ups stay dictionary reads, and bump `generation`,
    which what is derived from the whole set (discovery and OpenAPI documents) compares.
    """

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._kinds: tuple[Kind, ...] = ()
        self.generation = 0
        self._index(tuple(kinds))

    def _index(self, kinds: tuple[Kind, ...]) -> None:
        self._kinds = kinds
        self._by_resource = {(k.group, k.version, k.plural): k for k in kinds}
        # The first kind of a (group, kind) wins: a custom resource's versions are added in
        # upstream's priority order, so that is its preferred version.
        self._by_kind: dict[tuple[str, str], Kind] = {}
        self._by_api_version_kind = {(k.api_version, k.kind): k for k in kinds}
        self._by_prefix: dict[tuple[str, str], Kind] = {}
        for k in kinds:
            self._by_kind.setdefault((k.group, k.kind), k)
        # A custom resource's storage version first: its objects are stored in that version.
        for k in sorted(kinds, key=lambda k: k.crd is not None and not k.crd.storage):
            if k.stored:
                self._by_prefix.setdefault((k.group or "core", k.plural), k)
        self.generation += 1

    def add(self, kinds: Iterable[Kind]) -> None:
        """Serve `kinds` too (a kind already served under the same resource is replaced)."""
        new = tuple(kinds)
        replaced = {(k.group, k.version, k.plural) for k in new}
        kept = tuple(k for k in self._kinds if (k.group, k.version, k.plural) not in replaced)
        self._index(kept + new)

    def remove(self, kinds: Iterable[Kind]) -> None:
        """Stop serving `kinds` (matched by group, version and resource)."""
        gone = {(k.group, k.version, k.plural) for k in kinds}
        self._index(tuple(k for k in self._kinds if (k.group, k.version, k.plural) not in gone))

    def copy(self) -> Registry:
        """A registry of the same kinds that changes on its own (one per API server)."""
        return Registry(self._kinds)

    def __iter__(self) -> Iterator[Kind]:
        return iter(self._kinds)

    @property
    def kinds(self) -> tuple[Kind, ...]:
        return self._kinds

    def by_resource(self, group: str, version: str, plural: str) -> Kind | None:
        return self._by_resource.get((group, version, plural))

    def by_kind(self, group: str, kind: str) -> Kind | None:
        return self._by_kind.get((group, kind))

    def by_api_version(self, api_version: str, kind: str) -> Kind | None:
        return self._by_api_version_kind.get((api_version, kind))

    def by_storage_prefix(self, group: str, plural: str) -> Kind | None:
        """The kind whose objects are stored under `/<group or core>/<plural>/` (for a custom
        resource with several versions, its storage version)."""
        return self._by_prefix.get((group, plural))

    def group_versions(self) -> list[tuple[str, str]]:
        """Every (group, version) served, core first, in a stable order."""
        seen: dict[tuple[str, str], None] = {}
        for k in self._kinds:
            seen.setdefault(k.group_version, None)
        return list(seen)

    def in_group_version(self, group: str, version: str) -> list[Kind]:
        return [k for k in self._kinds if k.group == group and k.version == version]
