"""The Job controller's bookkeeping as pure functions: upstream's ``pkg/controller/job``.

* Completion indexes (``Indexed`` Jobs): the ``"1,3-5"`` interval strings of
  ``status.completedIndexes``, the index a pod carries, which indexes still need a pod.
* Failures: which pods count as failed, the pod failure policy (``FailJob`` / ``Ignore`` /
  ``Count`` on exit codes or pod conditions, upstream's messages), the back-off before a
  new pod after failures (10 s doubling to 6 min), ``backoffLimit`` for ``OnFailure`` pods
  (their restarts count).
* How many pods should be running, and the conditions (``SuspensionStatus``, the interim
  ``FailureTarget`` / ``SuccessCriteriaMet`` and the final ``Failed`` / ``Complete``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.backoff import Backoff
from inplace.api.timestamps import parse_rfc3339

__all__ = [
    "COMPLETION_INDEX",
    "TRACKING_FINALIZER",
    "BackoffRecord",
    "completion_index",
    "ensure_condition",
    "first_pending_indexes",
    "format_indexes",
    "is_finished",
    "is_pod_failed",
    "match_pod_failure_policy",
    "new_backoff_record",
    "only_replace_failed",
    "parse_indexes",
    "past_backoff_limit_on_failure",
    "remaining_backoff",
    "want_active",
]

Obj = dict[str, Any]

TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
DEFAULT_BACKOFF: Final = 10.0
MAX_BACKOFF: Final = 360.0
#: Upstream's pod-failure back-off: 10 s doubling to 6 min.
POD_FAILURE_BACKOFF: Final = Backoff(DEFAULT_BACKOFF, MAX_BACKOFF)
MAX_UNCOUNTED_PODS: Final = 500

COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

REASON_BACKOFF_LIMIT: Final = "BackoffLimitExceeded"
REASON_DEADLINE: Final = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("spec") or {}


def is_indexed(job: Mapping[str, Any]) -> bool:
    return _spec(job).get("completionMode") == "Indexed"


def completions(job: Mapping[str, Any]) -> int | None:
    value = _spec(job).get("completions")
    return None if value is None else int(value)


def is_suspended(job: Mapping[str, Any]) -> bool:
    return bool(_spec(job).get("suspend"))


def is_finished(job: Mapping[str, Any]) -> bool:
    """A ``Complete`` or ``Failed`` condition is True."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in (COMPLETE, FAILED) and cond.get("status") == "True":
            return True
    return False


def finish_time(job: Mapping[str, Any]) -> float | None:
    """When the Job finished (the terminal condition's transition), as Unix time."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in (COMPLETE, FAILED) and cond.get("status") == "True":
            try:
                return parse_rfc3339(str(cond.get("lastTransitionTime"))).timestamp()
            except ValueError:
                return None
    return None


# -- indexes -----------------------------------------------------------------------------------


def parse_indexes(text: str | None, limit: int) -> list[int]:
    """``"1,3-5"`` → ``[1, 3, 4, 5]`` (indexes at or above ``limit`` and junk are dropped)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if last else lo
        except ValueError:
            continue
        out.update(i for i in range(lo, min(hi, limit - 1) + 1) if i >= 0)
    return sorted(out)


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted indexes as intervals: ``[1, 3, 4, 5]`` → ``"1,3-5"``."""
    items = sorted(set(indexes))
    parts: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        parts.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ",".join(parts)


def completion_index(pod: Mapping[str, Any]) -> int | None:
    """The pod's ``batch.kubernetes.io/job-completion-index`` (annotation, else label)."""
    meta = pod.get("metadata") or {}
    for source in (meta.get("annotations") or {}, meta.get("labels") or {}):
        value = source.get(COMPLETION_INDEX)
        if value is not None:
            try:
                index = int(value)
            except ValueError:
                return None
            return index if index >= 0 else None
    return None


def first_pending_indexes(
    succeeded: Iterable[int], active: Iterable[int], count: int, limit: int
) -> list[int]:
    """The lowest ``count`` indexes below ``limit`` neither succeeded nor running."""
    taken = set(succeeded) | set(active)
    out: list[int] = []
    for index in range(limit):
        if len(out) >= count:
            break
        if index not in taken:
            out.append(index)
    return out


# -- failures ----------------------------------------------------------------------------------


def only_replace_failed(job: Mapping[str, Any]) -> bool:
    """Pods are replaced once Failed, not while terminating (``podReplacementPolicy:
    Failed``, implied by a pod failure policy)."""
    spec = _spec(job)
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed(job):
        return False
    # A deleted pod counts as failed: it may never reach the Failed phase.
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded"


def _exit_code_matches(code: int, requirement: Mapping[str, Any]) -> bool:
    values = [int(v) for v in requirement.get("values") or ()]
    operator = requirement.get("operator")
    if operator == "In":
        return code in values
    if operator == "NotIn":
        return code not in values
    return False


def _terminated_matching(
    pod: Mapping[str, Any], requirement: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            terminated = (cs.get("state") or {}).get("terminated")
            if terminated is None:
                continue
            name = requirement.get("containerName")
            if name is not None and name != cs.get("name"):
                continue
            code = int(terminated.get("exitCode") or 0)
            if code != 0 and _exit_code_matches(code, requirement):
                return {"name": cs.get("name"), "exitCode": code}
    return None


def match_pod_failure_policy(
    policy: Mapping[str, Any] | None, pod: Mapping[str, Any]
) -> tuple[str | None, bool, str | None]:
    """``matchPodFailurePolicy``: (the Job's failure message for a ``FailJob`` match,
    whether the failure counts towards ``backoffLimit``, the action that matched)."""
    if policy is None:
        return None, True, None
    meta = pod.get("metadata") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}"
    for index, rule in enumerate(policy.get("rules") or ()):
        action = rule.get("action")
        on_codes = rule.get("onExitCodes")
        if on_codes is not None:
            match = _terminated_matching(pod, on_codes)
            if match is None:
                continue
            what = (
                f"Container {match['name']} for pod {where} failed with exit code "
                f"{match['exitCode']} matching {action} rule at index {index}"
            )
        elif rule.get("onPodConditions") is not None:
            found = None
            for cond in (pod.get("status") or {}).get("conditions") or ():
                for pattern in rule["onPodConditions"]:
                    if cond.get("type") == pattern.get("type") and cond.get(
                        "status"
                    ) == pattern.get("status", "True"):
                        found = cond
                        break
                if found is not None:
                    break
            if found is None:
                continue
            what = (
                f"Pod {where} has condition {found.get('type')} matching {action} rule at "
                f"index {index}"
            )
        else:
            continue
        if action == "Ignore":
            return None, False, "Ignore"
        if action in ("Count", "FailIndex"):
            return None, True, action
        if action == "FailJob":
            return what, True, "FailJob"
    return None, True, None


def past_backoff_limit_on_failure(
    job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> bool:
    """``OnFailure`` pods restart in place: their restarts count towards ``backoffLimit``."""
    template_spec = (_spec(job).get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") not in ("Running", "Pending"):
            continue
        for key in ("initContainerStatuses", "containerStatuses"):
            restarts += sum(int(cs.get("restartCount") or 0) for cs in status.get(key) or ())
    limit = int(_spec(job).get("backoffLimit") or 0)
    return restarts > 0 if limit == 0 else restarts >= limit


def want_active(job: Mapping[str, Any], active: int, succeeded: int) -> int:
    """How many pods should be running (upstream ``manageJob``)."""
    parallelism = int(_spec(job).get("parallelism") or 0)
    total = completions(job)
    if total is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(total - succeeded, parallelism))


# -- back-off ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure_time: float | None = None


def _finished_at(pod: Mapping[str, Any]) -> float:
    latest = 0.0
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            stamp = ((cs.get("state") or {}).get("terminated") or {}).get("finishedAt")
            if stamp:
                try:
                    latest = max(latest, parse_rfc3339(str(stamp)).timestamp())
                except ValueError:
                    pass
    if latest:
        return latest
    meta = pod.get("metadata") or {}
    for stamp in (meta.get("deletionTimestamp"), meta.get("creationTimestamp")):
        if stamp:
            try:
                return parse_rfc3339(str(stamp)).timestamp()
            except ValueError:
                continue
    return 0.0


def new_backoff_record(
    old: BackoffRecord, succeeded: Sequence[Mapping[str, Any]], failed: Sequence[Mapping[str, Any]]
) -> BackoffRecord:
    """``newBackoffRecord``: failures since the last success and when the last one was."""
    failed_times = sorted(_finished_at(p) for p in failed)
    if not succeeded:
        if not failed_times:
            return old
        return BackoffRecord(old.failures_after_last_success + len(failed_times), failed_times[-1])
    last_success = max(_finished_at(p) for p in succeeded)
    after = [t for t in failed_times if t > last_success]
    return BackoffRecord(len(after), after[-1] if after else None)


def remaining_backoff(record: BackoffRecord, now: float) -> float:
    """Seconds until a new pod may be created after failures (0: now)."""
    if record.failures_after_last_success == 0 or record.last_failure_time is None:
        return 0.0
    delay = POD_FAILURE_BACKOFF.after(record.failures_after_last_success - 1)
    elapsed = now - record.last_failure_time
    return max(0.0, delay - elapsed)


# -- conditions --------------------------------------------------------------------------------


def new_condition(kind: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def find_condition(conditions: Iterable[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    for cond in conditions:
        if cond.get("type") == kind:
            return cond
    return None


def ensure_condition(
    conditions: list[Obj], kind: str, status: str, reason: str, message: str, now: str
) -> tuple[list[Obj], bool]:
    """``ensureJobConditionStatus``: set or add (never add a False one); (list, changed)."""
    out = [dict(c) for c in conditions]
    for i, cond in enumerate(out):
        if cond.get("type") == kind:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) != (
                status,
                reason,
                message,
            ):
                out[i] = new_condition(kind, status, reason, message, now)
                return out, True
            return out, False
    if status != "False":
        out.append(new_condition(kind, status, reason, message, now))
        return out, True
    return out, False
