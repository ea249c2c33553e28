"""``VerticalPodAutoscalerCheckpoint`` objects: the recommender's history across restarts.

As upstream's checkpoint writer and cluster feeder: one object per VPA and container, named
``<vpa>-<container>`` in the VPA's namespace, ``spec`` naming both, ``status`` the
aggregate's histograms (:meth:`~.model.AggregateContainerState.save_checkpoint`). A
checkpoint of another version, or one that does not parse, is skipped and the container
starts from empty, as upstream does.

What the ``inplace`` variant learns beyond upstream's histograms — the memory jump behind its
rise margin and the OOM/pause floor — has no field in upstream's status, whose schema is
fixed. It travels as the object's annotations (``inplace.dev/memory-jump``,
``inplace.dev/memory-floor`` and their times,
:meth:`~.model.AggregateContainerState.learned_annotations`), written in the same request
as the status (:func:`checkpoint_patch`, or the create) and read back by
:func:`load_checkpoint`. Upstream's recommender ignores them and keeps them when it replaces
the status; a checkpoint without them (upstream's) loads as one where nothing was learned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from inplace.api.annotations import CHECKPOINT_ANNOTATIONS

from .histogram import CheckpointError
from .model import AggregateContainerState
from .recommender import Recommender, VpaKey

__all__ = [
    "API_VERSION",
    "KIND",
    "checkpoint_name",
    "checkpoint_objects",
    "checkpoint_patch",
    "load_checkpoint",
    "load_checkpoints",
]

API_VERSION: Final = "autoscaling.k8s.io/v1"
KIND: Final = "VerticalPodAutoscalerCheckpoint"


def checkpoint_name(vpa_name: str, container: str) -> str:
    return f"{vpa_name}-{container}"


def checkpoint_objects(recommender: Recommender, vpa: VpaKey) -> list[dict[str, Any]]:
    """The checkpoint objects to write for one VPA (create, or replace their status)."""
    namespace, name = vpa
    now = recommender.clock.now()
    out = []
    for container, state in sorted(recommender.aggregates(vpa).items()):
        metadata: dict[str, Any] = {
            "name": checkpoint_name(name, container),
            "namespace": namespace,
        }
        learned = state.learned_annotations()
        if learned:
            metadata["annotations"] = learned
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "metadata": metadata,
                "spec": {"vpaObjectName": name, "containerName": container},
                "status": state.save_checkpoint(now),
            }
        )
    return out


def checkpoint_patch(obj: Mapping[str, Any], stored: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON patch (RFC 6902) that brings ``stored``, the checkpoint as last listed, to
    ``obj`` in one write: the status replaced whole, as upstream's writer replaces it (a
    merge patch would merge ``bucketWeights`` with the stored ones, keeping buckets the
    histogram no longer has), and the annotations replaced by ``stored``'s others plus ours
    (a margin no longer learned is removed, so it is not read back)."""
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/status", "value": obj["status"]}]
    current = (stored.get("metadata") or {}).get("annotations")
    current = dict(current) if isinstance(current, Mapping) else {}
    ours = (obj.get("metadata") or {}).get("annotations") or {}
    annotations = {k: v for k, v in current.items() if k not in CHECKPOINT_ANNOTATIONS}
    annotations.update(ours)
    if annotations != current:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": annotations})
    return ops


def load_checkpoint(recommender: Recommender, obj: Mapping[str, Any]) -> VpaKey:
    """Restore one checkpoint object's history into the recommender (merged with what it
    already holds, :meth:`~.model.AggregateContainerState.merge`), with what its annotations
    say was learned. Raises :class:`CheckpointError` when the status cannot be used; the
    annotations never make it fail."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    namespace = metadata.get("namespace") or ""
    vpa_name = spec.get("vpaObjectName")
    container = spec.get("containerName")
    if not isinstance(vpa_name, str) or not vpa_name:
        raise CheckpointError("spec.vpaObjectName is required")
    if not isinstance(container, str) or not container:
        raise CheckpointError("spec.containerName is required")
    status = obj.get("status")
    if not isinstance(status, Mapping):
        raise CheckpointError("status is required")
    key: VpaKey = (str(namespace), vpa_name)
    # Load into a fresh aggregate first, so a bad checkpoint changes nothing.
    fresh = AggregateContainerState(recommender.settings, creation_time=recommender.clock.now())
    fresh.load_checkpoint(status)
    fresh.load_learned(metadata.get("annotations"))
    recommender.aggregate(key, container).merge(fresh)
    return key


def load_checkpoints(
    recommender: Recommender, objects: Iterable[Mapping[str, Any]], vpas: Iterable[VpaKey]
) -> list[tuple[str, str]]:
    """Load every checkpoint whose VPA exists; returns ``(name, reason)`` for those skipped
    (unknown VPA, other version, bad data) so the caller can log or delete them."""
    known = set(vpas)
    skipped: list[tuple[str, str]] = []
    for obj in objects:
        name = str((obj.get("metadata") or {}).get("name", ""))
        namespace = str((obj.get("metadata") or {}).get("namespace", ""))
        vpa_name = (obj.get("spec") or {}).get("vpaObjectName")
        if (namespace, vpa_name) not in known:
            skipped.append((name, f"cannot load checkpoint to missing VPA object {vpa_name}"))
            continue
        try:
            load_checkpoint(recommender, obj)
        except CheckpointError as exc:
            skipped.append((name, str(exc)))
    return skipped
