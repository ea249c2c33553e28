"""From histograms to ``status.recommendation``: upstream's estimator chain.

Transcribed from upstream's ``recommender/logic`` (``recommender.go``, ``estimator.go``) and
``MapToListOfRecommendedContainerResources``:

* target = p90 of CPU samples / memory peaks, lowerBound = p50, upperBound = p95;
* each plus a 15% safety margin;
* upperBound * ``(1 + 1/confidence)``, lowerBound * ``(1 + 0.001/confidence)**-2``, where the
  confidence is the history's length in days (capped by its sample count at one per
  minute): no history leaves the upper bound unbounded and the lower bound at zero;
* each at least the pod minimum (25m, 250Mi) split evenly across the pod's containers;
* only the ``controlledResources``; containers with ``mode: Off`` get nothing;
* then capped by ``minAllowed``/``maxAllowed`` (:func:`~.policy.cap_recommendation`), with
  the uncapped target kept as ``uncappedTarget``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inplace.api.resources import CPU, MEMORY
from inplace.api.vpa_policy import (
    canonical_cpu,
    canonical_memory,
    cap_recommendation,
    container_policy,
    controlled_resources,
    is_scaling_off,
)

from .model import AggregateContainerState, amount_from_float, scale_amount
from .settings import RecommenderSettings

__all__ = [
    "Estimate",
    "confidence",
    "estimate",
    "recommend",
    "recommendation_entry",
]

Amounts = dict[str, int]
"""``{"cpu": millicores, "memory": bytes}`` (upstream's ``model.Resources``)."""


@dataclass(frozen=True)
class Estimate:
    """A container's recommendation in amounts (millicores, bytes), before VPA capping."""

    target: Amounts
    lower_bound: Amounts
    upper_bound: Amounts


def confidence(state: AggregateContainerState, interval: float) -> float:
    """Upstream's ``getConfidence``: history length in ``interval`` units, capped by the
    sample count normalised to one sample per minute."""
    if state.first_sample_start is None or state.last_sample_start is None:
        lifespan = 0.0
    else:
        lifespan = (state.last_sample_start - state.first_sample_start) / interval
    samples = state.total_samples_count / (interval / 60.0)
    return min(lifespan, samples)


def _confidence_factor(conf: float, multiplier: float, exponent: float) -> float:
    if conf <= 0.0:
        return math.inf if exponent > 0 else 0.0  # Go: (1 + m/0)**e
    return math.pow(1.0 + multiplier / conf, exponent)


def _with_margin(amount: int, margin: float) -> int:
    return amount + scale_amount(amount, margin)


def estimate(
    state: AggregateContainerState,
    settings: RecommenderSettings,
    containers: int = 1,
    *,
    now: float = 0.0,
) -> Estimate:
    """Target and bounds of one container of a pod with ``containers`` recommended
    containers (the pod minimums are split across them), at ``now`` (only the remembered
    memory jump depends on it)."""
    fraction = 1.0 / max(containers, 1)
    min_cpu = scale_amount(
        amount_from_float(settings.pod_min_cpu_millicores * 0.001 * 1000.0), fraction
    )
    min_memory = scale_amount(amount_from_float(settings.pod_min_memory_mb * 1024 * 1024), fraction)
    cpu_p = state.cpu.percentiles(
        (
            settings.target_cpu_percentile,
            settings.lower_bound_cpu_percentile,
            settings.upper_bound_cpu_percentile,
        )
    )
    mem_p = state.memory_peaks.percentiles(
        (
            settings.target_memory_percentile,
            settings.lower_bound_memory_percentile,
            settings.upper_bound_memory_percentile,
        )
    )
    cpu = [
        _with_margin(amount_from_float(c * 1000.0), settings.safety_margin_fraction) for c in cpu_p
    ]
    jump = amount_from_float(settings.memory_jump_margin * state.jump(now))
    floor = amount_from_float(state.floor(now))
    memory = [
        max(_with_margin(amount_from_float(m), settings.memory_margin) + jump, floor) for m in mem_p
    ]

    conf_cpu = confidence(state, settings.confidence_interval_cpu)
    conf_memory = confidence(state, settings.confidence_interval_memory)
    upper_cpu = scale_amount(cpu[2], _confidence_factor(conf_cpu, 1.0, 1.0))
    upper_memory = scale_amount(memory[2], _confidence_factor(conf_memory, 1.0, 1.0))
    lower_cpu = scale_amount(cpu[1], _confidence_factor(conf_cpu, 0.001, -2.0))
    lower_memory = scale_amount(memory[1], _confidence_factor(conf_memory, 0.001, -2.0))
    return Estimate(
        target={CPU: max(cpu[0], min_cpu), MEMORY: max(memory[0], min_memory)},
        lower_bound={CPU: max(lower_cpu, min_cpu), MEMORY: max(lower_memory, min_memory)},
        upper_bound={CPU: max(upper_cpu, min_cpu), MEMORY: max(upper_memory, min_memory)},
    )


def _round_up(value: int, scale: int) -> int:
    if scale <= 1 or value == 0:
        return value
    return -(-value // scale) * scale


def _as_resource_list(
    amounts: Mapping[str, int], resources: tuple[str, ...], settings: RecommenderSettings
) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in resources:
        if name not in amounts:
            continue
        if name == CPU:
            out[CPU] = str(canonical_cpu(_round_up(amounts[CPU], settings.round_cpu_millicores)))
        elif name == MEMORY:
            value = _round_up(amounts[MEMORY], settings.round_memory_bytes)
            out[MEMORY] = str(canonical_memory(value))
    return out


def recommendation_entry(
    name: str, est: Estimate, resources: tuple[str, ...], settings: RecommenderSettings
) -> dict[str, Any]:
    """One ``containerRecommendations[]`` entry (uncapped: target == uncappedTarget)."""
    target = _as_resource_list(est.target, resources, settings)
    return {
        "containerName": name,
        "target": target,
        "lowerBound": _as_resource_list(est.lower_bound, resources, settings),
        "upperBound": _as_resource_list(est.upper_bound, resources, settings),
        "uncappedTarget": dict(target),
    }


def recommend(
    vpa: Mapping[str, Any],
    aggregates: Mapping[str, AggregateContainerState],
    settings: RecommenderSettings,
    *,
    now: float = 0.0,
) -> dict[str, Any] | None:
    """``status.recommendation`` for a VPA from its per-container-name aggregates, or None
    when no container has usage yet. Containers are sorted by name, as upstream sorts them."""
    included: dict[str, AggregateContainerState] = {}
    for name, state in aggregates.items():
        if state.is_empty() or is_scaling_off(container_policy(vpa, name)):
            continue
        included[name] = state
    if not included:
        return None
    entries = []
    for name in sorted(included):
        policy = container_policy(vpa, name)
        est = estimate(included[name], settings, len(included), now=now)
        entry = recommendation_entry(name, est, controlled_resources(policy), settings)
        entries.append(cap_recommendation(entry, policy))
    return {"containerRecommendations": entries}
