"""The DaemonSet controller's decisions as pure functions of plain dicts (no I/O, no clock).

Transcribed from upstream's ``pkg/controller/daemon`` (``daemon_controller.go``,
``update.go``, ``util/daemonset_util.go``) so a DaemonSet behaves as on a real cluster:

* which nodes should run a daemon pod (:func:`node_should_run`, upstream's
  ``NodeShouldRunDaemonPod``): the template's ``nodeName``, ``nodeSelector`` and required
  node affinity, and the node's ``NoSchedule``/``NoExecute`` taints against the template's
  tolerations plus the ones every daemon pod gets (:func:`with_daemon_tolerations`);
* what ``manage`` does on each node (:func:`manage`): create the missing pod, delete pods on
  nodes that should not run one, failed and succeeded pods, duplicates (the oldest kept);
  with ``maxSurge``, keep an old and a new pod side by side until the new one is available;
* the rolling update (:func:`rolling_update`): delete old pods within ``maxUnavailable``,
  or, with ``maxSurge``, create the new pod next to the old one;
* the in-place rule (:func:`in_place_adoptions`): an old pod whose revision differs from
  the update revision only in what a resize changes is relabelled, not replaced;
* the status counts (:func:`daemon_set_status`) and the history bookkeeping
  (:func:`split_history`, :func:`history_to_clean`).

Pods are grouped by the node they are for (:func:`pods_by_node`: ``spec.nodeName``, or the
``matchFields`` term the controller writes before the scheduler has bound the pod).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from inplace.api.placement import affinity_matches, untolerated_taint
from inplace.api.timestamps import parse_rfc3339
from inplace.api.validation.equality import semantic

from ..deployment.rollout import scaled_value
from ..history import REVISION_HASH_LABEL, history_to_delete, revision_data
from ..pods import is_available, is_ready, is_terminating
from ..workloadresize.revisions import in_place_labels

__all__ = [
    "DAEMON_TOLERATIONS",
    "NETWORK_UNAVAILABLE_TOLERATION",
    "REVISION_HASH_LABEL",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "ManagePlan",
    "RollingPlan",
    "allows_surge",
    "creation_order",
    "daemon_pod_template",
    "daemon_set_status",
    "desired_counts",
    "history_to_clean",
    "in_place_adoptions",
    "is_pod_updated",
    "manage",
    "matches_revision",
    "node_should_run",
    "pods_by_node",
    "revision_labels",
    "rolling_update",
    "split_history",
    "status_unchanged",
    "target_node",
    "template_generation",
    "with_daemon_tolerations",
    "with_node_affinity",
]

Obj = dict[str, Any]

TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
"""On the DaemonSet, kept by the API server: bumped on every template change."""
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"
"""On a daemon pod: the template generation it was made from (upstream's
``DaemonSetTemplateGenerationKey``)."""

DAEMON_TOLERATIONS: Final[tuple[Mapping[str, str], ...]] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
"""What every daemon pod tolerates (upstream's ``AddOrUpdateDaemonPodTolerations``): node
problems must not evict or keep out the pods that often are the node's own services."""
NETWORK_UNAVAILABLE_TOLERATION: Final[Mapping[str, str]] = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}
"""Added for ``hostNetwork`` pods only: they do not need the pod network."""

_NAME_FIELD: Final = "metadata.name"


# -- the pods a DaemonSet makes ---------------------------------------------------------------


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Upstream's ``Toleration.MatchToleration``: key, operator, value and effect."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def with_daemon_tolerations(spec: Mapping[str, Any]) -> Obj:
    """``spec`` with the daemon tolerations added, each replacing a toleration of the same
    key, operator, value and effect (a ``tolerationSeconds`` on it is dropped, as upstream's
    ``AddOrUpdateTolerationInPodSpec`` does)."""
    wanted = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(NETWORK_UNAVAILABLE_TOLERATION)
    tolerations: list[Obj] = [dict(t) for t in spec.get("tolerations") or ()]
    for toleration in wanted:
        for i, existing in enumerate(tolerations):
            if _same_toleration(existing, toleration):
                tolerations[i] = dict(toleration)
                break
        else:
            tolerations.append(dict(toleration))
    return {**spec, "tolerations": tolerations}


def template_generation(ds: Mapping[str, Any]) -> int | None:
    """The ``deprecated.daemonset.template.generation`` annotation (None: absent or not a
    number, which upstream also treats as absent)."""
    text = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if text is None:
        return None
    try:
        return int(str(text))
    except ValueError:
        return None


def revision_labels(hash_: str, generation: int | None) -> dict[str, str]:
    """The labels that say which revision a daemon pod is of."""
    labels = {REVISION_HASH_LABEL: hash_}
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    return labels


def daemon_pod_template(ds: Mapping[str, Any], hash_: str) -> Obj:
    """The template new daemon pods are made from (upstream's ``CreatePodTemplate``): the
    DaemonSet's, with the daemon tolerations and the revision labels."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    meta = dict(template.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[REVISION_HASH_LABEL] = hash_
    meta["labels"] = labels
    template["metadata"] = meta
    template["spec"] = with_daemon_tolerations(template.get("spec") or {})
    return template


def with_node_affinity(spec: Mapping[str, Any], node_name: str) -> Obj:
    """``spec`` whose required node affinity is the one term ``metadata.name In [node]``,
    replacing any required terms (upstream's ``ReplaceDaemonSetPodNodeNameNodeAffinity``):
    the default scheduler then binds the pod to that node and nowhere else. Preferred
    terms and pod (anti-)affinity are kept."""
    term = {"matchFields": [{"key": _NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    return {**spec, "affinity": affinity}


def target_node(pod: Mapping[str, Any]) -> str | None:
    """The node a daemon pod is for (upstream's ``GetTargetNodeName``): ``spec.nodeName``,
    else the single value of a ``metadata.name In`` field term; None when neither says."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for expr in term.get("matchFields") or ():
            if expr.get("key") == _NAME_FIELD and expr.get("operator") == "In":
                values = list(expr.get("values") or ())
                return str(values[0]) if len(values) == 1 else None
    return None


def is_pod_updated(pod: Mapping[str, Any], hash_: str, generation: int | None) -> bool:
    """Is ``pod`` of the current revision? Its hash label says so, or (for pods made before
    revisions had hashes) its template generation label does (upstream's ``IsPodUpdated``)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if hash_ and labels.get(REVISION_HASH_LABEL) == hash_:
        return True
    return generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)


def _created(pod: Mapping[str, Any]) -> float:
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(str(stamp)).timestamp() if stamp else 0.0
    except ValueError:
        return 0.0


def creation_order(pods: Iterable[Obj]) -> list[Obj]:
    """Bound pods first, then oldest first, then by name (upstream's
    ``podByCreationTimestampAndPhase``): the first one is the pod a node keeps."""
    return sorted(
        pods,
        key=lambda p: (
            not (p.get("spec") or {}).get("nodeName"),
            _created(p),
            str((p.get("metadata") or {}).get("name") or ""),
        ),
    )


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def pods_by_node(
    pods: Iterable[Obj], *, include_deleted_terminal: bool = False
) -> dict[str, list[Obj]]:
    """The DaemonSet's pods grouped by the node they are for. A finished pod being deleted
    is left out (nothing more to do with it) unless ``include_deleted_terminal`` (the
    history cleanup still counts its revision as live); a pod naming no node is left out."""
    out: dict[str, list[Obj]] = {}
    for pod in pods:
        if (
            not include_deleted_terminal
            and _phase(pod) in ("Succeeded", "Failed")
            and is_terminating(pod)
        ):
            continue
        node = target_node(pod)
        if node is None:
            continue
        out.setdefault(node, []).append(pod)
    return out


# -- which nodes ------------------------------------------------------------------------------


def _required_terms(spec: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return None
    return list(required.get("nodeSelectorTerms") or ())


def node_should_run(node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(should_run, should_continue_running)`` of ``ds`` on ``node`` (upstream's
    ``NodeShouldRunDaemonPod``). A node whose taints the pod does not tolerate gets no new
    pod; one it already runs keeps running unless a ``NoExecute`` taint is untolerated."""
    name = str((node.get("metadata") or {}).get("name") or "")
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    wanted = spec.get("nodeName")
    if wanted and wanted != name:
        return False, False
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not affinity_matches(spec.get("nodeSelector") or {}, _required_terms(spec), labels, name):
        return False, False
    tolerations = with_daemon_tolerations(spec)["tolerations"]
    taints = (node.get("spec") or {}).get("taints") or ()
    if untolerated_taint(taints, tolerations) is None:
        return True, True
    no_execute = [t for t in taints if t.get("effect") == "NoExecute"]
    return False, untolerated_taint(no_execute, tolerations) is None


# -- manage: one pod on each node that should run one -----------------------------------------


def _rolling(ds: Mapping[str, Any]) -> Mapping[str, Any] | None:
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate")
    return rolling if isinstance(rolling, Mapping) else None


def surge_count(ds: Mapping[str, Any], total: int) -> int:
    """``maxSurge`` of ``total`` nodes, rounded up (0 unless RollingUpdate sets it)."""
    rolling = _rolling(ds)
    if rolling is None or rolling.get("maxSurge") is None:
        return 0
    return scaled_value(rolling["maxSurge"], total, round_up=True)


def unavailable_count(ds: Mapping[str, Any], total: int) -> int:
    """``maxUnavailable`` of ``total`` nodes, rounded up (0 unless RollingUpdate)."""
    rolling = _rolling(ds)
    if rolling is None:
        return 0
    return scaled_value(rolling.get("maxUnavailable"), total, round_up=True)


def allows_surge(ds: Mapping[str, Any]) -> bool:
    """May a node run an old and a new pod at once (upstream's ``AllowsSurge``)?"""
    return surge_count(ds, 1) > 0


def _min_ready(ds: Mapping[str, Any]) -> int:
    return int((ds.get("spec") or {}).get("minReadySeconds") or 0)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


@dataclass
class ManagePlan:
    """What ``manage`` does in one sync."""

    create_on: list[str] = field(default_factory=list)
    """Nodes that get a new pod."""
    delete: list[Obj] = field(default_factory=list)
    """Pods to delete now."""
    failed: list[tuple[Obj, str]] = field(default_factory=list)
    """Failed pods and their nodes: deleted under a per-node back-off (the kubelet may be
    rejecting every pod there), with a ``FailedDaemonPod`` event."""
    succeeded: list[tuple[Obj, str]] = field(default_factory=list)
    """Succeeded pods and their nodes: deleted, with a ``SucceededDaemonPod`` event."""


def _on_node(
    ds: Mapping[str, Any],
    node: Mapping[str, Any],
    pods: Sequence[Obj] | None,
    hash_: str,
    now: float,
    plan: ManagePlan,
) -> None:
    """Upstream's ``podsShouldBeOnNode`` for one node."""
    name = _name(node)
    should_run, should_continue = node_should_run(node, ds)
    if should_run and pods is None:
        plan.create_on.append(name)
        return
    if should_continue:
        running: list[Obj] = []
        for pod in pods or ():
            if is_terminating(pod):
                continue
            if _phase(pod) == "Failed":
                plan.failed.append((pod, name))
            elif _phase(pod) == "Succeeded":
                plan.succeeded.append((pod, name))
            else:
                running.append(pod)
        if not allows_surge(ds):
            # One pod per node: the oldest stays, a second one made by a race goes.
            plan.delete.extend(creation_order(running)[1:])
            return
        if len(running) <= 1:
            if not running and should_run:
                plan.create_on.append(name)
            return
        # Surging: an old and a new pod may share the node while the new one is not
        # available yet (or the old one is not ready any more); everything else goes.
        oldest_new: Obj | None = None
        oldest_old: Obj | None = None
        for pod in creation_order(running):
            if ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH_LABEL) == hash_:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            plan.delete.append(pod)
        if (
            oldest_new is not None
            and oldest_old is not None
            and (not is_ready(oldest_old) or is_available(oldest_new, _min_ready(ds), now))
        ):
            plan.delete.append(oldest_old)
        return
    if pods:
        plan.delete.extend(p for p in pods if not is_terminating(p))


def manage(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    by_node: Mapping[str, Sequence[Obj]],
    hash_: str,
    now: float,
) -> ManagePlan:
    """Upstream's ``manage``: each node's pods set right, and pods waiting for a node that
    no longer exists deleted (nothing else would: the pod garbage collector only ends pods
    bound to a missing node)."""
    plan = ManagePlan()
    for node in nodes:
        _on_node(ds, node, by_node.get(_name(node)), hash_, now, plan)
    names = {_name(n) for n in nodes}
    for node_name in sorted(by_node):
        if node_name in names:
            continue
        plan.delete.extend(
            p for p in by_node[node_name] if not (p.get("spec") or {}).get("nodeName")
        )
    return plan


# -- the rolling update -------------------------------------------------------------------------


def desired_counts(
    ds: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]
) -> tuple[int, int, int, list[str]]:
    """``(max_surge, max_unavailable, desired, wanted_nodes)`` (upstream's
    ``updatedDesiredNodeCounts``): neither surge nor unavailability resolving above zero
    means one unavailable pod at a time."""
    wanted = [_name(n) for n in nodes if node_should_run(n, ds)[0]]
    desired = len(wanted)
    max_unavailable = unavailable_count(ds, desired)
    max_surge = surge_count(ds, desired)
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    return max_surge, max_unavailable, desired, wanted


def _new_and_old(
    pods: Sequence[Obj], hash_: str, generation: int | None
) -> tuple[Obj | None, Obj | None, bool]:
    """Upstream's ``findUpdatedPodsOnNode``: the node's one new and one old pod (not being
    deleted); ``ok`` False when it has more of either (``manage`` trims them first)."""
    new: Obj | None = None
    old: Obj | None = None
    for pod in pods:
        if is_terminating(pod):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


@dataclass
class RollingPlan:
    delete: list[Obj] = field(default_factory=list)
    create_on: list[str] = field(default_factory=list)


def rolling_update(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    by_node: Mapping[str, Sequence[Obj]],
    hash_: str,
    now: float,
) -> RollingPlan:
    """Upstream's ``rollingUpdate``: which old pods to delete, or (with ``maxSurge``) on
    which nodes to start the new pod beside the old one.

    Without surge: old pods that are not available are replaced at once; available ones
    only while fewer than ``maxUnavailable`` pods are unavailable (a node missing its pod,
    or whose new pod is not available yet, counts). With surge: a new pod is started next
    to every unavailable old one, and next to available ones up to ``maxSurge`` at a time;
    an old pod goes once its node's new pod is available.
    """
    max_surge, max_unavailable, desired, wanted = desired_counts(ds, nodes)
    generation = template_generation(ds)
    min_ready = _min_ready(ds)
    pods_of: dict[str, Sequence[Obj]] = {name: () for name in wanted}
    pods_of.update(by_node)
    plan = RollingPlan()

    if max_surge == 0:
        unavailable = 0
        replace: list[Obj] = []
        candidates: list[Obj] = []
        for node_name in sorted(pods_of):
            new, old, ok = _new_and_old(pods_of[node_name], hash_, generation)
            if not ok or (old is None) == (new is None):
                # Excess pods, or none at all, or both: manage is still at work here.
                unavailable += 1
            elif new is not None:
                if not is_available(new, min_ready, now):
                    unavailable += 1
            elif old is not None:
                if not is_available(old, min_ready, now):
                    replace.append(old)
                    unavailable += 1
                elif unavailable < max_unavailable:
                    candidates.append(old)
        room = max(0, min(max_unavailable - unavailable, len(candidates)))
        plan.delete = replace + candidates[:room]
        return plan

    node_objects = {_name(n): n for n in nodes}

    def should_run(node_name: str) -> bool:
        # A pod for a node that is gone: nothing should run there (upstream fails the
        # sync until the pod garbage collector has removed it).
        node = node_objects.get(node_name)
        return node is not None and node_should_run(node, ds)[0]

    surging = 0
    available = 0
    should_not_run: list[Obj] = []
    allowed: list[str] = []
    candidate_nodes: list[str] = []
    for node_name in sorted(pods_of):
        new, old, ok = _new_and_old(pods_of[node_name], hash_, generation)
        if not ok:
            surging += 1
            continue
        if old is not None:
            available += is_available(old, min_ready, now)
        elif new is not None:
            available += is_available(new, min_ready, now)
        if old is None:
            continue
        if new is None:
            if not is_available(old, min_ready, now):
                if not should_run(node_name):
                    plan.delete.append(old)
                    continue
                allowed.append(node_name)
                continue
            if not should_run(node_name):
                should_not_run.append(old)
                continue
            if surging >= max_surge:
                continue
            candidate_nodes.append(node_name)
            continue
        if not is_available(new, min_ready, now):
            surging += 1
            continue
        plan.delete.append(old)
    # Surging promises full availability: a pod on a node the DaemonSet left goes only
    # while more pods are available than desired.
    deletable = min(available - desired, len(should_not_run))
    if deletable > 0:
        plan.delete.extend(should_not_run[:deletable])
    room = max(0, min(max_surge - surging, len(candidate_nodes)))
    plan.create_on = allowed + candidate_nodes[:room]
    return plan


# -- the in-place rule -------------------------------------------------------------------------


def in_place_adoptions(
    by_node: Mapping[str, Sequence[Obj]],
    revisions: Sequence[Mapping[str, Any]],
    update_revision: Mapping[str, Any],
    hash_: str,
    generation: int | None,
) -> list[tuple[Obj, dict[str, str]]]:
    """The old pods that move to ``update_revision`` by relabelling (its template differs
    from theirs only in what a resize changes), with the labels to write; the others are
    left to the update strategy to replace. Pods finished or being deleted are not moved."""
    labels = revision_labels(hash_, generation)
    out: list[tuple[Obj, dict[str, str]]] = []
    for node_name in sorted(by_node):
        for pod in by_node[node_name]:
            if is_terminating(pod) or _phase(pod) in ("Succeeded", "Failed"):
                continue
            if is_pod_updated(pod, hash_, generation):
                continue
            moved = in_place_labels(pod, revisions, update_revision, labels)
            if moved:
                out.append((pod, moved))
    return out


# -- status ---------------------------------------------------------------------------------------

_COUNTS: Final = (
    "desiredNumberScheduled",
    "currentNumberScheduled",
    "numberMisscheduled",
    "numberReady",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
)


def daemon_set_status(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    by_node: Mapping[str, Sequence[Obj]],
    hash_: str,
    now: float,
) -> dict[str, int]:
    """The counts upstream's ``updateDaemonSetStatus`` writes. A node that should run a pod
    and has one is judged by its oldest pod (ready, available after ``minReadySeconds``,
    of the current revision); a node that has one but should not is misscheduled."""
    counts = dict.fromkeys(_COUNTS, 0)
    generation = template_generation(ds)
    min_ready = _min_ready(ds)
    for node in nodes:
        should_run, _ = node_should_run(node, ds)
        pods = by_node.get(_name(node)) or ()
        if not should_run:
            if pods:
                counts["numberMisscheduled"] += 1
            continue
        counts["desiredNumberScheduled"] += 1
        if not pods:
            continue
        counts["currentNumberScheduled"] += 1
        pod = creation_order(pods)[0]
        if is_ready(pod):
            counts["numberReady"] += 1
            if is_available(pod, min_ready, now):
                counts["numberAvailable"] += 1
        if is_pod_updated(pod, hash_, generation):
            counts["updatedNumberScheduled"] += 1
    counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
    return counts


def status_unchanged(ds: Mapping[str, Any], counts: Mapping[str, int]) -> bool:
    """Upstream's ``storeDaemonSetStatus`` test: every count as stored and the generation
    observed (then nothing is written)."""
    status = ds.get("status") or {}
    generation = int((ds.get("metadata") or {}).get("generation") or 0)
    return (
        all(int(status.get(k) or 0) == counts[k] for k in _COUNTS)
        and int(status.get("observedGeneration") or 0) >= generation
    )


# -- history ------------------------------------------------------------------------------------


def matches_revision(ds: Mapping[str, Any], revision: Mapping[str, Any]) -> bool:
    """Does ``revision`` restore the DaemonSet's current template (upstream's ``Match``)?
    Compared semantically, so a template written differently but meaning the same matches."""
    template = (ds.get("spec") or {}).get("template") or {}
    return bool(semantic(revision_data(template)) == semantic(revision.get("data") or {}))


def split_history(ds: Mapping[str, Any], revisions: Iterable[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``(current, old)``: the revisions matching the template, and the rest."""
    current: list[Obj] = []
    old: list[Obj] = []
    for revision in revisions:
        (current if matches_revision(ds, revision) else old).append(revision)
    return current, old


def history_to_clean(
    ds: Mapping[str, Any], old: Sequence[Obj], pods: Iterable[Mapping[str, Any]]
) -> list[Obj]:
    """The old revisions to delete (upstream's ``cleanupHistory``): ``len(old) -
    revisionHistoryLimit`` of them, oldest first, never one whose hash a pod still carries."""
    limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
    limit = 10 if limit is None else int(limit)
    live_hashes = {
        ((p.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH_LABEL) for p in pods
    } - {None}
    live = [
        _name(r)
        for r in old
        if ((r.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH_LABEL) in live_hashes
    ]
    # Upstream counts live revisions against the limit; the shared helper keeps `limit`
    # besides them, so give it what is left of the limit after them.
    return history_to_delete(old, live, limit - len(live))
