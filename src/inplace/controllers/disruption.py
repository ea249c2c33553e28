"""The disruption controller: PodDisruptionBudget status (upstream ``pkg/controller/disruption``).

``currentHealthy`` counts the selected pods that are Ready, not being deleted and not just
evicted (``status.disruptedPods``, which the Eviction API fills in and this controller forgets
once the pod is being deleted or two minutes have passed). ``desiredHealthy`` comes from
``minAvailable`` (a number, or a percentage of the expected pods) or from ``maxUnavailable``
(of the expected pods, rounded up). ``expectedPods`` is the number of selected pods, or —
for percentages and ``maxUnavailable`` — the scale of their controllers (a ReplicaSet's
``replicas``, its Deployment's if it has one). ``disruptionsAllowed`` is the difference, never
below zero, and zero while no pod is expected. The Eviction API answers 429 from these
numbers, so ``kubectl drain`` and the scheduler's ``InPlacePreferred`` moves honour budgets.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inplace.api.selectors import LabelSelector, SelectorError
from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.client import (
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    APIConflictError,
    APINotFoundError,
    key_of,
)

from .base import NAMESPACE_INDEX, Context, QueueController
from .deployment.rollout import scaled_value
from .pods import controller_of, is_ready, is_terminating

__all__ = ["DELETION_TIMEOUT", "Budget", "DisruptionController", "budget_numbers"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DELETION_TIMEOUT = 120.0
"""Upstream's ``DeletionTimeout``: an evicted pod not being deleted after this is healthy again."""


@dataclass(frozen=True, slots=True)
class Budget:
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    disruptions_allowed: int
    disrupted_pods: dict[str, str]
    recheck_in: float | None


def _time(text: Any) -> float | None:
    try:
        return parse_rfc3339(str(text)).timestamp()
    except ValueError:
        return None


def budget_numbers(
    pdb: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    expected_scale: int | None,
    now: float,
) -> Budget:
    """The status numbers of ``pdb`` over its selected ``pods``; ``expected_scale`` is the
    summed scale of their controllers (needed for percentages and ``maxUnavailable``)."""
    pods = list(pods)
    spec = pdb.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    expected = desired = 0
    if max_unavailable is not None:
        expected = expected_scale or 0
        desired = max(0, expected - scaled_value(max_unavailable, expected, round_up=True))
    elif min_available is not None:
        if isinstance(min_available, int):
            desired, expected = min_available, len(pods)
        else:
            expected = expected_scale or 0
            desired = scaled_value(min_available, expected, round_up=True)
    recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
    disrupted: dict[str, str] = {}
    recheck: float | None = None
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name"))
        if is_terminating(pod) or name not in recorded:
            continue
        when = _time(recorded[name])
        if when is None or when + DELETION_TIMEOUT < now:
            continue
        disrupted[name] = recorded[name]
        due = when + DELETION_TIMEOUT - now
        recheck = due if recheck is None else min(recheck, due)
    healthy = 0
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name"))
        if is_terminating(pod) or name in disrupted:
            continue
        if is_ready(pod):
            healthy += 1
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return Budget(healthy, desired, expected, allowed, disrupted, recheck)


class ControllerNotFound(Exception):
    pass


class DisruptionController(QueueController):
    name = "disruption-controller"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.budgets = ctx.informer(PODDISRUPTIONBUDGETS)
        self.pods = ctx.informer(PODS)
        self.replica_sets = ctx.informer(REPLICASETS)
        self.deployments = ctx.informer(DEPLOYMENTS)
        self.budgets.add_handler(
            lambda b: self.enqueue(key_of(b)), lambda old, new: self.enqueue(key_of(new)), None
        )
        self.pods.add_handler(self._pod_changed, self._pod_updated, self._pod_changed)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
            self._pod_changed(old)
        self._pod_changed(new)

    def _pod_changed(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        for pdb in self.budgets.by_index(NAMESPACE_INDEX, meta.get("namespace") or ""):
            if _selector(pdb).matches(labels):
                self.enqueue(key_of(pdb))

    def _expected_scale(self, pods: list[Obj]) -> int:
        """``getExpectedScale``: the summed scale of the pods' controllers, each once."""
        seen: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                continue  # unmanaged pods are not expected
            namespace = (pod.get("metadata") or {}).get("namespace")
            uid = str(ref.get("uid"))
            if uid in seen:
                continue
            if ref.get("kind") == "ReplicaSet":
                rs = self.replica_sets.get(f"{namespace}/{ref.get('name')}")
                if rs is None or (rs.get("metadata") or {}).get("uid") != uid:
                    raise ControllerNotFound(
                        f'found no controllers for pod "{(pod.get("metadata") or {}).get("name")}"'
                    )
                owner = controller_of(rs)
                if owner is not None and owner.get("kind") == "Deployment":
                    d = self.deployments.get(f"{namespace}/{owner.get('name')}")
                    if d is not None and (d.get("metadata") or {}).get("uid") == owner.get("uid"):
                        seen[str(owner.get("uid"))] = int(
                            (d.get("spec") or {}).get("replicas") or 0
                        )
                        seen[uid] = 0
                        continue
                seen[uid] = int((rs.get("spec") or {}).get("replicas") or 0)
            else:
                raise ControllerNotFound(
                    f'found no controllers for pod "{(pod.get("metadata") or {}).get("name")}"'
                )
        return sum(seen.values())

    async def reconcile(self, key: str) -> float | None:
        pdb = self.budgets.get(key)
        if pdb is None:
            return None
        namespace = pdb["metadata"].get("namespace") or ""
        selector = _selector(pdb)
        pods = [
            p
            for p in self.pods.by_index(NAMESPACE_INDEX, namespace)
            if selector.matches((p.get("metadata") or {}).get("labels") or {})
        ]
        now = self.ctx.now()
        spec = pdb.get("spec") or {}
        needs_scale = spec.get("maxUnavailable") is not None or isinstance(
            spec.get("minAvailable"), str
        )
        try:
            scale = self._expected_scale(pods) if needs_scale else None
        except ControllerNotFound as exc:
            await self._write(pdb, None, str(exc))
            raise RuntimeError(f"{key}: {exc}") from None
        budget = budget_numbers(pdb, pods, scale, now)
        await self._write(pdb, budget, "")
        return budget.recheck_in + 0.5 if budget.recheck_in is not None else None

    async def _write(self, pdb: Obj, budget: Budget | None, failure: str) -> None:
        old = pdb.get("status") or {}
        generation = (pdb.get("metadata") or {}).get("generation") or 0
        if budget is None:
            status: Obj = {
                "currentHealthy": int(old.get("currentHealthy") or 0),
                "desiredHealthy": int(old.get("desiredHealthy") or 0),
                "expectedPods": int(old.get("expectedPods") or 0),
                "disruptionsAllowed": 0,
                "observedGeneration": generation,
            }
            reason, cond_status, message = "SyncFailed", "False", failure
        else:
            status = {
                "currentHealthy": budget.current_healthy,
                "desiredHealthy": budget.desired_healthy,
                "expectedPods": budget.expected_pods,
                "disruptionsAllowed": budget.disruptions_allowed,
                "observedGeneration": generation,
            }
            if budget.disrupted_pods:
                status["disruptedPods"] = budget.disrupted_pods
            if budget.disruptions_allowed > 0:
                reason, cond_status, message = "SufficientPods", "True", ""
            else:
                reason, cond_status, message = "InsufficientPods", "False", ""
        previous = [c for c in old.get("conditions") or () if c.get("type") == "DisruptionAllowed"]
        cond = {
            "type": "DisruptionAllowed",
            "status": cond_status,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": rfc3339(self.ctx.now()),
        }
        if previous and previous[0].get("status") == cond_status:
            cond["lastTransitionTime"] = previous[0].get("lastTransitionTime")
        status["conditions"] = [
            *(c for c in old.get("conditions") or () if c.get("type") != "DisruptionAllowed"),
            cond,
        ]
        if _same(old, status):
            return
        try:
            await self.client.update(
                PODDISRUPTIONBUDGETS, {**pdb, "status": status}, subresource="status"
            )
        except (APINotFoundError, APIConflictError):
            pass  # gone, or changed meanwhile: the informer brings the new one back to us


def _same(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    for key in ("currentHealthy", "desiredHealthy", "expectedPods", "disruptionsAllowed"):
        if int(old.get(key) or 0) != int(new.get(key) or 0):
            return False
    if (old.get("observedGeneration") or 0) != (new.get("observedGeneration") or 0):
        return False
    if (old.get("disruptedPods") or {}) != (new.get("disruptedPods") or {}):
        return False
    return list(old.get("conditions") or []) == list(new.get("conditions") or [])


def _selector(pdb: Mapping[str, Any]) -> LabelSelector:
    try:
        return LabelSelector.from_dict((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return LabelSelector.nothing()
