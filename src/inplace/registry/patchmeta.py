"""Strategic-merge metadata: which lists merge by key, which maps replace or keep listed keys.

Upstream declares this in Go struct tags (`patchStrategy:"merge" patchMergeKey:"name"`) on the
API types; the official Python client drops those tags, so the table below transcribes them for
every model reachable from the kinds we serve (core/v1, apps/v1, batch/v1, policy/v1, meta/v1).
A field that is absent from the table has no strategy: its lists are replaced whole ("atomic")
and its maps are merged key by key, exactly as upstream treats untagged fields.

`PatchSchema` walks the client models from a root model name so the strategic-merge code can ask
"what is the strategy of field X here?" at any depth; a schema built from `None` knows nothing,
which is what a custom resource gets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from inplace.registry.kinds import Kind
from inplace.registry.models import dict_value, is_model, list_element, model_fields

MERGE = "merge"
RETAIN_KEYS = "retainKeys"
REPLACE = "replace"


@dataclass(frozen=True)
class FieldPatchMeta:
    """The strategic-merge tags of one field.

    `strategies` is a subset of {"merge", "retainKeys", "replace"}; `merge_key` names the field
    that identifies an item of a merging list of objects (None for lists of primitives).
    """

    strategies: frozenset[str]
    merge_key: str | None = None

    @property
    def merges(self) -> bool:
        return MERGE in self.strategies

    @property
    def retains_keys(self) -> bool:
        return RETAIN_KEYS in self.strategies

    @property
    def replaces(self) -> bool:
        return REPLACE in self.strategies

    @property
    def strategy(self) -> str:
        """Upstream's spelling for `x-kubernetes-patch-strategy`, e.g. "merge,retainKeys"."""
        return ",".join(s for s in (MERGE, REPLACE, RETAIN_KEYS) if s in self.strategies)


def _m(strategy: str, merge_key: str | None = None) -> FieldPatchMeta:
    return FieldPatchMeta(frozenset(strategy.split(",")), merge_key)


_CONTAINER_LISTS = {
    "ports": _m("merge", "containerPort"),
    "env": _m("merge", "name"),
    "volumeMounts": _m("merge", "mountPath"),
    "volumeDevices": _m("merge", "devicePath"),
    # envFrom, resizePolicy (+listType=atomic), restartPolicyRules: no strategy, replaced whole.
}

#: (client model, JSON field) → tags, transcribed from upstream's types.go files.
_TABLE: dict[tuple[str, str], FieldPatchMeta] = {
    # meta/v1 ObjectMeta
    ("V1ObjectMeta", "finalizers"): _m("merge"),
    ("V1ObjectMeta", "ownerReferences"): _m("merge", "uid"),
    # core/v1 PodSpec (tolerations, readinessGates: atomic)
    ("V1PodSpec", "volumes"): _m("merge,retainKeys", "name"),
    ("V1PodSpec", "initContainers"): _m("merge", "name"),
    ("V1PodSpec", "containers"): _m("merge", "name"),
    ("V1PodSpec", "ephemeralContainers"): _m("merge", "name"),
    ("V1PodSpec", "imagePullSecrets"): _m("merge", "name"),
    ("V1PodSpec", "hostAliases"): _m("merge", "ip"),
    ("V1PodSpec", "topologySpreadConstraints"): _m("merge", "topologyKey"),
    ("V1PodSpec", "schedulingGates"): _m("merge", "name"),
    ("V1PodSpec", "resourceClaims"): _m("merge,retainKeys", "name"),
    ("V1PodSpec", "evictionResponders"): _m("merge", "name"),
    # core/v1 Container and EphemeralContainer (EphemeralContainerCommon mirrors Container)
    **{("V1Container", f): meta for f, meta in _CONTAINER_LISTS.items()},
    **{("V1EphemeralContainer", f): meta for f, meta in _CONTAINER_LISTS.items()},
    # core/v1 PodStatus (container statuses: atomic)
    ("V1PodStatus", "conditions"): _m("merge", "type"),
    ("V1PodStatus", "podIPs"): _m("merge", "ip"),
    ("V1PodStatus", "hostIPs"): _m("merge", "ip"),
    ("V1PodStatus", "resourceClaimStatuses"): _m("merge,retainKeys", "name"),
    ("V1ContainerStatus", "allocatedResourcesStatus"): _m("merge", "name"),
    ("V1ContainerStatus", "volumeMounts"): _m("merge", "mountPath"),
    # core/v1 Node (taints: atomic)
    ("V1NodeSpec", "podCIDRs"): _m("merge"),
    ("V1NodeStatus", "conditions"): _m("merge", "type"),
    ("V1NodeStatus", "addresses"): _m("merge", "type"),
    # core/v1 Namespace
    ("V1NamespaceStatus", "conditions"): _m("merge", "type"),
    # core/v1 Service and ServiceAccount (ServiceAccount.imagePullSecrets: atomic; Endpoints'
    # subsets and discovery/v1 EndpointSlice's lists: atomic)
    ("V1ServiceSpec", "ports"): _m("merge", "port"),
    ("V1ServiceStatus", "conditions"): _m("merge", "type"),
    ("V1ServiceAccount", "secrets"): _m("merge", "name"),
    # core/v1 PersistentVolumeClaim (claims, and a StatefulSet's claim templates)
    ("V1PersistentVolumeClaimStatus", "conditions"): _m("merge", "type"),
    # apps/v1
    ("V1DeploymentSpec", "strategy"): _m("retainKeys"),
    ("V1DeploymentStatus", "conditions"): _m("merge", "type"),
    ("V1ReplicaSetStatus", "conditions"): _m("merge", "type"),
    ("V1StatefulSetStatus", "conditions"): _m("merge", "type"),
    ("V1DaemonSetStatus", "conditions"): _m("merge", "type"),
    # batch/v1
    ("V1JobStatus", "conditions"): _m("merge", "type"),
    # policy/v1 (+listType=map +listMapKey=type as well)
    ("V1PodDisruptionBudgetStatus", "conditions"): _m("merge", "type"),
}


@functools.cache
def field_meta(model: str, field: str) -> FieldPatchMeta | None:
    """The strategic-merge tags of `model.field` (client model name, JSON field), or None."""
    return _TABLE.get((model, field))


def tagged_fields() -> dict[tuple[str, str], FieldPatchMeta]:
    """Every tagged (model, field), for OpenAPI generation and tests."""
    return dict(_TABLE)


class PatchSchema:
    """Strategic-merge metadata at one position of an object, found by walking the client models.

    A node is either a model (fields have metadata), a map (`Dict[str, X]`: every value has the
    schema of X), or opaque (no metadata below it: lists replace, maps merge).
    """

    __slots__ = ("_map_value", "_model")

    def __init__(self, root_model: str | None) -> None:
        self._model = root_model
        self._map_value: str | None = None

    def __repr__(self) -> str:
        if self._map_value is not None:
            return f"PatchSchema(map of {self._map_value})"
        return f"PatchSchema({self._model!r})"

    @property
    def model(self) -> str | None:
        return self._model

    def meta(self, field: str) -> FieldPatchMeta | None:
        """Tags of `field` at this position; None where it has none (or nothing is known)."""
        if self._model is None:
            return None
        return field_meta(self._model, field)

    def child(self, field: str) -> PatchSchema:
        """Schema of `field`'s value; for lists and maps, of one element / value."""
        if self._map_value is not None:
            return _schema_of_type(self._map_value)
        if self._model is None:
            return _OPAQUE
        return _child_of_model(self._model, field)


_OPAQUE = PatchSchema(None)


@functools.cache
def _schema_of_type(type_: str) -> PatchSchema:
    element = list_element(type_)
    while element is not None:
        type_ = element
        element = list_element(type_)
    value = dict_value(type_)
    if value is not None:
        node = PatchSchema(None)
        node._map_value = value
        return node
    if is_model(type_):
        return PatchSchema(type_)
    return _OPAQUE


@functools.cache
def _child_of_model(model: str, field: str) -> PatchSchema:
    type_ = model_fields(model).get(field)
    return _OPAQUE if type_ is None else _schema_of_type(type_)


def schema_for_kind(kind: Kind) -> PatchSchema | None:
    """The schema of a served kind's objects; None for kinds without a client model (CRDs).

    Upstream answers 415 Unsupported Media Type to a strategic merge patch on a custom resource,
    since it has no struct tags to merge by; the API server does that when this returns None.
    """
    if kind.model is None:
        return None
    return _schema_of_type(kind.model)
