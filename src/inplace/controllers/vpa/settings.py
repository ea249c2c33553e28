"""Every parameter of the recommender and the updater, with upstream's defaults.

Two recommender presets are named by :data:`VARIANTS`:

* ``upstream`` — kubernetes/autoscaler's defaults exactly (``recommender/config``,
  ``model/aggregations_config.go``, ``updater/config``), with only the loop intervals
  shortened for one host;
* ``inplace`` — the variant built for restart-free resizing (see docs/architecture.md,
  "The recommender"): the memory request follows the last half hour (5-minute peaks,
  15-minute half-life, 3% margin) and the memory limit is twice the request, capped at the
  node (:mod:`.headroom`): a burst runs on memory the node has and nobody reserved, and
  the next pass grows the request to cover it. A reading above 93% of the limit asks for
  8% more before any OOM, an OOM kill or pause puts a floor under the recommendation so
  the updater acts at once, kills in a row escalate the bump, the pod minimum is 64Mi
  instead of 250Mi, and the updater resizes a pod of any age 5% off its target, because an
  in-place resize costs no restart. CPU keeps upstream's settings. (The learned jump
  margin, ``memory_jump_margin``, keeps room for bursts in the *request* instead; it is
  what a VPA of Guaranteed pods, whose limits must equal their requests, can use.)

Durations are seconds, memory is bytes, CPU is cores unless a name says millicores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "DAY",
    "HOUR",
    "MIB",
    "VARIANTS",
    "RecommenderSettings",
    "UpdaterSettings",
    "variant",
]

HOUR: Final = 3600.0
DAY: Final = 24 * HOUR
MIB: Final = 1024 * 1024


@dataclass(frozen=True)
class RecommenderSettings:
    """How usage samples become a recommendation (upstream's flag in brackets)."""

    histogram_bucket_growth: float = 0.05
    """Each histogram bucket is this fraction wider than the one before (5%). Changing it
    changes the checkpoint format (upstream bumps the checkpoint version)."""
    cpu_histogram_first_bucket: float = 0.01
    """Size of the first CPU bucket, in cores (10m): the resolution for small containers."""
    cpu_histogram_max: float = 1000.0
    """Largest CPU value the buckets cover, in cores."""
    memory_histogram_first_bucket: float = 1e7
    """Size of the first memory bucket, in bytes (10 MB)."""
    memory_histogram_max: float = 1e12
    """Largest memory value the buckets cover, in bytes (1 TB)."""
    min_sample_weight: float = 0.1
    """The smallest weight of a sample before decay; bucket weights below a thousandth of it
    count as empty (upstream's ``epsilon``)."""
    cpu_histogram_decay_half_life: float = DAY
    """A CPU sample this old weighs half a fresh one [--cpu-histogram-decay-half-life]."""
    memory_histogram_decay_half_life: float = DAY
    """A memory peak this old weighs half a fresh one [--memory-histogram-decay-half-life]."""
    memory_aggregation_interval: float = DAY
    """One memory sample per container per interval: the interval's peak
    [--memory-aggregation-interval]."""
    memory_aggregation_interval_count: int = 8
    """Intervals of history kept before an idle container's state expires
    [--memory-aggregation-interval-count]."""
    cpu_weight_by_request: bool = True
    """Weigh each CPU sample by the container's CPU request (at least ``min_sample_weight``),
    so history gathered under a smaller request fades once the request grows. This is the
    design upstream documents; since v1.4 its recommender adds every sample at the minimum
    weight because the request it read was always zero (kubernetes/autoscaler#7818)."""
    oom_bump_up_ratio: float = 1.2
    """After an OOM kill the memory sample is the memory in use times this [--oom-bump-up-ratio]."""
    oom_min_bump_up: float = 100 * MIB
    """… or the memory in use plus this many bytes, whichever is larger
    [--oom-min-bump-up-bytes]."""
    safety_margin_fraction: float = 0.15
    """Added to every estimate: 15% of it [--recommendation-margin-fraction]."""
    memory_safety_margin_fraction: float | None = None
    """A different margin for memory (None: ``safety_margin_fraction``). Our addition."""
    pod_min_cpu_millicores: float = 25.0
    """The smallest CPU recommended for a pod, split evenly across its containers
    [--pod-recommendation-min-cpu-millicores]."""
    pod_min_memory_mb: float = 250.0
    """The smallest memory recommended for a pod, in MiB, split across its containers
    [--pod-recommendation-min-memory-mb]."""
    target_cpu_percentile: float = 0.9
    """[--target-cpu-percentile]"""
    lower_bound_cpu_percentile: float = 0.5
    """[--recommendation-lower-bound-cpu-percentile]"""
    upper_bound_cpu_percentile: float = 0.95
    """[--recommendation-upper-bound-cpu-percentile]"""
    target_memory_percentile: float = 0.9
    """[--target-memory-percentile]"""
    lower_bound_memory_percentile: float = 0.5
    """[--recommendation-lower-bound-memory-percentile]"""
    upper_bound_memory_percentile: float = 0.95
    """[--recommendation-upper-bound-memory-percentile]"""
    confidence_interval_cpu: float = DAY
    """History of this length gives confidence 1: the upper bound is then twice the estimate
    and the lower bound ~1.0x; shorter histories widen the bounds [--confidence-interval-cpu]."""
    confidence_interval_memory: float = DAY
    """As ``confidence_interval_cpu`` for memory [--confidence-interval-memory]."""
    round_cpu_millicores: int = 1
    """CPU recommendations are rounded up to a multiple of this [--round-cpu-millicores]."""
    round_memory_bytes: int = 1
    """Memory recommendations are rounded up to a multiple of this [--round-memory-bytes]."""
    memory_pressure_fraction: float | None = None
    """Our addition (None: off, as upstream). A memory sample above this fraction of the
    container's memory limit (its request when it has no limit) is recorded as an OOM would
    be, so the recommendation rises *before* the kernel kills or pauses the process; an
    in-place resize then lands ahead of the OOM."""
    memory_jump_margin: float = 0.0
    """Our addition (0: off, as upstream). Adds to the memory estimate this multiple of the
    container's recent *jump*: the largest rise of its memory between two readings, in
    bytes (an OOM kill counts as a rise to the bumped size). A workload whose memory moves
    smoothly keeps a thin margin and can be resized to follow it; one that bursts or grows
    in steps keeps room for the next burst or step. This is the per-workload-class margin."""
    memory_jump_half_life: float = DAY
    """How fast a remembered jump fades (it halves every this many seconds)."""
    memory_jump_window: float | None = None
    """With ``memory_jump_margin``: measure a rise against the highest reading of this many
    seconds before it instead of the reading just before (None). Noise around a steady level
    then counts for little (a reading seldom tops the window's high by much), while a burst,
    a step or a new high of a sawtooth counts in full."""
    oom_escalation_window: float | None = None
    """Our addition (None: off, as upstream). Each further OOM kill of a container within
    this many seconds of its previous one doubles the bump (``+100Mi`` becomes ``+200Mi``,
    ``x1.2`` becomes ``x1.4``, ... up to 8 times): usage that jumped far past the limit is
    found in a few kills instead of many, since a killed container's real need is unknown."""
    memory_event_floor_half_life: float | None = None
    """Our addition (None: off, as upstream). An OOM kill or a pressure reading puts a floor
    under the memory target and both bounds at the bumped size, so the updater resizes at
    once however short the memory intervals are; the floor halves every this many seconds.
    (Upstream needs no floor: with one peak a day, the bumped peak *is* the distribution.)"""
    memory_pressure_bump: float | None = None
    """With ``memory_pressure_fraction``: the sample a pressure reading records is the usage
    times ``1 + memory_pressure_bump`` (None: the OOM bump, ``max(+100Mi, x1.2)``). Small
    steps suit in-place resizes, which cost no restart."""
    recommender_interval: float = 10.0
    """Seconds between recommendation passes (upstream: 60 s [--recommender-interval]); with
    the node agents sampling every 5 s a pod gets its first recommendation within ~15 s."""
    checkpoint_interval: float = 60.0
    """Seconds between writes of the ``VerticalPodAutoscalerCheckpoint`` objects."""
    checkpoints_gc_interval: float = 600.0
    """Seconds between sweeps of checkpoints whose VPA or container is gone
    [--checkpoints-gc-interval]."""

    @property
    def histogram_epsilon(self) -> float:
        return 0.001 * self.min_sample_weight

    @property
    def memory_aggregation_window(self) -> float:
        return self.memory_aggregation_interval * self.memory_aggregation_interval_count

    @property
    def memory_margin(self) -> float:
        if self.memory_safety_margin_fraction is None:
            return self.safety_margin_fraction
        return self.memory_safety_margin_fraction


@dataclass(frozen=True)
class UpdaterSettings:
    """When the updater acts on a running pod (upstream's flag in brackets)."""

    update_threshold: float = 0.1
    """A pod whose requests are inside [lowerBound, upperBound] is updated only when the sum
    over resources of |request - target| / request is at least this [--pod-update-threshold]."""
    pod_lifetime_update_threshold: float = 12 * HOUR
    """… and only when it has run this long
    [--in-recommendation-bounds-eviction-lifetime-threshold]."""
    evict_after_oom_threshold: float = 600.0
    """A container OOM-killed less than this after it started makes the pod eligible for an
    update at once [--evict-after-oom-threshold]."""
    min_replicas: int = 2
    """Pods of a controller with fewer live replicas are never disrupted, unless the VPA's
    ``updatePolicy.minReplicas`` says otherwise [--min-replicas]."""
    eviction_tolerance_fraction: float = 0.5
    """At most this fraction of a controller's replicas may be evicted or resizing at once
    [--eviction-tolerance]."""
    deferred_resize_timeout: float = 300.0
    """InPlaceOrRecreate: a resize still ``Deferred`` this long after it was asked for falls
    back to eviction (upstream's ``DeferredResizeUpdateTimeout``)."""
    in_progress_resize_timeout: float = HOUR
    """InPlaceOrRecreate: a resize still in progress this long falls back to eviction
    (upstream's ``InProgressResizeUpdateTimeout``)."""
    updater_interval: float = 10.0
    """Seconds between updater passes (upstream: 60 s [--updater-interval])."""
    memory_limit_headroom: float | None = None
    """Our addition (None: off, as upstream). Each in-place resize writes the memory limit
    at this multiple of the new request, capped at the node's allocatable memory, where
    Kubernetes allows it (see :mod:`.headroom`): a burst uses memory the node has and no
    one reserved, and the next pass grows the request to cover it."""


VARIANTS: Final[dict[str, tuple[RecommenderSettings, UpdaterSettings]]] = {
    "upstream": (RecommenderSettings(), UpdaterSettings()),
    "inplace": (
        RecommenderSettings(
            memory_histogram_decay_half_life=HOUR / 4,
            memory_aggregation_interval=300.0,
            memory_aggregation_interval_count=576,
            memory_safety_margin_fraction=0.03,
            memory_pressure_fraction=0.93,
            memory_pressure_bump=0.08,
            memory_event_floor_half_life=HOUR / 2,
            pod_min_memory_mb=64.0,
            oom_escalation_window=600.0,
            confidence_interval_memory=2 * HOUR,
        ),
        UpdaterSettings(
            pod_lifetime_update_threshold=0.0, update_threshold=0.05, memory_limit_headroom=2.0
        ),
    ),
}
"""The named presets ``inplace replay --policy`` and the controller manager accept."""


def variant(name: str) -> tuple[RecommenderSettings, UpdaterSettings]:
    """The settings of a named preset (KeyError names the ones that exist)."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}") from None
