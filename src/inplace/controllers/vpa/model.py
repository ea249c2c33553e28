"""What the recommender remembers about containers: usage histograms and memory peaks.

Transcribed from upstream's ``recommender/model`` (``aggregate_container_state.go``,
``container.go``, ``types.go``):

* An :class:`AggregateContainerState` holds, for one container name of one VPA, a decaying
  histogram of CPU usage (one sample per usage reading, weighted by the CPU request) and a
  decaying histogram of memory *peaks* (one per container per aggregation interval).
* A :class:`ContainerState` follows one running container: it keeps the current interval's
  memory peak, replacing it in the aggregate when a higher reading arrives, and turns an OOM
  kill into an artificial peak of ``max(used + 100Mi, used * 1.2)``.

Amounts are upstream's ``ResourceAmount``: integer millicores and bytes; times are Unix
seconds. Nothing here reads a clock: every call carries its time.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from inplace.api.annotations import (
    MEMORY_FLOOR,
    MEMORY_FLOOR_TIME,
    MEMORY_JUMP,
    MEMORY_JUMP_TIME,
)
from inplace.api.timestamps import parse_rfc3339, rfc3339, rfc3339_micro

from .histogram import GO_ZERO_TIME_UNIX, CheckpointError, DecayingHistogram, ExponentialBuckets
from .settings import RecommenderSettings

__all__ = [
    "CHECKPOINT_VERSION",
    "MAX_RESOURCE_AMOUNT",
    "AggregateContainerState",
    "ContainerState",
    "amount_from_float",
    "scale_amount",
]

CHECKPOINT_VERSION: Final = "v3"
"""Upstream's ``SupportedCheckpointVersion``: checkpoints of another version are ignored."""

MAX_RESOURCE_AMOUNT: Final = 10**14
"""Upstream's ``MaxResourceAmount``: amounts saturate here."""


def amount_from_float(value: float) -> int:
    """Upstream's ``resourceAmountFromFloat``: truncate toward zero, clamp to [0, 1e14]
    (NaN, which only ``0 * inf`` produces, counts as 0)."""
    if math.isnan(value) or value < 0:
        return 0
    if value > MAX_RESOURCE_AMOUNT:
        return MAX_RESOURCE_AMOUNT
    return int(value)


def scale_amount(amount: int, factor: float) -> int:
    """Upstream's ``ScaleResource``."""
    return amount_from_float(amount * factor) if amount else 0


@dataclass(frozen=True)
class _Options:
    cpu: ExponentialBuckets
    memory: ExponentialBuckets


_OPTIONS_CACHE: dict[tuple[float, ...], _Options] = {}


def _options(settings: RecommenderSettings) -> _Options:
    key = (
        settings.histogram_bucket_growth,
        settings.cpu_histogram_first_bucket,
        settings.cpu_histogram_max,
        settings.memory_histogram_first_bucket,
        settings.memory_histogram_max,
        settings.histogram_epsilon,
    )
    found = _OPTIONS_CACHE.get(key)
    if found is None:
        ratio = 1.0 + settings.histogram_bucket_growth
        found = _Options(
            ExponentialBuckets(
                settings.cpu_histogram_max,
                settings.cpu_histogram_first_bucket,
                ratio,
                settings.histogram_epsilon,
            ),
            ExponentialBuckets(
                settings.memory_histogram_max,
                settings.memory_histogram_first_bucket,
                ratio,
                settings.histogram_epsilon,
            ),
        )
        _OPTIONS_CACHE[key] = found
    return found


@dataclass
class AggregateContainerState:
    """Usage of every container with one name under one VPA (upstream's aggregate).

    ``first_sample_start``, ``last_sample_start`` and ``total_samples_count`` count CPU
    samples only, as upstream's do: they measure how much history backs a recommendation.
    """

    settings: RecommenderSettings
    creation_time: float
    cpu: DecayingHistogram = field(init=False)
    memory_peaks: DecayingHistogram = field(init=False)
    first_sample_start: float | None = None
    last_sample_start: float | None = None
    total_samples_count: int = 0
    memory_jump: float = 0.0
    """The largest recent rise of memory between two readings, in bytes, as of
    ``memory_jump_at`` (see ``memory_jump_margin``)."""
    memory_jump_at: float = 0.0
    memory_floor: float = 0.0
    """The bumped size of the latest OOM kill or pressure reading, in bytes, as of
    ``memory_floor_at`` (see ``memory_event_floor_half_life``)."""
    memory_floor_at: float = 0.0

    def __post_init__(self) -> None:
        options = _options(self.settings)
        self.cpu = DecayingHistogram(options.cpu, self.settings.cpu_histogram_decay_half_life)
        self.memory_peaks = DecayingHistogram(
            options.memory, self.settings.memory_histogram_decay_half_life
        )

    def add_cpu_sample(self, time: float, usage_millicores: int, request_millicores: int) -> None:
        weight = self.settings.min_sample_weight
        if self.settings.cpu_weight_by_request:
            weight = max(request_millicores / 1000.0, weight)
        self.cpu.add_sample(usage_millicores / 1000.0, weight, time)
        if self.last_sample_start is None or time > self.last_sample_start:
            self.last_sample_start = time
        if self.first_sample_start is None or time < self.first_sample_start:
            self.first_sample_start = time
        self.total_samples_count += 1

    def add_memory_peak(self, time: float, bytes_: int) -> None:
        self.memory_peaks.add_sample(float(bytes_), 1.0, time)

    def subtract_memory_peak(self, time: float, bytes_: int) -> None:
        self.memory_peaks.subtract_sample(float(bytes_), 1.0, time)

    def jump(self, now: float) -> float:
        """The remembered memory jump at ``now`` (it halves every ``memory_jump_half_life``)."""
        if not self.memory_jump:
            return 0.0
        elapsed = max(now - self.memory_jump_at, 0.0)
        return float(self.memory_jump * 2.0 ** (-elapsed / self.settings.memory_jump_half_life))

    def record_jump(self, now: float, rise: float) -> None:
        if rise > self.jump(now):
            self.memory_jump = rise
            self.memory_jump_at = now

    def floor(self, now: float) -> float:
        """The memory floor left at ``now`` (0 when ``memory_event_floor_half_life`` is off)."""
        half_life = self.settings.memory_event_floor_half_life
        if not self.memory_floor or half_life is None:
            return 0.0
        elapsed = max(now - self.memory_floor_at, 0.0)
        return float(self.memory_floor * 2.0 ** (-elapsed / half_life))

    def raise_floor(self, now: float, bytes_: int) -> None:
        if self.settings.memory_event_floor_half_life is not None and bytes_ > self.floor(now):
            self.memory_floor = float(bytes_)
            self.memory_floor_at = now

    def is_empty(self) -> bool:
        """No CPU sample and no memory peak yet (upstream would still recommend its minimums;
        we wait for the first reading)."""
        return self.total_samples_count == 0 and self.memory_peaks.is_empty()

    def is_expired(self, now: float) -> bool:
        """Idle for a whole memory aggregation window (upstream's ``isExpired``)."""
        window = self.settings.memory_aggregation_window
        if self.total_samples_count == 0:
            return now - self.creation_time >= window
        assert self.last_sample_start is not None
        return now - self.last_sample_start >= window

    def merge(self, other: AggregateContainerState) -> None:
        """Take ``other``'s history in, as if this aggregate had seen its samples too.

        Histograms and sample counts add up, the first sample start is the earlier one and
        the last the later one (upstream's rules). The learned jump and the floor are not
        sums but running maxima: :meth:`record_jump` and :meth:`raise_floor` keep the larger
        of the remembered, decayed value and the new one. Both sides decay at the same
        half-life, so their curves never cross and the larger at any one time is the larger
        at every time: merging keeps that one (compared at the later of the two times), which
        is exactly what one aggregate fed both histories would remember."""
        self.cpu.merge(other.cpu)
        self.memory_peaks.merge(other.memory_peaks)
        if other.first_sample_start is not None and (
            self.first_sample_start is None or other.first_sample_start < self.first_sample_start
        ):
            self.first_sample_start = other.first_sample_start
        if other.last_sample_start is not None and (
            self.last_sample_start is None or other.last_sample_start > self.last_sample_start
        ):
            self.last_sample_start = other.last_sample_start
        self.total_samples_count += other.total_samples_count
        self.memory_jump, self.memory_jump_at = _larger(
            (self.memory_jump, self.memory_jump_at),
            (other.memory_jump, other.memory_jump_at),
            self.settings.memory_jump_half_life,
        )
        floor_half_life = self.settings.memory_event_floor_half_life
        if floor_half_life is not None:  # off: never raised, as raise_floor
            self.memory_floor, self.memory_floor_at = _larger(
                (self.memory_floor, self.memory_floor_at),
                (other.memory_floor, other.memory_floor_at),
                floor_half_life,
            )

    # -- checkpoints -------------------------------------------------------------------------

    def save_checkpoint(self, now: float) -> dict[str, Any]:
        """``VerticalPodAutoscalerCheckpointStatus`` as upstream serializes it."""
        status: dict[str, Any] = {
            "lastUpdateTime": rfc3339(now),
            "version": CHECKPOINT_VERSION,
            "cpuHistogram": self.cpu.save_checkpoint(),
            "memoryHistogram": self.memory_peaks.save_checkpoint(),
            "firstSampleStart": _time_or_null(self.first_sample_start),
            "lastSampleStart": _time_or_null(self.last_sample_start),
        }
        if self.total_samples_count:
            status["totalSamplesCount"] = self.total_samples_count
        return status

    def load_checkpoint(self, status: Mapping[str, Any]) -> None:
        """Restore from a checkpoint's status; raises :class:`CheckpointError` for another
        version or bad data (the caller starts from empty then, as upstream does)."""
        version = status.get("version")
        if version != CHECKPOINT_VERSION:
            raise CheckpointError(f"unsupported checkpoint version {version}")
        count = status.get("totalSamplesCount") or 0
        if not isinstance(count, int) or count < 0:
            raise CheckpointError(f"bad totalSamplesCount {count!r}")
        first = _parse_time(status.get("firstSampleStart"))
        last = _parse_time(status.get("lastSampleStart"))
        self.memory_peaks.load_checkpoint(status.get("memoryHistogram") or {})
        self.cpu.load_checkpoint(status.get("cpuHistogram") or {})
        self.total_samples_count = count
        self.first_sample_start = first
        self.last_sample_start = last

    def learned_annotations(self) -> dict[str, str]:
        """What the ``inplace`` variant learned beyond upstream's checkpoint status, as the
        checkpoint object's annotations: the memory jump and the floor, each as whole bytes
        and the time it was recorded (the decay is counted from that time, so nothing is
        lost between writes). Empty when nothing was learned, as with upstream's settings."""
        out: dict[str, str] = {}
        jump = amount_from_float(self.memory_jump)
        if jump > 0:
            out[MEMORY_JUMP] = str(jump)
            out[MEMORY_JUMP_TIME] = rfc3339_micro(self.memory_jump_at)
        floor = amount_from_float(self.memory_floor)
        if floor > 0:
            out[MEMORY_FLOOR] = str(floor)
            out[MEMORY_FLOOR_TIME] = rfc3339_micro(self.memory_floor_at)
        return out

    def load_learned(self, annotations: object) -> None:
        """Restore what :meth:`learned_annotations` wrote. A missing or unparsable value (or
        time) means that one was not learned, never an error: a checkpoint written by
        upstream's recommender, or by a version of ours before these, has none."""
        if not isinstance(annotations, Mapping):
            return
        jump = _learned(annotations, MEMORY_JUMP, MEMORY_JUMP_TIME)
        if jump is not None:
            self.memory_jump, self.memory_jump_at = jump
        floor = _learned(annotations, MEMORY_FLOOR, MEMORY_FLOOR_TIME)
        if floor is not None:
            self.memory_floor, self.memory_floor_at = floor


def _larger(
    mine: tuple[float, float], theirs: tuple[float, float], half_life: float
) -> tuple[float, float]:
    """Of two decaying ``(value, as of)`` pairs with one half-life, the larger (``mine`` on a
    tie): compared at the later of their times, where neither has decayed into the future."""
    if theirs[0] <= 0:
        return mine
    if mine[0] <= 0:
        return theirs
    at = max(mine[1], theirs[1])
    mine_then = mine[0] * 2.0 ** (-(at - mine[1]) / half_life)
    theirs_then = theirs[0] * 2.0 ** (-(at - theirs[1]) / half_life)
    return theirs if theirs_then > mine_then else mine


def _learned(
    annotations: Mapping[Any, Any], value_key: str, time_key: str
) -> tuple[float, float] | None:
    """``(bytes, as of)`` from a checkpoint's annotations, or None when either is missing or
    does not parse (whole bytes in (0, 1e14], an RFC 3339 time stamp)."""
    raw, stamp = annotations.get(value_key), annotations.get(time_key)
    if not isinstance(raw, str) or not isinstance(stamp, str):
        return None
    if not (raw.isascii() and raw.isdigit()):
        return None
    value = int(raw)
    if not 0 < value <= MAX_RESOURCE_AMOUNT:
        return None
    try:
        at = parse_rfc3339(stamp).timestamp()
    except (ValueError, OverflowError):
        return None
    return float(value), at


def _time_or_null(moment: float | None) -> str | None:
    return None if moment is None else rfc3339(moment)


def _parse_time(raw: object) -> float | None:
    if raw is None:
        return None
    try:
        moment = parse_rfc3339(str(raw)).timestamp()
    except ValueError as exc:
        raise CheckpointError(f"bad time stamp {raw!r}") from exc
    # Go's zero time means "never" in a checkpoint.
    return None if moment <= GO_ZERO_TIME_UNIX else moment


@dataclass
class ContainerState:
    """One running container: its current memory interval and the aggregate it feeds."""

    aggregate: AggregateContainerState
    last_cpu_sample_start: float | None = None
    memory_peak: int = 0
    oom_peak: int = 0
    window_end: float | None = None
    last_memory_sample_start: float | None = None
    last_memory_usage: int = 0
    last_oom: float | None = None
    oom_streak: int = 0
    """OOM kills in a row, each within ``oom_escalation_window`` of the one before."""
    recent_highs: deque[tuple[float, int]] = field(default_factory=deque)
    """Readings of the last ``memory_jump_window``, each higher than every later one (a
    monotonic queue: the first is the window's high)."""

    @property
    def settings(self) -> RecommenderSettings:
        return self.aggregate.settings

    @property
    def max_memory_peak(self) -> int:
        return max(self.memory_peak, self.oom_peak)

    def add_cpu_sample(self, time: float, usage_millicores: int, request_millicores: int) -> bool:
        """Aggregate a CPU reading; duplicate, out-of-order or negative ones are discarded."""
        if usage_millicores < 0 or (
            self.last_cpu_sample_start is not None and time <= self.last_cpu_sample_start
        ):
            return False
        self.aggregate.add_cpu_sample(time, usage_millicores, request_millicores)
        self.last_cpu_sample_start = time
        return True

    def add_memory_sample(self, time: float, usage_bytes: int, *, is_oom: bool = False) -> bool:
        """Keep one peak per aggregation interval; OOM samples are never discarded as old."""
        if usage_bytes < 0 or (
            not is_oom
            and self.last_memory_sample_start is not None
            and time < self.last_memory_sample_start
        ):
            return False
        self.last_memory_sample_start = time
        if not is_oom:
            previous, self.last_memory_usage = self.last_memory_usage, usage_bytes
            if self.settings.memory_jump_window is not None:
                previous = self._recent_high(time, usage_bytes)
            if previous and usage_bytes > previous and self.settings.memory_jump_margin:
                self.aggregate.record_jump(time, usage_bytes - previous)
        if self.window_end is None:
            self.window_end = time
        add_new_peak = False
        if time < self.window_end:
            old_max = self.max_memory_peak
            if old_max != 0 and usage_bytes > old_max:
                self.aggregate.subtract_memory_peak(self.window_end, old_max)
                add_new_peak = True
        else:
            interval = self.settings.memory_aggregation_interval
            # Go: ts.Sub(windowEnd).Truncate(interval) + interval
            shift = math.floor((time - self.window_end) / interval) * interval + interval
            self.window_end += shift
            self.memory_peak = 0
            self.oom_peak = 0
            add_new_peak = True
        if add_new_peak:
            self.aggregate.add_memory_peak(self.window_end, usage_bytes)
            if is_oom:
                self.oom_peak = usage_bytes
            else:
                self.memory_peak = usage_bytes
        return True

    def _recent_high(self, time: float, usage_bytes: int) -> int:
        """The highest reading of the last ``memory_jump_window`` before this one (0: none),
        then this one taken into the window."""
        window = self.settings.memory_jump_window or 0.0
        highs = self.recent_highs
        while highs and highs[0][0] < time - window:
            highs.popleft()
        high = highs[0][1] if highs else 0
        while highs and highs[-1][1] <= usage_bytes:
            highs.pop()
        highs.append((time, usage_bytes))
        return high

    def record_oom(self, time: float, requested_memory: int, *, kill: bool = True) -> bool:
        """An OOM kill as an artificial peak: ``max(used + min bump, used * ratio)`` where
        ``used`` is the larger of the request and this interval's observed peak. Returns
        False for an OOM older than one interval before the latest memory reading.

        ``kill=False`` is memory pressure (``memory_pressure_fraction``): the same bump,
        but not remembered as a jump."""
        interval = self.settings.memory_aggregation_interval
        if (
            self.last_memory_sample_start is not None
            and time < self.last_memory_sample_start - interval
        ):
            return False
        used = max(requested_memory, self.memory_peak)
        escalation = 1
        window = self.settings.oom_escalation_window
        if kill and window is not None:
            recent = self.last_oom is not None and 0 <= time - self.last_oom <= window
            self.oom_streak = self.oom_streak + 1 if recent else 0
            self.last_oom = time
            escalation = 2 ** min(self.oom_streak, 3)
        needed = max(
            used + amount_from_float(self.settings.oom_min_bump_up * escalation),
            scale_amount(used, 1 + (self.settings.oom_bump_up_ratio - 1) * escalation),
        )
        previous = self.last_memory_usage
        if kill and previous and needed > previous and self.settings.memory_jump_margin:
            self.aggregate.record_jump(time, needed - previous)
        self.aggregate.raise_floor(time, needed)
        return self.add_memory_sample(time, needed, is_oom=True)

    def record_pressure(self, time: float, usage_bytes: int) -> bool:
        """Memory above ``memory_pressure_fraction`` of the limit: record the usage bumped by
        ``memory_pressure_bump`` (or as an OOM when that is None), before any kill."""
        bump = self.settings.memory_pressure_bump
        if bump is None:
            return self.record_oom(time, usage_bytes, kill=False)
        needed = amount_from_float(usage_bytes * (1 + bump))
        self.aggregate.raise_floor(time, needed)
        return self.add_memory_sample(time, needed, is_oom=True)
