"""What to do with a workload the operator's webhook held (``inplace.dev/held``), as pure
functions of the objects in the informers: the steps that move its pods to the new template
without replacing them, then the step that gives the real controller its workload back.

* **Deployment** (held paused): bring the current ReplicaSet's template to the Deployment's
  (keeping its ``pod-template-hash``); wait until the deployment controller has seen it
  (its status counts that ReplicaSet's pods as updated for the current generation: only a
  sync that found it as the new ReplicaSet writes that), then unpause. The deployment
  controller then finds that ReplicaSet as the new one and rolls nothing out; the
  workload-resize controller resizes its pods. When no ReplicaSet can take the change in
  place, it is simply unpaused and rolls out as upstream.
* **StatefulSet** and **DaemonSet** (held at ``OnDelete``): once the controller has made the
  update revision for the current generation, relabel every pod whose change to it is
  in-place-able (:func:`~inplace.controllers.workloadresize.revisions.in_place_labels`; a
  StatefulSet's pods below the user's ``partition`` stay); wait until the controller's
  status counts every relabelled pod as updated (``updatedReplicas``,
  ``updatedNumberScheduled``), then restore the user's update strategy: the pods left at an
  older revision roll out under it, as upstream's.

  The wait is what keeps the relabelled pods: the real controller reads pods and its
  workload from two informers, and the restore can reach it before the relabels do. A
  RollingUpdate sync on that stale view would replace the highest-ordinal pod it still
  believes old. A status that counts a relabel was computed from a pod cache holding it,
  and caches only move forward, so the sync after the restore sees it too.

Each call returns the next steps only; the controller carries them out and looks again, so
a crash between two steps resumes where it stopped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inplace.api.annotations import HELD, parse_held
from inplace.api.validation.equality import semantic

from ..deployment.controller import find_new_replica_set
from ..deployment.rollout import POD_TEMPLATE_HASH, equal_ignoring_hash
from ..history import REVISION_HASH_LABEL, sort_revisions, template_of
from ..workloadresize.revisions import in_place_labels

__all__ = [
    "DAEMONSET_GENERATION",
    "TEMPLATE_GENERATION",
    "Relabel",
    "Restore",
    "Step",
    "UpdateReplicaSet",
    "Wait",
    "daemon_set_plan",
    "deployment_plan",
    "stateful_set_plan",
]

Obj = dict[str, Any]

DAEMONSET_GENERATION = "deprecated.daemonset.template.generation"
TEMPLATE_GENERATION = "pod-template-generation"


@dataclass(frozen=True)
class UpdateReplicaSet:
    replica_set: Obj
    template: Obj


@dataclass(frozen=True)
class Relabel:
    pod: Obj
    labels: dict[str, str]


@dataclass(frozen=True)
class Restore:
    """Give the workload back: a merge patch restoring what the webhook changed."""

    patch: Obj
    message: str


@dataclass(frozen=True)
class Wait:
    reason: str


Step = UpdateReplicaSet | Relabel | Restore | Wait


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _observed(obj: Mapping[str, Any]) -> bool:
    """The workload's controller has synced its current generation."""
    observed = (obj.get("status") or {}).get("observedGeneration")
    return isinstance(observed, int) and observed >= int(_meta(obj).get("generation") or 0)


def _restore(spec: Obj, message: str) -> Restore:
    return Restore({"metadata": {"annotations": {HELD: None}}, "spec": spec}, message)


def deployment_plan(d: Mapping[str, Any], replica_sets: Sequence[Obj]) -> list[Step]:
    held = parse_held(d)
    if held is None:
        return []
    paused = bool(held.get("paused", False))
    template = (d.get("spec") or {}).get("template") or {}
    unpause = _restore({"paused": paused}, "rollout hold released: the change was made in place")
    current = next(
        (
            rs
            for rs in replica_sets
            if equal_ignoring_hash((rs.get("spec") or {}).get("template") or {}, template)
        ),
        None,
    )
    if current is not None:
        status = d.get("status") or {}
        have = int((current.get("status") or {}).get("replicas") or 0)
        if not _observed(d) or (have and status.get("updatedReplicas") != have):
            name = _meta(current).get("name")
            return [Wait(f"the deployment controller has not yet seen ReplicaSet {name} anew")]
        return [unpause]
    rs, in_place = find_new_replica_set(d, list(replica_sets))
    if rs is None or not in_place:
        return [_restore({"paused": paused}, "rollout hold released: the change rolls out")]
    new = copy.deepcopy(dict(template))
    labels = dict(((new.get("metadata") or {}).get("labels")) or {})
    rs_labels = ((rs.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels")
    if isinstance(rs_labels, Mapping) and POD_TEMPLATE_HASH in rs_labels:
        labels[POD_TEMPLATE_HASH] = rs_labels[POD_TEMPLATE_HASH]
    new["metadata"] = {**(new.get("metadata") or {}), "labels": labels}
    return [UpdateReplicaSet(rs, new)]


def _ordinal(pod: Mapping[str, Any]) -> int:
    _, _, tail = str(_meta(pod).get("name") or "").rpartition("-")
    return int(tail) if tail.isdigit() else -1


def _partition(strategy: Mapping[str, Any]) -> int:
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0
    value = (strategy.get("rollingUpdate") or {}).get("partition")
    return int(value) if isinstance(value, int) else 0


def _labelled(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``pod`` carries every one of ``labels`` (it counts as at the update revision)."""
    have = _meta(pod).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _node_of(pod: Mapping[str, Any]) -> str:
    """The node a daemon pod stands for: its node, or itself while it has none."""
    return str((pod.get("spec") or {}).get("nodeName") or f"pod/{_meta(pod).get('name')}")


def _relabels(
    pods: Iterable[Obj], revisions: Sequence[Obj], update: Obj, labels: dict[str, str]
) -> list[Step]:
    steps: list[Step] = []
    for pod in pods:
        moved = in_place_labels(pod, revisions, update, labels)
        if moved:
            steps.append(Relabel(pod, moved))
    return steps


def stateful_set_plan(
    sts: Mapping[str, Any], revisions: Sequence[Obj], pods: Iterable[Obj]
) -> list[Step]:
    held = parse_held(sts)
    if held is None:
        return []
    strategy = held.get("updateStrategy") or {"type": "RollingUpdate"}
    name = (sts.get("status") or {}).get("updateRevision")
    update = next((r for r in revisions if _meta(r).get("name") == name), None)
    if not _observed(sts) or update is None:
        return [Wait("the statefulset controller has not yet made the update revision")]
    partition = _partition(strategy)
    pods = list(pods)
    held_pods = [p for p in pods if _ordinal(p) >= partition]
    labels = {REVISION_HASH_LABEL: str(name)}
    steps = _relabels(held_pods, revisions, update, labels)
    if steps:
        return steps
    updated = sum(1 for p in pods if _labelled(p, labels))
    if int((sts.get("status") or {}).get("updatedReplicas") or 0) < updated:
        return [Wait("the statefulset controller has not yet counted the relabelled pods")]
    return [_restore({"updateStrategy": strategy}, "update strategy restored")]


def daemon_set_plan(
    ds: Mapping[str, Any], revisions: Sequence[Obj], pods: Iterable[Obj]
) -> list[Step]:
    held = parse_held(ds)
    if held is None:
        return []
    strategy = held.get("updateStrategy") or {"type": "RollingUpdate"}
    template = semantic((ds.get("spec") or {}).get("template") or {})
    generation = (_meta(ds).get("annotations") or {}).get(DAEMONSET_GENERATION)
    update = next(
        (r for r in reversed(sort_revisions(revisions)) if semantic(template_of(r)) == template),
        None,
    )
    if not _observed(ds) or update is None or generation is None:
        return [Wait("the daemonset controller has not yet made the update revision")]
    labels = {
        REVISION_HASH_LABEL: str((_meta(update).get("labels") or {}).get(REVISION_HASH_LABEL)),
        TEMPLATE_GENERATION: str(generation),
    }
    pods = list(pods)
    steps = _relabels(pods, revisions, update, labels)
    if steps:
        return steps
    # The controller counts nodes, each by its pod (upstream's ``updatedNumberScheduled``).
    nodes = {_node_of(p) for p in pods if _labelled(p, labels)}
    if int((ds.get("status") or {}).get("updatedNumberScheduled") or 0) < len(nodes):
        return [Wait("the daemonset controller has not yet counted the relabelled pods")]
    return [_restore({"updateStrategy": strategy}, "update strategy restored")]
