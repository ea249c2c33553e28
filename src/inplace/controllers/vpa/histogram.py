"""Upstream's usage histograms: exponential buckets, decaying weights, checkpoints.

A transcription of kubernetes/autoscaler ``vertical-pod-autoscaler/pkg/recommender/util``
(``histogram.go``, ``decaying_histogram.go``, ``histogram_options.go``), so a recommendation
computed here matches the upstream recommender's for the same samples, and a
``VerticalPodAutoscalerCheckpoint`` written by either loads in the other.

* Buckets grow exponentially: bucket ``n >= 1`` starts at
  ``first * (ratio**n - 1) / (ratio - 1)``; the last bucket is open-ended.
* A percentile is the *end* of the bucket where the cumulative weight reaches
  ``p * total`` (the start of the last bucket if it falls there); no interpolation.
* A decaying histogram multiplies a sample's weight by ``2 ** ((t - reference) / half_life)``,
  so a sample one half-life old counts half as much as a fresh one. The reference is moved
  forward (and every weight scaled down) when the exponent would pass 100.

Written in plain Python rather than numpy: the arrays are ~180 buckets, the hot operations
touch one bucket or walk a few, and upstream's exact float order (sequential partial sums)
is what makes results comparable.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.timestamps import parse_rfc3339, rfc3339

__all__ = [
    "MAX_CHECKPOINT_WEIGHT",
    "CheckpointError",
    "DecayingHistogram",
    "ExponentialBuckets",
    "Histogram",
    "LinearBuckets",
]

MAX_CHECKPOINT_WEIGHT: Final = 10000
"""The largest weight a checkpoint stores in one bucket (upstream's ``MaxCheckpointWeight``)."""

MAX_DECAY_EXPONENT: Final = 100
"""When a sample's decay factor would exceed ``2**100`` the reference time moves forward."""

GO_ZERO_TIME_UNIX: Final = -62135596800
"""Go's zero ``time.Time`` (January 1, year 1, UTC) in Unix seconds: ``Time.Round`` rounds
relative to it, so reference timestamps are multiples of the half-life counted from there."""


class CheckpointError(ValueError):
    """A histogram checkpoint that cannot be loaded (negative weight, bucket out of range)."""


@dataclass(frozen=True)
class ExponentialBuckets:
    """Upstream's ``exponentialHistogramOptions``: bucket ``n`` has size ``first * ratio**n``."""

    max_value: float
    first_bucket_size: float
    ratio: float
    epsilon: float

    def __post_init__(self) -> None:
        if (
            self.max_value <= 0.0
            or self.first_bucket_size <= 0.0
            or self.ratio <= 1.0
            or self.epsilon <= 0.0
        ):
            raise ValueError(
                "maxValue, firstBucketSize and epsilon must be > 0.0, ratio must be > 1.0"
            )

    @functools.cached_property
    def num_buckets(self) -> int:
        return (
            math.ceil(
                _log(self.ratio, self.max_value * (self.ratio - 1) / self.first_bucket_size + 1)
            )
            + 1
        )

    def find_bucket(self, value: float) -> int:
        """The bucket a value falls in; values beyond the range land in the first or last."""
        if value < self.first_bucket_size:
            return 0
        bucket = int(_log(self.ratio, value * (self.ratio - 1) / self.first_bucket_size + 1))
        return min(bucket, self.num_buckets - 1)

    def bucket_start(self, bucket: int) -> float:
        if not 0 <= bucket < self.num_buckets:
            raise IndexError(f"index {bucket} out of range [0..{self.num_buckets - 1}]")
        if bucket == 0:
            return 0.0
        return self.first_bucket_size * (self.ratio**bucket - 1) / (self.ratio - 1)


@dataclass(frozen=True)
class LinearBuckets:
    """Upstream's ``linearHistogramOptions``: fixed-size buckets from 0 (used in tests)."""

    max_value: float
    bucket_size: float
    epsilon: float

    def __post_init__(self) -> None:
        if self.max_value <= 0.0 or self.bucket_size <= 0.0 or self.epsilon <= 0.0:
            raise ValueError("maxValue and bucketSize must both be positive")

    @functools.cached_property
    def num_buckets(self) -> int:
        return math.ceil(self.max_value / self.bucket_size) + 1

    def find_bucket(self, value: float) -> int:
        bucket = int(value / self.bucket_size)
        return max(0, min(bucket, self.num_buckets - 1))

    def bucket_start(self, bucket: int) -> float:
        if not 0 <= bucket < self.num_buckets:
            raise IndexError(f"index {bucket} out of range [0..{self.num_buckets - 1}]")
        return bucket * self.bucket_size


Buckets = ExponentialBuckets | LinearBuckets


def _log(base: float, x: float) -> float:
    return math.log(x) / math.log(base)


def _round(x: float) -> int:
    """Go's ``round`` helper in the histogram package: ``floor(x + 0.5)``."""
    return math.floor(x + 0.5)


class Histogram:
    """Bucketed weights of samples; a bucket lighter than ``epsilon`` counts as empty."""

    __slots__ = ("_max", "_min", "_n", "options", "total_weight", "weights")

    def __init__(self, options: Buckets) -> None:
        self.options = options
        self._n = options.num_buckets
        self.weights: list[float] = [0.0] * self._n
        self.total_weight = 0.0
        self._min = self._n - 1  # first non-empty bucket, else the last one
        self._max = 0  # last non-empty bucket, else 0

    @property
    def min_bucket(self) -> int:
        return self._min

    @property
    def max_bucket(self) -> int:
        return self._max

    def add_sample(self, value: float, weight: float, time: float) -> None:
        if weight < 0.0:
            raise ValueError("sample weight must be non-negative")
        bucket = self.options.find_bucket(value)
        self.weights[bucket] += weight
        self.total_weight += weight
        epsilon = self.options.epsilon
        if bucket < self._min and self.weights[bucket] >= epsilon:
            self._min = bucket
        if bucket > self._max and self.weights[bucket] >= epsilon:
            self._max = bucket

    def subtract_sample(self, value: float, weight: float, time: float) -> None:
        if weight < 0.0:
            raise ValueError("sample weight must be non-negative")
        bucket = self.options.find_bucket(value)
        epsilon = self.options.epsilon
        self.total_weight = _safe_subtract(self.total_weight, weight, epsilon)
        self.weights[bucket] = _safe_subtract(self.weights[bucket], weight, epsilon)
        self._update_min_max()

    def merge(self, other: Histogram) -> None:
        if self.options != other.options:
            raise ValueError("can't merge histograms with different options")
        for bucket in range(other._min, other._max + 1):
            self.weights[bucket] += other.weights[bucket]
        self.total_weight += other.total_weight
        self._min = min(self._min, other._min)
        self._max = max(self._max, other._max)

    def is_empty(self) -> bool:
        return self.weights[self._min] < self.options.epsilon

    def percentile(self, percentile: float) -> float:
        """The end of the bucket where the cumulative weight reaches ``percentile * total``
        (0 for an empty histogram)."""
        return self.percentiles((percentile,))[0]

    def percentiles(self, wanted: Sequence[float]) -> list[float]:
        """Several percentiles in one walk over the buckets (same results as one by one)."""
        if self.is_empty():
            return [0.0] * len(wanted)
        order = sorted(range(len(wanted)), key=lambda i: wanted[i])
        out = [0.0] * len(wanted)
        weights = self.weights
        partial = 0.0
        bucket = self._min
        last = self._max
        for i in order:
            threshold = wanted[i] * self.total_weight
            # Upstream walks `for ; bucket < maxBucket; bucket++ { partial += w; if >= break }`;
            # resuming the walk where the previous (smaller) threshold stopped is the same.
            while bucket < last and partial + weights[bucket] < threshold:
                partial += weights[bucket]
                bucket += 1
            out[i] = self._bucket_end(bucket)
        return out

    def _bucket_end(self, bucket: int) -> float:
        if bucket < self._n - 1:
            return self.options.bucket_start(bucket + 1)
        return self.options.bucket_start(bucket)  # the last bucket has no end

    def scale(self, factor: float) -> None:
        """Multiply every weight (percentiles do not change)."""
        if factor < 0.0:
            raise ValueError("scale factor must be non-negative")
        for bucket in range(self._min, self._max + 1):
            self.weights[bucket] *= factor
        self.total_weight *= factor
        self._update_min_max()

    def _update_min_max(self) -> None:
        epsilon = self.options.epsilon
        last = self._n - 1
        while self.weights[self._min] < epsilon and self._min < last:
            self._min += 1
        while self.weights[self._max] < epsilon and self._max > 0:
            self._max -= 1

    def equals(self, other: Histogram, tolerance: float = 1e-15) -> bool:
        if (
            type(self) is not type(other)
            or self.options != other.options
            or self._min != other._min
            or self._max != other._max
        ):
            return False
        return all(
            abs(self.weights[b] - other.weights[b]) <= tolerance
            for b in range(self._min, self._max + 1)
        )

    # -- checkpoints -------------------------------------------------------------------------

    def save_checkpoint(self) -> dict[str, Any]:
        """Upstream's ``HistogramCheckpoint`` as JSON: weights scaled so the heaviest bucket
        is 10000, rounded, near-zero ones dropped; ``totalWeight`` kept exactly."""
        out: dict[str, Any] = {"referenceTimestamp": None}
        max_weight = max(
            (self.weights[b] for b in range(self._min, self._max + 1)),
            default=0.0,
        )
        buckets: dict[int, int] = {}
        if max_weight > 0.0:
            ratio = MAX_CHECKPOINT_WEIGHT / max_weight
            for bucket in range(self._min, self._max + 1):
                weight = _round(self.weights[bucket] * ratio)
                if weight > 0:
                    buckets[bucket] = weight
        if buckets:
            # Go's encoding/json writes map keys sorted as strings.
            out["bucketWeights"] = {str(b): buckets[b] for b in sorted(buckets, key=str)}
        if self.total_weight:
            out["totalWeight"] = self.total_weight
        return out

    def load_checkpoint(self, checkpoint: Mapping[str, Any]) -> None:
        """Add a checkpoint's samples to this histogram (as upstream, loading appends)."""
        total = float(checkpoint.get("totalWeight") or 0.0)
        if total < 0.0:
            raise CheckpointError(f"cannot load checkpoint with negative weight {total}")
        raw = checkpoint.get("bucketWeights") or {}
        if not isinstance(raw, Mapping):
            raise CheckpointError("bucketWeights must be an object")
        buckets: dict[int, int] = {}
        for key, value in raw.items():
            try:
                bucket, weight = int(key), int(value)
            except (TypeError, ValueError) as exc:
                raise CheckpointError(f"bad bucket weight {key!r}: {value!r}") from exc
            if bucket >= self._n:
                raise CheckpointError(
                    f"checkpoint has bucket {bucket} that is exceeding histogram buckets {self._n}"
                )
            if bucket < 0:
                raise CheckpointError(f"checkpoint has a negative bucket {bucket}")
            if not 0 <= weight <= 0xFFFFFFFF:
                raise CheckpointError(f"bucket weight {weight} is not a uint32")
            buckets[bucket] = weight
        weight_sum = sum(buckets.values())
        if weight_sum == 0:
            return
        ratio = total / weight_sum
        for bucket, weight in buckets.items():
            self._min = min(self._min, bucket)
            self._max = max(self._max, bucket)
            self.weights[bucket] += weight * ratio
        self.total_weight += total
        # Weights near epsilon may fall below it after a save/load round trip
        # (kubernetes/autoscaler#7726): drop them from the [min, max] range.
        self._update_min_max()


def _safe_subtract(value: float, sub: float, epsilon: float) -> float:
    value -= sub
    return 0.0 if value < epsilon else value


class DecayingHistogram(Histogram):
    """A histogram whose older samples weigh exponentially less (``half_life`` seconds).

    ``reference`` is a Unix time, always a multiple of the half-life counted from Go's zero
    time, or None before the first sample (Go's zero time).
    """

    __slots__ = ("half_life", "reference")

    def __init__(self, options: Buckets, half_life: float) -> None:
        super().__init__(options)
        if half_life <= 0:
            raise ValueError("half life must be positive")
        self.half_life = half_life
        self.reference: float | None = None

    def add_sample(self, value: float, weight: float, time: float) -> None:
        super().add_sample(value, weight * self.decay_factor(time), time)

    def subtract_sample(self, value: float, weight: float, time: float) -> None:
        super().subtract_sample(value, weight * self.decay_factor(time), time)

    def merge(self, other: Histogram) -> None:
        if not isinstance(other, DecayingHistogram):
            raise TypeError("can't merge a decaying histogram with a plain one")
        if self.half_life != other.half_life:
            raise ValueError("can't merge decaying histograms with different half life periods")
        if other.reference is not None and (
            self.reference is None or self.reference < other.reference
        ):
            self._shift_reference(other.reference)
        elif self.reference is not None and (
            other.reference is None or other.reference < self.reference
        ):
            other._shift_reference(self.reference)
        super().merge(other)

    def equals(self, other: Histogram, tolerance: float = 1e-15) -> bool:
        return (
            isinstance(other, DecayingHistogram)
            and self.half_life == other.half_life
            and self.reference == other.reference
            and super().equals(other, tolerance)
        )

    def _shift_reference(self, new_reference: float) -> None:
        new_reference = self._round_to_half_life(new_reference)
        if self.reference is None:
            # From Go's zero time every weight scales by 2**-(huge): all become zero.
            self.scale(0.0)
        else:
            exponent = _round((self.reference - new_reference) / self.half_life)
            self.scale(math.ldexp(1.0, exponent))
        self.reference = new_reference

    def _round_to_half_life(self, moment: float) -> float:
        """Go's ``Time.Round(halfLife)``: the nearest multiple counted from year 1, halfway
        values rounded up."""
        since_zero = moment - GO_ZERO_TIME_UNIX
        return math.floor(since_zero / self.half_life + 0.5) * self.half_life + GO_ZERO_TIME_UNIX

    def decay_factor(self, time: float) -> float:
        if self.reference is None or time > self.reference + self.half_life * MAX_DECAY_EXPONENT:
            self._shift_reference(time)
        assert self.reference is not None
        return float(2.0 ** ((time - self.reference) / self.half_life))

    def save_checkpoint(self) -> dict[str, Any]:
        out = super().save_checkpoint()
        out["referenceTimestamp"] = None if self.reference is None else rfc3339(self.reference)
        return out

    def load_checkpoint(self, checkpoint: Mapping[str, Any]) -> None:
        super().load_checkpoint(checkpoint)
        raw = checkpoint.get("referenceTimestamp")
        if raw is None:
            self.reference = None
            return
        try:
            self.reference = parse_rfc3339(str(raw)).timestamp()
        except ValueError as exc:
            raise CheckpointError(f"bad referenceTimestamp {raw!r}") from exc
