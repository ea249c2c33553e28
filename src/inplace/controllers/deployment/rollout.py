"""The Deployment controller's decisions as pure functions of plain dicts (no I/O, no clock).

Transcribed from upstream's ``pkg/controller/deployment`` (``util/deployment_util.go``,
``rolling.go``, ``sync.go``, ``progress.go``, ``recreate.go``), so the numbers a rollout
goes through are upstream's: how far the new ReplicaSet may surge, how many old pods may go
while ``maxUnavailable`` holds, how a scale-up mid-rollout is spread across ReplicaSets in
proportion to their size, and when the ``Progressing`` and ``Available`` conditions change.

ReplicaSets are the API's dicts; functions that plan changes return ``{name: replicas}`` and
never mutate their inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from inplace.api.timestamps import parse_rfc3339
from inplace.api.validation.equality import semantic

__all__ = [
    "AVAILABLE",
    "DESIRED_REPLICAS",
    "MAX_REPLICAS",
    "PROGRESSING",
    "REVISION",
    "REVISION_HISTORY",
    "calculate_status",
    "cleanup_victims",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "filter_active",
    "is_saturated",
    "max_revision",
    "max_surge",
    "max_unavailable",
    "new_rs_annotations",
    "new_rs_new_replicas",
    "old_replica_sets_scale_down",
    "proportional_scale",
    "requeue_after",
    "resolve_fenceposts",
    "revision_of",
    "rollout_status",
    "scaled_value",
    "set_condition",
]

Obj = dict[str, Any]
RS = Mapping[str, Any]

REVISION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS: Final = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
MAX_REVISION_HISTORY_CHARS: Final = 2000

PROGRESSING: Final = "Progressing"
AVAILABLE: Final = "Available"
REPLICA_FAILURE: Final = "ReplicaFailure"

# Reasons, upstream's spelling.
NEW_RS_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
RS_UPDATED_REASON: Final = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
PAUSED_REASON: Final = "DeploymentPaused"
RESUMED_REASON: Final = "DeploymentResumed"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
MIN_AVAILABLE_REASON: Final = "MinimumReplicasAvailable"
MIN_UNAVAILABLE_REASON: Final = "MinimumReplicasUnavailable"

_SKIPPED_ANNOTATIONS: Final = frozenset(
    {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS}
)


# -- the pod-template-hash ---------------------------------------------------------------------

_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
POD_TEMPLATE_HASH: Final = "pod-template-hash"


def pod_template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` label value of a new ReplicaSet: upstream's ``ComputeHash``
    shape (FNV-32a of the template, then of the collision count as 8 little-endian bytes,
    the decimal digits mapped through ``rand.SafeEncodeString``'s alphabet). The bytes
    hashed are the template's canonical JSON rather than Go's struct dump, so the values
    differ from a real cluster's, but are as stable and as collision-aware."""
    value = 0x811C9DC5
    data = orjson.dumps(semantic(template), option=orjson.OPT_SORT_KEYS, default=str)
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(8, "little")
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(value))


def equal_ignoring_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``EqualIgnoreHash``: two pod templates equal but for the pod-template-hash label,
    compared as upstream's ``Semantic.DeepEqual`` (absent, null and zero alike: kubectl's
    ``rollout undo`` sends ``creationTimestamp: null``; quantities by value)."""

    def strip(template: Mapping[str, Any]) -> Any:
        meta = dict(template.get("metadata") or {})
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
        meta.pop("labels", None)
        if labels:
            meta["labels"] = labels
        return {**template, "metadata": meta}

    return bool(semantic(strip(a)) == semantic(strip(b)))


# -- reading ---------------------------------------------------------------------------------


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (a ReplicaSet or Deployment)."""
    value = _spec(obj).get("replicas")
    return int(value) if value is not None else 0


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def revision_of(obj: Mapping[str, Any]) -> int:
    try:
        return int(_annotations(obj).get(REVISION, "0"))
    except ValueError:
        return 0


def max_revision(replica_sets: Iterable[RS]) -> int:
    return max((revision_of(rs) for rs in replica_sets), default=0)


def _int_annotation(obj: Mapping[str, Any], key: str) -> int | None:
    try:
        return int(_annotations(obj)[key])
    except (KeyError, ValueError):
        return None


def created_key(obj: Mapping[str, Any]) -> tuple[float, str]:
    """Upstream's ``ReplicaSetsByCreationTimestamp`` order: oldest first, then by name."""
    meta = obj.get("metadata") or {}
    stamp = meta.get("creationTimestamp")
    try:
        when = parse_rfc3339(stamp).timestamp() if stamp else 0.0
    except ValueError:
        when = 0.0
    return when, str(meta.get("name") or "")


def filter_active(replica_sets: Iterable[RS | None]) -> list[RS]:
    """ReplicaSets with ``spec.replicas > 0`` (upstream ``FilterActiveReplicaSets``)."""
    return [rs for rs in replica_sets if rs is not None and replicas(rs) > 0]


def _sum(replica_sets: Iterable[RS | None], field: str, *, spec: bool = False) -> int:
    total = 0
    for rs in replica_sets:
        if rs is None:
            continue
        source = _spec(rs) if spec else _status(rs)
        total += int(source.get(field) or 0)
    return total


# -- surge and unavailability ----------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"25%"`` of ``total``."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        percent = int(text[:-1])
        product = percent * total
        return -(-product // 100) if round_up else product // 100
    return int(text)


def resolve_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """``ResolveFenceposts``: surge rounds up, unavailability down; both zero means one
    unavailable (validation forbids both zero, but rounding down can get there)."""
    s = scaled_value(surge if surge is not None else 0, desired, round_up=True)
    u = scaled_value(unavailable if unavailable is not None else 0, desired, round_up=False)
    if s == 0 and u == 0:
        u = 1
    return s, u


def _rolling(d: Mapping[str, Any]) -> Mapping[str, Any] | None:
    strategy = _spec(d).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    return strategy.get("rollingUpdate") or {}


def max_unavailable(d: Mapping[str, Any]) -> int:
    rolling = _rolling(d)
    desired = replicas(d)
    if rolling is None or desired == 0:
        return 0
    _, unavailable = resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), desired
    )
    return min(unavailable, desired)


def max_surge(d: Mapping[str, Any]) -> int:
    rolling = _rolling(d)
    if rolling is None:
        return 0
    surge, _ = resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas(d)
    )
    return surge


def new_rs_new_replicas(d: Mapping[str, Any], all_rs: Sequence[RS], new_rs: RS) -> int:
    """``NewRSNewReplicas``: how big the new ReplicaSet may be now."""
    desired = replicas(d)
    if _rolling(d) is None:
        return desired
    current = _sum(all_rs, "replicas", spec=True)
    max_total = desired + max_surge(d)
    if current >= max_total:
        return replicas(new_rs)
    scale_up = min(max_total - current, desired - replicas(new_rs))
    return replicas(new_rs) + scale_up


def is_saturated(d: Mapping[str, Any], rs: RS | None) -> bool:
    """The new ReplicaSet owns every desired replica and all of them are available."""
    if rs is None:
        return False
    desired = replicas(d)
    return (
        replicas(rs) == desired
        and _int_annotation(rs, DESIRED_REPLICAS) == desired
        and int(_status(rs).get("availableReplicas") or 0) == desired
    )


# -- rolling update steps ----------------------------------------------------------------------


def old_replica_sets_scale_down(
    d: Mapping[str, Any], all_rs: Sequence[RS], old_rs: Sequence[RS], new_rs: RS
) -> dict[str, int]:
    """``reconcileOldReplicaSets``: the old ReplicaSets' new sizes, or {} if none may shrink.

    First unhealthy replicas go (they cost no availability), within what ``maxUnavailable``
    leaves given the new ReplicaSet's own unavailable pods; then available old pods go while
    more than ``replicas - maxUnavailable`` are available.
    """
    active_old = sorted(filter_active(old_rs), key=created_key)
    if _sum(active_old, "replicas", spec=True) == 0:
        return {}
    all_pods = _sum(all_rs, "replicas", spec=True)
    min_available = replicas(d) - max_unavailable(d)
    new_unavailable = replicas(new_rs) - int(_status(new_rs).get("availableReplicas") or 0)
    max_scaled_down = all_pods - min_available - new_unavailable
    if max_scaled_down <= 0:
        return {}
    sizes: dict[str, int] = {}
    cleaned = 0
    for rs in active_old:
        if cleaned >= max_scaled_down:
            break
        size = replicas(rs)
        available = int(_status(rs).get("availableReplicas") or 0)
        if size == 0 or size == available:
            continue
        down = min(max_scaled_down - cleaned, size - available)
        sizes[_name(rs)] = size - down
        cleaned += down
    # scaleDownOldReplicaSetsForRollingUpdate, over the sizes just decided.
    available_pods = _sum([*active_old, new_rs], "availableReplicas")
    if available_pods > min_available:
        budget = available_pods - min_available
        scaled = 0
        for rs in active_old:
            if scaled >= budget:
                break
            size = sizes.get(_name(rs), replicas(rs))
            if size == 0:
                continue
            down = min(size, budget - scaled)
            sizes[_name(rs)] = size - down
            scaled += down
    return {name: size for name, size in sizes.items() if size != _size_of(active_old, name)}


def _size_of(replica_sets: Iterable[RS], name: str) -> int:
    for rs in replica_sets:
        if _name(rs) == name:
            return replicas(rs)
    return 0


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _proportion(
    rs: RS, d: Mapping[str, Any], to_add: int, added: int, deployment_replicas: int
) -> int:
    """``GetProportion``: this ReplicaSet's share of ``to_add`` given what was added so far."""
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    if replicas(d) == 0:
        fraction = -replicas(rs)
    else:
        target = replicas(d) + max_surge(d)
        annotated = _int_annotation(rs, MAX_REPLICAS)
        if annotated is None:
            annotated = deployment_replicas
        if annotated == 0:
            fraction = 0
        else:
            fraction = _round_half_away(replicas(rs) * target / annotated) - replicas(rs)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _round_half_away(value: float) -> int:
    """Go's ``math.Round`` (``integer.RoundToInt32``): halves away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def proportional_scale(
    d: Mapping[str, Any], new_rs: RS | None, old_rs: Sequence[RS]
) -> dict[str, int]:
    """``scale``: the ReplicaSets' sizes after the Deployment's ``replicas`` changed.

    One active (or, with none, the newest) ReplicaSet takes everything; a saturated new one
    leaves the old ones at zero; otherwise the difference is spread in proportion to each
    ReplicaSet's size, leftovers to the largest. Returns only the sizes that change.
    """
    desired = replicas(d)
    candidates = [*old_rs, *([new_rs] if new_rs is not None else [])]
    active = filter_active(candidates)
    if len(active) <= 1:
        if active:
            target = active[0]
        elif new_rs is not None:
            target = new_rs
        elif old_rs:
            target = sorted(old_rs, key=created_key)[-1]
        else:
            return {}
        return {} if replicas(target) == desired else {_name(target): desired}
    if is_saturated(d, new_rs):
        return {_name(rs): 0 for rs in filter_active(old_rs)}
    if _rolling(d) is None:
        return {}
    total = _sum(active, "replicas", spec=True)
    allowed = desired + max_surge(d) if desired > 0 else 0
    to_add = allowed - total
    if to_add > 0:  # ReplicaSetsBySizeNewer: bigger first, then newer first
        ordered = sorted(active, key=lambda r: (-replicas(r), -created_key(r)[0]))
    elif to_add < 0:  # ReplicaSetsBySizeOlder: bigger first, then older first
        ordered = sorted(active, key=lambda r: (-replicas(r), created_key(r)[0]))
    else:
        ordered = list(active)
    current_total = int(_status(d).get("replicas") or 0)
    sizes: dict[str, int] = {}
    added = 0
    for rs in ordered:
        if to_add != 0:
            share = _proportion(rs, d, to_add, added, current_total)
            sizes[_name(rs)] = replicas(rs) + share
            added += share
        else:
            sizes[_name(rs)] = replicas(rs)
    if ordered and to_add != 0:
        first = _name(ordered[0])
        sizes[first] = max(0, sizes[first] + to_add - added)
    return {name: size for name, size in sizes.items() if size != _size_of(active, name)}


# -- annotations -----------------------------------------------------------------------------


def new_rs_annotations(
    d: Mapping[str, Any], rs: RS, new_revision: int, *, exists: bool
) -> dict[str, str]:
    """``SetNewReplicaSetAnnotations``: the new ReplicaSet's annotations (copied from the
    Deployment except upstream's skipped ones, the revision, its history when a rollback
    reuses it, and the replica annotations when it is being created)."""
    out = dict(_annotations(rs))
    for key, value in _annotations(d).items():
        if key not in _SKIPPED_ANNOTATIONS:
            out[key] = value
    old_revision = out.get(REVISION)
    changed = out != dict(_annotations(rs))
    if old_revision is None or _revision_less(old_revision, str(new_revision)):
        out[REVISION] = str(new_revision)
        changed = True
    if old_revision is not None and changed and out.get(REVISION) != old_revision:
        history = [h for h in out.get(REVISION_HISTORY, "").split(",") if h]
        history.append(old_revision)
        text = ",".join(history)
        while len(text) > MAX_REVISION_HISTORY_CHARS and len(history) > 1:
            history.pop(0)
            text = ",".join(history)
        out[REVISION_HISTORY] = text
    if not exists:
        out[DESIRED_REPLICAS] = str(replicas(d))
        out[MAX_REPLICAS] = str(replicas(d) + max_surge(d))
    return out


def _revision_less(old: str, new: str) -> bool:
    try:
        return int(old) < int(new)
    except ValueError:
        return old < new


def replica_annotations(d: Mapping[str, Any]) -> dict[str, str]:
    """The desired/max replica annotations every scale of a ReplicaSet refreshes."""
    return {
        DESIRED_REPLICAS: str(replicas(d)),
        MAX_REPLICAS: str(replicas(d) + max_surge(d)),
    }


def cleanup_victims(d: Mapping[str, Any], old_rs: Sequence[RS]) -> list[RS]:
    """``cleanupDeployment``: the oldest revisions beyond ``revisionHistoryLimit`` that are
    empty, settled and not already being deleted."""
    limit = _spec(d).get("revisionHistoryLimit")
    if limit is None:
        return []
    alive = [rs for rs in old_rs if not (rs.get("metadata") or {}).get("deletionTimestamp")]
    extra = len(alive) - int(limit)
    if extra <= 0:
        return []
    ordered = sorted(alive, key=lambda r: (revision_of(r), created_key(r)))
    victims = []
    for rs in ordered[:extra]:
        meta = rs.get("metadata") or {}
        if (
            int(_status(rs).get("replicas") or 0) != 0
            or replicas(rs) != 0
            or int(meta.get("generation") or 0) > int(_status(rs).get("observedGeneration") or 0)
        ):
            continue
        victims.append(rs)
    return victims


# -- status and conditions -----------------------------------------------------------------------


def condition_of(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def new_condition(kind: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def set_condition(status: Obj, cond: Obj) -> None:
    """``SetDeploymentCondition``: same status and reason → no change; same status → keep
    the transition time; the condition moves to the end of the list."""
    current = condition_of(status, cond["type"])
    if current is not None and current.get("status") == cond["status"]:
        if current.get("reason") == cond["reason"]:
            return
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [
        c for c in status.get("conditions") or () if c.get("type") != cond["type"]
    ] + [cond]


def remove_condition(status: Obj, kind: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    deadline = _spec(d).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != 2**31 - 1


def calculate_status(
    d: Mapping[str, Any], all_rs: Sequence[RS | None], new_rs: RS | None, now: str
) -> Obj:
    """``calculateStatus``: counts summed over the ReplicaSets and the Available condition."""
    present = [rs for rs in all_rs if rs is not None]
    available = _sum(present, "availableReplicas")
    total = _sum(present, "replicas", spec=True)
    old = _status(d)
    counts = {
        "observedGeneration": (d.get("metadata") or {}).get("generation") or 0,
        "replicas": _sum(present, "replicas"),
        "updatedReplicas": _sum([new_rs], "replicas"),
        "readyReplicas": _sum(present, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
    }
    # Upstream's fields are omitempty: zero counts are not written.
    status: Obj = {k: v for k, v in counts.items() if v}
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if old.get("conditions"):
        status["conditions"] = [dict(c) for c in old["conditions"]]
    if available >= replicas(d) - max_unavailable(d):
        cond = new_condition(
            AVAILABLE, "True", MIN_AVAILABLE_REASON, "Deployment has minimum availability.", now
        )
    else:
        cond = new_condition(
            AVAILABLE,
            "False",
            MIN_UNAVAILABLE_REASON,
            "Deployment does not have minimum availability.",
            now,
        )
    set_condition(status, cond)
    return status


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    want = replicas(d)
    return (
        int(status.get("updatedReplicas") or 0) == want
        and int(status.get("replicas") or 0) == want
        and int(status.get("availableReplicas") or 0) == want
        and int(status.get("observedGeneration") or 0)
        >= int((d.get("metadata") or {}).get("generation") or 0)
    )


def deployment_progressing(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    old = _status(d)

    def n(src: Mapping[str, Any], key: str) -> int:
        return int(src.get(key) or 0)

    old_old = n(old, "replicas") - n(old, "updatedReplicas")
    new_old = n(status, "replicas") - n(status, "updatedReplicas")
    return (
        n(status, "updatedReplicas") > n(old, "updatedReplicas")
        or new_old < old_old
        or n(status, "readyReplicas") > n(old, "readyReplicas")
        or n(status, "availableReplicas") > n(old, "availableReplicas")
    )


def _stamp(text: Any) -> float:
    try:
        return parse_rfc3339(str(text)).timestamp()
    except ValueError:
        return 0.0


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = condition_of(status, PROGRESSING)
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.get("reason") == TIMED_OUT_REASON:
        return True
    deadline = int(_spec(d).get("progressDeadlineSeconds") or 0)
    return _stamp(cond.get("lastUpdateTime")) + deadline < now


def rollout_status(
    d: Mapping[str, Any], all_rs: Sequence[RS | None], new_rs: RS | None, now: float, now_text: str
) -> Obj:
    """``syncRolloutStatus``: the status with the Progressing condition brought up to date."""
    status = calculate_status(d, all_rs, new_rs, now_text)
    if not has_progress_deadline(d):
        remove_condition(status, PROGRESSING)
    current = condition_of(_status(d), PROGRESSING)
    complete_before = (
        status.get("replicas", 0) == status.get("updatedReplicas", 0)
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE_REASON
    )
    name = _name(d)
    subject = f'ReplicaSet "{_name(new_rs)}"' if new_rs is not None else f'Deployment "{name}"'
    if has_progress_deadline(d) and not complete_before:
        if deployment_complete(d, status):
            set_condition(
                status,
                new_condition(
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE_REASON,
                    f"{subject} has successfully progressed.",
                    now_text,
                ),
            )
        elif deployment_progressing(d, status):
            cond = new_condition(
                PROGRESSING, "True", RS_UPDATED_REASON, f"{subject} is progressing.", now_text
            )
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, PROGRESSING)
            set_condition(status, cond)
        elif deployment_timed_out(d, status, now):
            set_condition(
                status,
                new_condition(
                    PROGRESSING,
                    "False",
                    TIMED_OUT_REASON,
                    f"{subject} has timed out progressing.",
                    now_text,
                ),
            )
    failure: Mapping[str, Any] | None = None
    for rs in [new_rs, *all_rs]:
        if rs is None:
            continue
        rs_failure = condition_of(_status(rs), REPLICA_FAILURE)
        if rs_failure is not None:
            failure = rs_failure
            break
    if failure is not None:
        set_condition(
            status,
            {
                "type": REPLICA_FAILURE,
                "status": failure.get("status", "True"),
                "lastUpdateTime": failure.get("lastTransitionTime") or now_text,
                "lastTransitionTime": failure.get("lastTransitionTime") or now_text,
                "reason": failure.get("reason") or "",
                "message": failure.get("message") or "",
            },
        )
    else:
        remove_condition(status, REPLICA_FAILURE)
    return status


def requeue_after(d: Mapping[str, Any], status: Mapping[str, Any], now: float) -> float | None:
    """``requeueStuckDeployment``: when to look again for a progress deadline, or None."""
    current = condition_of(_status(d), PROGRESSING)
    if not has_progress_deadline(d) or current is None:
        return None
    if deployment_complete(d, status) or current.get("reason") == TIMED_OUT_REASON:
        return None
    deadline = int(_spec(d).get("progressDeadlineSeconds") or 0)
    after = _stamp(current.get("lastUpdateTime")) + deadline - now
    if after < 1.0:
        return 1.0
    return after + 1.0
