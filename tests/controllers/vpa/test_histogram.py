"""Histograms against hand-computed values (upstream's histogram tests as tables) and
properties: percentiles are monotone in p, checkpoints round-trip."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.controllers.vpa.histogram import (
    MAX_CHECKPOINT_WEIGHT,
    CheckpointError,
    DecayingHistogram,
    ExponentialBuckets,
    Histogram,
    LinearBuckets,
)

EPS = 1e-15
LINEAR = LinearBuckets(10.0, 1.0, EPS)
CPU = ExponentialBuckets(1000.0, 0.01, 1.05, 1e-4)
DAY = 86400.0
T0 = 1767571200.0  # 2026-01-05T00:00:00Z, a multiple of a day since Go's zero time


def test_exponential_buckets_are_upstreams() -> None:
    # ceil(log_1.05(1000 * 0.05 / 0.01 + 1)) + 1
    assert CPU.num_buckets == 176
    assert CPU.bucket_start(0) == 0.0
    assert CPU.bucket_start(1) == pytest.approx(0.01)
    assert CPU.bucket_start(2) == pytest.approx(0.0205)  # 0.01 + 0.01 * 1.05
    assert CPU.bucket_start(3) == pytest.approx(0.031525)
    assert CPU.find_bucket(0.005) == 0
    assert CPU.find_bucket(0.015) == 1
    assert CPU.find_bucket(0.025) == 2
    assert CPU.find_bucket(1e9) == 175
    with pytest.raises(IndexError):
        CPU.bucket_start(176)


@pytest.mark.parametrize(
    ("kwargs", "cls"),
    [
        (
            {"max_value": 0.0, "first_bucket_size": 1.0, "ratio": 1.05, "epsilon": 1.0},
            ExponentialBuckets,
        ),
        (
            {"max_value": 1.0, "first_bucket_size": 1.0, "ratio": 1.0, "epsilon": 1.0},
            ExponentialBuckets,
        ),
        ({"max_value": 1.0, "bucket_size": 0.0, "epsilon": 1.0}, LinearBuckets),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, float], cls: type) -> None:
    with pytest.raises(ValueError):
        cls(**kwargs)


def test_empty_histogram_percentiles_are_zero() -> None:
    h = Histogram(LINEAR)
    assert [h.percentile(p) for p in (-0.5, 0.0, 0.5, 1.0, 1.5)] == [0.0] * 5


@pytest.mark.parametrize(
    ("p", "expected"),
    # { 1: 1, 2: 2, 3: 3, 4: 4 } (weight i at value i): the end of the bucket where the
    # cumulative weight first reaches p * 10.
    [
        (0.0, 2),
        (0.1, 2),
        (0.2, 3),
        (0.3, 3),
        (0.4, 4),
        (0.5, 4),
        (0.6, 4),
        (0.7, 5),
        (0.9, 5),
        (1.0, 5),
    ],
)
def test_percentiles(p: float, expected: float) -> None:
    h = Histogram(LINEAR)
    for i in range(1, 5):
        h.add_sample(float(i), float(i), 0.0)
    assert h.percentile(p) == expected
    assert h.percentiles([0.9, p, 0.1]) == [5, expected, 2]


def test_percentile_out_of_bounds() -> None:
    h = Histogram(LinearBuckets(1.0, 0.1, EPS))
    h.add_sample(0.1, 0.1, 0.0)
    h.add_sample(0.2, 0.2, 0.0)
    assert h.percentile(-0.1) == pytest.approx(0.2)
    assert h.percentile(1.1) == pytest.approx(0.3)
    h.add_sample(0.0, 0.1, 0.0)
    h.add_sample(1.0, 0.2, 0.0)  # the last bucket: its start is returned
    assert h.percentile(-0.1) == pytest.approx(0.1)
    assert h.percentile(1.1) == pytest.approx(1.0)


def test_emptiness_follows_epsilon() -> None:
    h = Histogram(LinearBuckets(1.0, 0.1, EPS))
    assert h.is_empty()
    h.add_sample(0.1, EPS * 2.5, 0.0)
    assert not h.is_empty()
    h.subtract_sample(0.1, EPS, 0.0)
    assert not h.is_empty()
    h.subtract_sample(0.1, EPS, 0.0)
    assert h.is_empty()


def test_merge() -> None:
    a, b, expected = Histogram(LINEAR), Histogram(LINEAR), Histogram(LINEAR)
    for value in (1, 2):
        a.add_sample(value, 1, 0.0)
    for value in (2, 3):
        b.add_sample(value, 1, 0.0)
    for value in (1, 2, 2, 3):
        expected.add_sample(value, 1, 0.0)
    a.merge(b)
    assert a.equals(expected)
    with pytest.raises(ValueError):
        a.merge(Histogram(LinearBuckets(5.0, 1.0, EPS)))


def test_negative_weights_are_refused() -> None:
    h = Histogram(LINEAR)
    with pytest.raises(ValueError):
        h.add_sample(1.0, -1.0, 0.0)
    with pytest.raises(ValueError):
        h.scale(-1.0)


@pytest.mark.parametrize(
    ("samples", "weights", "total"),
    [
        ([], {}, None),
        ([(1.0, 1.0)], {"1": 10000}, 1.0),
        # 1 is below half a unit of the scaled maximum: dropped.
        ([(1.0, 1.0), (2.0, 100000.0)], {"2": 10000}, 100001.0),
        # weights scaled so the heaviest is 10000: 1 -> 1, 50 -> 50.
        ([(1.0, 1.0), (2.0, 10000.0), (3.0, 50.0)], {"1": 1, "2": 10000, "3": 50}, 10051.0),
        # keys sorted as strings, as Go's encoding/json writes map[int]uint32
        ([(9.0, 1.0), (10.0, 2.0)], {"10": 10000, "9": 5000}, 3.0),
    ],
)
def test_save_checkpoint(
    samples: list[tuple[float, float]], weights: dict[str, int], total: float | None
) -> None:
    h = Histogram(LinearBuckets(20.0, 1.0, EPS))
    for value, weight in samples:
        h.add_sample(value, weight, 0.0)
    saved = h.save_checkpoint()
    assert saved.get("bucketWeights", {}) == weights
    assert list(saved.get("bucketWeights", {})) == list(weights)
    assert saved.get("totalWeight") == total
    assert saved["referenceTimestamp"] is None


def test_load_checkpoint_scales_to_total_weight() -> None:
    h = Histogram(LINEAR)
    h.load_checkpoint({"bucketWeights": {"1": 2, "2": 1}, "totalWeight": 6.0})
    assert h.weights[1] == pytest.approx(4.0)
    assert h.weights[2] == pytest.approx(2.0)
    assert h.total_weight == 6.0
    assert h.percentile(0.5) == 2.0
    # Loading appends, as upstream's does.
    h.load_checkpoint({"bucketWeights": {"3": 10000}, "totalWeight": 6.0})
    assert h.percentile(0.6) == 4.0


@pytest.mark.parametrize(
    ("checkpoint", "message"),
    [
        ({"bucketWeights": {"11": 1}, "totalWeight": 1.0}, "exceeding histogram buckets 11"),
        ({"bucketWeights": {"-1": 1}, "totalWeight": 1.0}, "negative bucket -1"),
        ({"bucketWeights": {"1": 1}, "totalWeight": -1.0}, "negative weight"),
        ({"bucketWeights": {"x": 1}, "totalWeight": 1.0}, "bad bucket weight"),
        ({"bucketWeights": {"1": 2**32}, "totalWeight": 1.0}, "not a uint32"),
    ],
)
def test_bad_checkpoints_are_refused(checkpoint: dict[str, object], message: str) -> None:
    h = Histogram(LINEAR)
    with pytest.raises(CheckpointError, match=message):
        h.load_checkpoint(checkpoint)
    assert h.is_empty()


def test_load_drops_buckets_that_fall_below_epsilon() -> None:
    # kubernetes/autoscaler#7726: a tiny bucket that rounds below epsilon after a round
    # trip must not leave the histogram looking empty.
    h = Histogram(LinearBuckets(10.0, 1.0, 1e-3))
    h.load_checkpoint({"bucketWeights": {"1": 1, "5": 10000}, "totalWeight": 1.0})
    assert not h.is_empty()
    assert h.min_bucket == 5
    assert h.percentile(0.5) == 6.0


# -- decay -------------------------------------------------------------------------------


def test_decay_halves_a_sample_every_half_life() -> None:
    h = DecayingHistogram(LINEAR, DAY)
    h.add_sample(2.0, 1.0, T0)  # reference T0 (rounded to a day): weight 1
    h.add_sample(1.0, 1.0, T0 + DAY)  # one half-life later: weight 2
    assert h.reference == T0
    assert h.weights[2] == pytest.approx(1.0)
    assert h.weights[1] == pytest.approx(2.0)
    # p50 falls in the newer, heavier bucket (1): cumulative 2 of 3 >= 1.5.
    assert h.percentile(0.5) == 2.0
    assert h.percentile(0.9) == 3.0


def test_reference_is_rounded_to_the_half_life_from_go_zero_time() -> None:
    h = DecayingHistogram(LINEAR, DAY)
    h.add_sample(1.0, 1.0, T0 + 0.6 * DAY)  # rounds up to the next midnight
    assert h.reference == T0 + DAY
    assert h.weights[1] == pytest.approx(2.0**-0.4)
    h2 = DecayingHistogram(LINEAR, 7 * 3600.0)
    h2.add_sample(1.0, 1.0, T0)
    # Multiples of 7 h counted from January 1 of year 1, not from 1970.
    assert (h2.reference + 62135596800) % (7 * 3600) == 0
    assert abs(h2.reference - T0) <= 3.5 * 3600


def test_reference_moves_forward_past_100_half_lives() -> None:
    h = DecayingHistogram(LINEAR, 3600.0)
    h.add_sample(1.0, 1.0, T0)
    h.add_sample(2.0, 1.0, T0 + 101 * 3600.0)
    assert h.reference == T0 + 101 * 3600.0
    # The old sample weighs 2**-101 of the new one: below epsilon, so gone.
    assert h.min_bucket == 2
    assert h.weights[2] == pytest.approx(1.0)
    assert h.percentile(0.0) == 3.0


def test_decaying_merge_aligns_references() -> None:
    a = DecayingHistogram(LINEAR, DAY)
    b = DecayingHistogram(LINEAR, DAY)
    a.add_sample(1.0, 1.0, T0)
    b.add_sample(3.0, 1.0, T0 + 2 * DAY)
    a.merge(b)
    assert a.reference == T0 + 2 * DAY
    assert a.weights[1] == pytest.approx(0.25)
    assert a.weights[3] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        a.merge(DecayingHistogram(LINEAR, 3600.0))
    with pytest.raises(TypeError):
        a.merge(Histogram(LINEAR))


def test_decaying_checkpoint_round_trip() -> None:
    h = DecayingHistogram(CPU, DAY)
    for i in range(50):
        h.add_sample(0.1 + 0.01 * (i % 7), 0.25, T0 + 600 * i)
    saved = h.save_checkpoint()
    assert saved["referenceTimestamp"] == "2026-01-05T00:00:00Z"
    restored = DecayingHistogram(CPU, DAY)
    restored.load_checkpoint(saved)
    assert restored.reference == h.reference
    assert restored.total_weight == h.total_weight
    wanted = (0.5, 0.9, 0.95)
    assert restored.percentiles(wanted) == h.percentiles(wanted)
    # Saving what was loaded gives the same document.
    assert restored.save_checkpoint() == saved


def test_empty_decaying_checkpoint_has_a_null_reference() -> None:
    saved = DecayingHistogram(CPU, DAY).save_checkpoint()
    assert saved == {"referenceTimestamp": None}
    restored = DecayingHistogram(CPU, DAY)
    restored.load_checkpoint(saved)
    assert restored.is_empty() and restored.reference is None


# -- properties ------------------------------------------------------------------------------

samples = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=2000.0, allow_nan=False),
        st.floats(min_value=0.001, max_value=100.0, allow_nan=False),
    ),
    min_size=1,
    max_size=60,
)


@given(samples, st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=6))
@settings(max_examples=200, deadline=None)
def test_percentiles_are_monotone_and_match_one_by_one(
    items: list[tuple[float, float]], ps: list[float]
) -> None:
    h = Histogram(CPU)
    for value, weight in items:
        h.add_sample(value, weight, 0.0)
    together = h.percentiles(ps)
    assert together == [h.percentile(p) for p in ps]
    ordered = sorted(zip(ps, together, strict=True))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(ordered))
    top = CPU.find_bucket(max(v for v, _ in items))
    # p100 is the end of the bucket holding the largest sample (the start of the last one).
    end = CPU.bucket_start(min(top + 1, CPU.num_buckets - 1))
    assert h.percentile(1.0) == end


@given(samples)
@settings(max_examples=100, deadline=None)
def test_checkpoint_round_trip_keeps_percentiles_close(items: list[tuple[float, float]]) -> None:
    h = DecayingHistogram(CPU, DAY)
    for i, (value, weight) in enumerate(items):
        h.add_sample(value, weight, T0 + 60 * i)
    restored = DecayingHistogram(CPU, DAY)
    restored.load_checkpoint(h.save_checkpoint())
    assert math.isclose(restored.total_weight, h.total_weight)
    # Buckets lighter than 1/20000 of the heaviest are dropped; elsewhere weights are
    # rounded to 1/10000 of it, so the cumulative weight below any bucket moves by well under
    # 1%: the restored p-th percentile lies between the original's (p - 1%)-th and
    # (p + 1%)-th, within a bucket or two. (When the cumulative weight sits exactly at p, a
    # rounding can move the percentile to the next non-empty bucket, however far it is.)
    for p in (0.5, 0.9):
        low, high = h.percentile(p - 0.01), h.percentile(p + 0.01)
        after = restored.percentile(p)
        assert low - max(0.11 * low, 0.021) <= after <= high + max(0.11 * high, 0.021)


def test_max_checkpoint_weight_is_upstreams() -> None:
    assert MAX_CHECKPOINT_WEIGHT == 10000
