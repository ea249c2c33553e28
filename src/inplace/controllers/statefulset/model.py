"""What a StatefulSet sync decides, from plain dicts (upstream's ``stateful_set_control.go``
and ``stateful_set_utils.go``, v1.36 with ``MaxUnavailableStatefulSet`` on, its default).

:func:`plan` takes the set, the pods it owns, its revisions and the namespace's claims, and
returns the :class:`Plan`: phases of steps, each step the actions for one pod in the order
upstream takes them, and the status the pods give. The controller runs the phases in order:
an ``OrderedReady`` set's steps one at a time, a ``Parallel`` set's in slow-start batches;
a failed action ends the sync there (the queue retries it), as an error returned from
upstream's ``runForAll`` does. Where upstream stops to wait (a pod just created, one not
Running and Ready, one terminating), the plan simply ends.

The phases, upstream's order:

1. **replicas** (ordinals ``start .. start+replicas-1``): a Failed or Succeeded pod is
   deleted (made again next sync); a missing one is created at the current revision below
   the partition, at the update revision above (its claims first); a Pending one gets its
   missing claims; then, ``OrderedReady`` only, the sync waits for a terminating, not
   Running and Ready, or not yet available (``minReadySeconds``) pod; a pod whose identity
   labels or claims' owners drifted is mended.
2. **condemned claims**: the owner references of scaled-away pods' claims follow the
   retention policy (``whenScaled: Delete`` hands each claim to its pod).
3. **condemned** (ordinals out of range), highest first: deleted, ``OrderedReady`` one at a
   time once everything below is healthy.
4. **update**, ``RollingUpdate`` only: pods at an old revision from the highest ordinal down
   to the partition are deleted, at most ``maxUnavailable`` unavailable at once.

**The in-place rule** comes before them all (phase 0, **adopt**): a pod at an old revision
whose template differs from the update revision's only in what ``pods/resize`` can change is
relabelled to the update revision instead of being replaced
(:func:`..workloadresize.revisions.in_place_labels`), whatever the readiness of the others,
for ``RollingUpdate`` (at or above the partition) and ``OnDelete`` alike. The
workload-resize controller then resizes it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..deployment.rollout import scaled_value
from ..history import REVISION_HASH_LABEL, template_of
from ..pods import is_available, is_ready, pod_from_template
from ..workloadresize.revisions import in_place_labels
from .claims import (
    claim_name,
    claim_owners_up_to_date,
    claims_for_ordinal,
    stale_claim_for_new_pod,
    updated_claim_owners,
)

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "Action",
    "AdoptRevision",
    "CreatePod",
    "DeletePod",
    "Fail",
    "MendIdentity",
    "Phase",
    "Plan",
    "RevisionChoice",
    "SetClaimOwners",
    "choose_update_revision",
    "complete_rolling_update",
    "is_member",
    "ordinal_of",
    "plan",
    "replica_status",
    "settle_status",
    "status_differs",
]

Obj = dict[str, Any]

POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
REVISION_LABEL: Final = REVISION_HASH_LABEL
"""On a StatefulSet's pod: the name of the revision it was made from."""

_MEMBER: Final = re.compile(r"^(.*)-([0-9]+)$")
_MAX_INT32: Final = 2**31 - 1


# -- identity --------------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def parent_and_ordinal(name: str) -> tuple[str, int]:
    """Upstream's ``getParentNameAndOrdinal``: ``web-2`` is ``("web", 2)``; no ordinal, -1."""
    match = _MEMBER.match(name)
    if match is None:
        return "", -1
    ordinal = int(match.group(2))
    return match.group(1), ordinal if ordinal <= _MAX_INT32 else -1


def ordinal_of(pod: Mapping[str, Any]) -> int:
    return parent_and_ordinal(_name(pod))[1]


def is_member(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Named after the set (upstream's ``isMemberOf``): the only pods a set claims."""
    return parent_and_ordinal(_name(pod))[0] == _name(sts)


def replicas_of(sts: Mapping[str, Any]) -> int:
    value = _spec(sts).get("replicas")
    return 1 if value is None else int(value)


def start_ordinal(sts: Mapping[str, Any]) -> int:
    return int((_spec(sts).get("ordinals") or {}).get("start") or 0)


def in_range(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    start = start_ordinal(sts)
    return start <= ordinal_of(pod) < start + replicas_of(sts)


def pod_name(sts: Mapping[str, Any], ordinal: int) -> str:
    return f"{_name(sts)}-{ordinal}"


def revision_of(pod: Mapping[str, Any]) -> str:
    return str((_meta(pod).get("labels") or {}).get(REVISION_LABEL) or "")


def identity_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Upstream's ``identityMatches`` (with the pod-index label, ``PodIndexLabel`` being GA)."""
    parent, ordinal = parent_and_ordinal(_name(pod))
    labels = _meta(pod).get("labels") or {}
    return (
        ordinal >= 0
        and parent == _name(sts)
        and _meta(pod).get("namespace") == _meta(sts).get("namespace")
        and labels.get(POD_NAME_LABEL) == _name(pod)
        and labels.get(POD_INDEX_LABEL) == str(ordinal)
    )


def identity_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return {POD_NAME_LABEL: _name(pod), POD_INDEX_LABEL: str(ordinal_of(pod))}


def storage_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Every claim template is mounted from the ordinal's claim (upstream's
    ``storageMatches``)."""
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in _spec(pod).get("volumes") or ()}
    for template in _spec(sts).get("volumeClaimTemplates") or ():
        volume = volumes.get(_name(template)) or {}
        source = volume.get("persistentVolumeClaim") or {}
        if source.get("claimName") != claim_name(_name(sts), template, ordinal):
            return False
    return True


def _claim_volumes(sts: Mapping[str, Any], ordinal: int) -> list[Obj]:
    return [
        {
            "name": _name(claim_template),
            "persistentVolumeClaim": {"claimName": claim_name(_name(sts), claim_template, ordinal)},
        }
        for claim_template in _spec(sts).get("volumeClaimTemplates") or ()
    ]


def _with_volumes(spec: Obj, claims: list[Obj]) -> None:
    """Mount ``claims`` in ``spec`` in place of volumes of the same names (upstream's
    ``updateStorage``)."""
    if claims:
        taken = {c["name"] for c in claims}
        spec["volumes"] = claims + [
            copy.deepcopy(v) for v in spec.get("volumes") or () if v.get("name") not in taken
        ]


def new_pod(
    sts: Mapping[str, Any], template: Mapping[str, Any], ordinal: int, revision: str
) -> Obj:
    """The pod of ``ordinal`` from ``template`` (upstream's ``newStatefulSetPod``): named
    ``<set>-<ordinal>``, its hostname that name and its subdomain the set's ``serviceName``,
    labelled with its name, index and revision, each claim template mounted from its claim."""
    owner = {**sts, "apiVersion": "apps/v1", "kind": "StatefulSet"}
    pod = pod_from_template(template, owner)
    name = pod_name(sts, ordinal)
    meta = pod["metadata"]
    del meta["generateName"]
    meta["name"] = name
    meta["labels"] = {
        **(meta.get("labels") or {}),
        POD_NAME_LABEL: name,
        POD_INDEX_LABEL: str(ordinal),
        REVISION_LABEL: revision,
    }
    spec = pod["spec"]
    spec["hostname"] = name
    service = _spec(sts).get("serviceName")
    if service:
        spec["subdomain"] = service
    _with_volumes(spec, _claim_volumes(sts, ordinal))
    return pod


# -- pod state -------------------------------------------------------------------------------


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_created(pod: Mapping[str, Any]) -> bool:
    """Stored by the API server (a placeholder for a pod to create has no phase)."""
    return bool(_phase(pod))


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def running_and_ready(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) == "Running" and is_ready(pod)


def running_and_available(pod: Mapping[str, Any], min_ready: int, now: float) -> bool:
    return running_and_ready(pod) and is_available(pod, min_ready, now)


def is_unavailable(pod: Mapping[str, Any], min_ready: int, now: float) -> bool:
    return is_terminating(pod) or not running_and_available(pod, min_ready, now)


def _min_ready(sts: Mapping[str, Any]) -> int:
    return int(_spec(sts).get("minReadySeconds") or 0)


# -- revisions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RevisionChoice:
    """How the update revision is found (upstream's ``getStatefulSetRevisions``):
    ``existing`` (the newest revision is the set's template), ``renumber`` (an older one is:
    a rollback, which makes it the newest as ``number``) or ``create`` (none is)."""

    how: str
    revision: Obj
    number: int


def choose_update_revision(
    revisions: Sequence[Obj], proposed: Obj, equal: Sequence[Obj]
) -> RevisionChoice:
    """``revisions`` sorted oldest first, ``proposed`` the revision of the set's template
    numbered next, ``equal`` those of ``revisions`` equal to it (``history.find_equal``)."""
    number = int(proposed.get("revision") or 0)
    if equal and revisions and equal[-1] is revisions[-1]:
        return RevisionChoice("existing", revisions[-1], int(revisions[-1].get("revision") or 0))
    if equal:
        return RevisionChoice("renumber", equal[-1], number)
    return RevisionChoice("create", proposed, number)


# -- actions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreatePod:
    """Create ``claims`` that are missing, then ``pod`` (upstream's ``CreateStatefulPod``)."""

    pod: Obj
    claims: tuple[Obj, ...] = ()


@dataclass(frozen=True)
class DeletePod:
    """Delete ``pod``; ``for_update``: it is replaced by a rolling update (one fewer pod at
    the current revision once done)."""

    pod: Obj
    reason: str
    for_update: bool = False


@dataclass(frozen=True)
class CreateClaims:
    """Create the claims a Pending pod mounts that do not exist (upstream's
    ``createMissingPersistentVolumeClaims``)."""

    pod: Obj
    claims: tuple[Obj, ...]


@dataclass(frozen=True)
class SetClaimOwners:
    """Rewrite ``claim``'s owner references for the retention policy."""

    pod: Obj
    claim: Obj
    owner_references: tuple[Obj, ...]


@dataclass(frozen=True)
class MendIdentity:
    """Put back the identity labels of a pod that lost them."""

    pod: Obj
    labels: Mapping[str, str]


@dataclass(frozen=True)
class AdoptRevision:
    """Move ``pod`` to the update revision by relabelling it (the in-place rule)."""

    pod: Obj
    labels: Mapping[str, str]
    was_current: bool


@dataclass(frozen=True)
class Fail:
    """What upstream would fail with here: an event (``Failed<Verb>``) and a retry."""

    pod: Obj
    verb: str
    message: str


Action = CreatePod | DeletePod | CreateClaims | SetClaimOwners | MendIdentity | AdoptRevision | Fail


@dataclass
class Phase:
    name: str
    steps: list[tuple[Action, ...]] = field(default_factory=list)
    parallel: bool = False
    """Steps may run at once (slow-start batches); otherwise one after the other."""


@dataclass
class Plan:
    phases: list[Phase]
    status: Obj
    """The status the pods give before any action (:func:`settle_status` folds in what was
    done)."""
    current_revision: str
    update_revision: str


# -- status ----------------------------------------------------------------------------------


def replica_status(
    pods: Iterable[Mapping[str, Any]], min_ready: int, now: float, current: str, update: str
) -> dict[str, int]:
    """Upstream's ``computeReplicaStatus`` over the pods that exist."""
    counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0}
    counts |= {"currentReplicas": 0, "updatedReplicas": 0}
    for pod in pods:
        if not is_created(pod):
            continue
        counts["replicas"] += 1
        if running_and_ready(pod):
            counts["readyReplicas"] += 1
            if is_available(pod, min_ready, now):
                counts["availableReplicas"] += 1
        if not is_terminating(pod):
            revision = revision_of(pod)
            counts["currentReplicas"] += revision == current
            counts["updatedReplicas"] += revision == update
    return counts


def _base_status(
    sts: Mapping[str, Any], counts: Mapping[str, int], current: str, update: str, collisions: int
) -> Obj:
    status: Obj = dict(counts)
    status["observedGeneration"] = int(_meta(sts).get("generation") or 0)
    status["currentRevision"] = current
    status["updateRevision"] = update
    status["collisionCount"] = collisions
    conditions = (sts.get("status") or {}).get("conditions")
    if conditions:
        # Not upstream's (it writes none): others' conditions, such as the workload-resize
        # controller's PodsResized, are kept.
        status["conditions"] = copy.deepcopy(conditions)
    return status


def is_rolling(sts: Mapping[str, Any]) -> bool:
    strategy = _spec(sts).get("updateStrategy") or {}
    return str(strategy.get("type") or "RollingUpdate") == "RollingUpdate"


def complete_rolling_update(sts: Mapping[str, Any], status: Obj) -> Obj:
    """Upstream's ``completeRollingUpdate``: every pod updated and ready, the update
    revision becomes the current one."""
    want = replicas_of(sts)
    if (
        is_rolling(sts)
        and status.get("updatedReplicas") == want
        and status.get("readyReplicas") == want
        and status.get("replicas") == want
    ):
        status = {
            **status,
            "currentReplicas": status["updatedReplicas"],
            "currentRevision": status["updateRevision"],
        }
    return status


def settle_status(sts: Mapping[str, Any], status: Obj, done: Iterable[Action]) -> Obj:
    """The status to write once ``done`` succeeded: a pod deleted by the rolling update is
    one fewer at the current revision, an adopted one moved to the update revision; then a
    finished rolling update is completed."""
    status = dict(status)
    for action in done:
        if isinstance(action, DeletePod) and action.for_update:
            # Upstream decrements for any pod; one at no known revision (an adopted orphan)
            # was never counted, and a negative count is refused by validation.
            if revision_of(action.pod) == status["currentRevision"]:
                status["currentReplicas"] -= 1
        elif isinstance(action, AdoptRevision):
            status["updatedReplicas"] += 1
            if action.was_current:
                status["currentReplicas"] -= 1
    return complete_rolling_update(sts, status)


_COMPARED: Final = (
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "currentReplicas",
    "updatedReplicas",
    "currentRevision",
    "updateRevision",
)


def status_differs(sts: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Upstream's ``inconsistentStatus`` (plus the collision count, which it writes too)."""
    old = sts.get("status") or {}
    if int(status.get("observedGeneration") or 0) > int(old.get("observedGeneration") or 0):
        return True
    for key in _COMPARED:
        default: Any = "" if key.endswith("Revision") else 0
        if (old.get(key) or default) != (status.get(key) or default):
            return True
    return int(old.get("collisionCount") or 0) != int(status.get("collisionCount") or 0)


# -- the plan --------------------------------------------------------------------------------


@dataclass
class _Sync:
    sts: Mapping[str, Any]
    revisions: Sequence[Mapping[str, Any]]
    current: Mapping[str, Any]
    update: Mapping[str, Any]
    claims: Mapping[str, Mapping[str, Any]]
    now: float

    @property
    def current_name(self) -> str:
        return _name(self.current)

    @property
    def update_name(self) -> str:
        return _name(self.update)

    @property
    def monotonic(self) -> bool:
        return _spec(self.sts).get("podManagementPolicy") != "Parallel"

    def claim(self, name: str) -> Mapping[str, Any] | None:
        return self.claims.get(name)

    def ordinal_claims(self, ordinal: int) -> list[Obj]:
        return claims_for_ordinal(self.sts, ordinal)

    def new_claims(self, pod: Mapping[str, Any]) -> tuple[list[Obj], str | None]:
        """The claims to create for ``pod`` (owned by the set under ``whenDeleted:
        Delete``), or the error upstream's ``createPersistentVolumeClaims`` gives."""
        out: list[Obj] = []
        for body in self.ordinal_claims(ordinal_of(pod)):
            existing = self.claim(_name(body))
            if existing is None:
                # Made with the owners the retention policy gives it, where upstream makes
                # it bare and sets them on a later sync: the same claim, one write fewer.
                refs = updated_claim_owners(body, self.sts, pod, not in_range(self.sts, pod))
                if refs:
                    body["metadata"]["ownerReferences"] = refs
                out.append(body)
            elif is_terminating(existing):
                return [], f"pvc {_name(body)} is being deleted"
        return out, None

    def claim_owner_fixes(self, pod: Mapping[str, Any]) -> list[SetClaimOwners]:
        """Upstream's ``ClaimsMatchRetentionPolicy``/``UpdatePodClaimForRetentionPolicy``."""
        fixes: list[SetClaimOwners] = []
        scaled_down = not in_range(self.sts, pod)
        for body in self.ordinal_claims(ordinal_of(pod)):
            claim = self.claim(_name(body))
            if claim is None or claim_owners_up_to_date(claim, self.sts, pod, scaled_down):
                continue
            refs = updated_claim_owners(claim, self.sts, pod, scaled_down)
            fixes.append(SetClaimOwners(dict(pod), dict(claim), tuple(refs)))
        return fixes

    def versioned_pod(self, ordinal: int) -> Obj:
        """Upstream's ``newVersionedStatefulSetPod``: below the partition at the current
        revision, else at the update revision."""
        strategy = _spec(self.sts).get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate")
        start = start_ordinal(self.sts)
        current_count = int((self.sts.get("status") or {}).get("currentReplicas") or 0)
        at_current = (
            is_rolling(self.sts) and rolling is None and ordinal < start + current_count
        ) or (rolling is not None and ordinal < start + int(rolling.get("partition") or 0))
        revision = self.current if at_current else self.update
        return new_pod(self.sts, template_of(revision), ordinal, _name(revision))

    # -- phases ------------------------------------------------------------------------------

    def adopt(self, replicas: Sequence[Obj]) -> Phase:
        phase = Phase("adopt", parallel=True)
        update_min = self.update_min() if is_rolling(self.sts) else 0
        labels = {REVISION_LABEL: self.update_name}
        for index, pod in enumerate(replicas):
            if index < update_min or not is_created(pod) or is_terminating(pod):
                continue
            if _phase(pod) in ("Failed", "Succeeded") or revision_of(pod) == self.update_name:
                continue
            moved = in_place_labels(pod, self.revisions, self.update, labels)
            if moved:
                was_current = revision_of(pod) == self.current_name
                phase.steps.append((AdoptRevision(pod, moved, was_current),))
        return phase

    def replica_step(self, pod: Obj) -> tuple[list[Action], bool]:
        """Upstream's ``processReplica``: the actions for one replica, and whether an
        ``OrderedReady`` set stops there."""
        actions: list[Action] = []
        if _phase(pod) in ("Failed", "Succeeded"):
            if not is_terminating(pod):
                actions.append(DeletePod(pod, "failed"))
            return actions, True
        if not is_created(pod):
            stale = stale_claim_for_new_pod(self.sts, self._existing_claims(pod), _name(pod))
            if stale is not None:
                return actions, True
            claims, error = self.new_claims(pod)
            if error is not None:
                return [Fail(pod, "create", error)], True
            actions.append(CreatePod(pod, tuple(claims)))
            return actions, self.monotonic
        if _phase(pod) == "Pending":
            claims, error = self.new_claims(pod)
            if error is not None:
                return [Fail(pod, "create", error)], True
            if claims:
                actions.append(CreateClaims(pod, tuple(claims)))
            actions.extend(self.claim_owner_fixes(pod))
        if self.monotonic and (
            is_terminating(pod)
            or not running_and_ready(pod)
            or not running_and_available(pod, _min_ready(self.sts), self.now)
        ):
            return actions, True
        if not identity_matches(self.sts, pod):
            actions.append(MendIdentity(pod, identity_labels(pod)))
        if _phase(pod) != "Pending":
            actions.extend(self.claim_owner_fixes(pod))
        if not storage_matches(self.sts, pod):
            claims, error = self.new_claims(pod)
            if error is not None:
                return [*actions, Fail(pod, "update", error)], True
            if claims:
                actions.append(CreateClaims(pod, tuple(claims)))
        return actions, False

    def _existing_claims(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        out = []
        for body in self.ordinal_claims(ordinal_of(pod)):
            claim = self.claim(_name(body))
            if claim is not None:
                out.append(claim)
        return out

    def condemned_step(
        self, pod: Obj, first_unavailable: Mapping[str, Any] | None
    ) -> tuple[list[Action], bool]:
        """Upstream's ``processCondemned``."""
        if is_terminating(pod):
            return [], self.monotonic
        if (
            self.monotonic
            and pod is not first_unavailable
            and (
                not running_and_ready(pod)
                or not running_and_available(pod, _min_ready(self.sts), self.now)
            )
        ):
            return [], True
        return [DeletePod(pod, "scale-down")], True

    def update_min(self) -> int:
        rolling = (_spec(self.sts).get("updateStrategy") or {}).get("rollingUpdate") or {}
        return int(rolling.get("partition") or 0)

    def max_unavailable(self) -> int:
        """Upstream's ``getStatefulSetMaxUnavailable``: 1 by default, a percentage of the
        replicas rounded down, never below 1."""
        rolling = (_spec(self.sts).get("updateStrategy") or {}).get("rollingUpdate") or {}
        value = rolling.get("maxUnavailable")
        number = scaled_value(1 if value is None else value, replicas_of(self.sts), round_up=False)
        return max(number, 1)

    def rolling_update(self, replicas: Sequence[Obj], adopted: set[str]) -> Phase:
        """Upstream's ``updateStatefulSetAfterInvariantEstablished``."""
        phase = Phase("update", parallel=True)
        min_ready = _min_ready(self.sts)
        unavailable = sum(is_unavailable(p, min_ready, self.now) for p in replicas)
        budget = self.max_unavailable() - unavailable
        for index in range(len(replicas) - 1, self.update_min() - 1, -1):
            if budget <= 0:
                break
            pod = replicas[index]
            if (
                _name(pod) in adopted
                or not is_created(pod)
                or revision_of(pod) == self.update_name
                or is_terminating(pod)
            ):
                continue
            phase.steps.append((DeletePod(pod, "update", for_update=True),))
            budget -= 1
        return phase


def plan(
    sts: Mapping[str, Any],
    pods: Iterable[Obj],
    revisions: Sequence[Mapping[str, Any]],
    current: Mapping[str, Any],
    update: Mapping[str, Any],
    claims: Mapping[str, Mapping[str, Any]],
    *,
    collision_count: int,
    now: float,
) -> Plan:
    """The sync of ``sts`` (upstream's ``updateStatefulSet``). ``pods`` are those it owns,
    ``revisions`` its ControllerRevisions, ``current``/``update`` the current and update
    revisions, ``claims`` the namespace's claims by name."""
    pods = list(pods)
    sync = _Sync(sts, revisions, current, update, claims, now)
    min_ready = _min_ready(sts)
    start, count = start_ordinal(sts), replicas_of(sts)
    slots: list[Obj | None] = [None] * count
    condemned: list[Obj] = []
    for pod in pods:
        ordinal = ordinal_of(pod)
        if start <= ordinal < start + count:
            slots[ordinal - start] = pod
        elif ordinal >= 0:
            condemned.append(pod)
    replicas = [p if p is not None else sync.versioned_pod(start + i) for i, p in enumerate(slots)]
    condemned.sort(key=ordinal_of, reverse=True)
    names = (sync.current_name, sync.update_name)
    if _meta(sts).get("deletionTimestamp"):
        # Being deleted: the status only (of every pod, as upstream counts it here).
        counts = replica_status(pods, min_ready, now, *names)
        return Plan([], _base_status(sts, counts, *names, collision_count), *names)
    counts = replica_status([*replicas, *condemned], min_ready, now, *names)
    phases = _phases(sync, replicas, condemned)
    status = _base_status(sts, counts, *names, collision_count)
    return Plan([p for p in phases if p.steps], status, *names)


def _phases(sync: _Sync, replicas: list[Obj], condemned: list[Obj]) -> list[Phase]:
    """The phases in upstream's order, the last one where an ``OrderedReady`` set waits."""
    min_ready, now = _min_ready(sync.sts), sync.now
    adopt = sync.adopt(replicas)
    adopted = {_name(step[0].pod) for step in adopt.steps}
    parallel = not sync.monotonic
    phases = [adopt, Phase("replicas", parallel=parallel)]
    for pod in replicas:
        actions, stop = sync.replica_step(pod)
        if actions:
            phases[-1].steps.append(tuple(actions))
        if stop and sync.monotonic:
            return phases

    phases.append(Phase("condemned claims", parallel=parallel))
    for pod in condemned:
        owners = sync.claim_owner_fixes(pod)
        if owners:
            phases[-1].steps.append(tuple(owners))

    first_unavailable = next((p for p in replicas if is_unavailable(p, min_ready, now)), None)
    if first_unavailable is None:
        first_unavailable = next(
            (p for p in reversed(condemned) if is_unavailable(p, min_ready, now)), None
        )
    phases.append(Phase("condemned", parallel=parallel))
    for pod in condemned:
        actions, stop = sync.condemned_step(pod, first_unavailable)
        if actions:
            phases[-1].steps.append(tuple(actions))
        if stop and sync.monotonic:
            return phases

    if is_rolling(sync.sts):
        phases.append(sync.rolling_update(replicas, adopted))
    return phases
