"""The registry of every kind the API server serves.

One table drives routing, discovery, OpenAPI, storage keys and the table printers, so adding a
kind is one entry here. Names, plurals, short names and subresources are upstream's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """A served kind: where it lives in the API and how it is addressed."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: Kinds whose objects are kept in the store; the metrics kinds are computed on read.
    stored: bool = True
    #: Kinds whose `spec` changes bump `metadata.generation`.
    has_spec: bool = True
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    #: The model class in the official `kubernetes` client package, for schemas; None for CRDs.
    model: str | None = None

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def group_version(self) -> tuple[str, str]:
        return (self.group, self.version)

    def storage_prefix(self, namespace: str | None = None) -> str:
        """Store key prefix: `/<group>/<plural>/` then `<namespace>/` for namespaced kinds."""
        base = f"/{self.group or 'core'}/{self.plural}/"
        if self.namespaced and namespace:
            return f"{base}{namespace}/"
        return base

    def storage_key(self, name: str, namespace: str | None = None) -> str:
        return f"{self.storage_prefix(namespace)}{name}"


_READ_ONLY = ("get", "list")

KINDS: tuple[Kind, ...] = (
    Kind("", "v1", "Namespace", "namespaces", False, ("ns",), ("status",), model="V1Namespace"),
    Kind("", "v1", "Node", "nodes", False, ("no",), ("status",), model="V1Node"),
    Kind(
        "",
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("status", "resize", "binding", "eviction", "log"),
        ("all",),
        model="V1Pod",
    ),
    Kind("", "v1", "Event", "events", True, ("ev",), has_spec=False, model="CoreV1Event"),
    Kind(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        True,
        ("deploy",),
        ("status", "scale"),
        ("all",),
        model="V1Deployment",
    ),
    Kind(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        True,
        ("rs",),
        ("status", "scale"),
        ("all",),
        model="V1ReplicaSet",
    ),
    Kind("batch", "v1", "Job", "jobs", True, (), ("status",), ("all",), model="V1Job"),
    Kind(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        True,
        ("pdb",),
        ("status",),
        model="V1PodDisruptionBudget",
    ),
    Kind(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        False,
        ("pc",),
        has_spec=False,
        model="V1PriorityClass",
    ),
    Kind("coordination.k8s.io", "v1", "Lease", "leases", True, model="V1Lease"),
    Kind(
        "autoscaling.k8s.io",
        "v1",
        "VerticalPodAutoscaler",
        "verticalpodautoscalers",
        True,
        ("vpa",),
        ("status",),
    ),
    Kind(
        "metrics.k8s.io",
        "v1beta1",
        "PodMetrics",
        "pods",
        True,
        stored=False,
        has_spec=False,
        verbs=_READ_ONLY,
    ),
    Kind(
        "metrics.k8s.io",
        "v1beta1",
        "NodeMetrics",
        "nodes",
        False,
        stored=False,
        has_spec=False,
        verbs=_READ_ONLY,
    ),
)


class Registry:
    """Look-ups over a set of kinds by (group, version, plural), by kind name, or by short name."""

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._kinds = tuple(kinds)
        self._by_resource = {(k.group, k.version, k.plural): k for k in self._kinds}
        self._by_kind = {(k.group, k.kind): k for k in self._kinds}
        self._by_api_version_kind = {(k.api_version, k.kind): k for k in self._kinds}

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

    def group_versions(self) -> list[tuple[str, str]]:
        """Every (group, version) served, core first, in a stable order."""
        seen: dict[tuple[str, str], None] = {}
        for k in self._kinds:
            seen.setdefault(k.group_version, None)
        return list(seen)

    def in_group_version(self, group: str, version: str) -> list[Kind]:
        return [k for k in self._kinds if k.group == group and k.version == version]


REGISTRY = Registry(KINDS)
