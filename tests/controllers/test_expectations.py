"""Expectations: nothing is acted on twice before the informer caught up."""

from __future__ import annotations

from inplace.controllers.expectations import Expectations


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_creations_must_all_be_observed() -> None:
    exp = Expectations(Clock())
    assert exp.satisfied("ns/rs")
    exp.expect_creations("ns/rs", 2)
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert not exp.satisfied("ns/rs") and exp.pending("ns/rs") == (1, 0)
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")  # an extra observation never goes negative
    assert exp.pending("ns/rs") == (0, 0)


def test_deletions_are_counted_once_per_pod() -> None:
    exp = Expectations(Clock())
    exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/rs", "ns/a")
    exp.deletion_observed("ns/rs", "ns/a")  # the final delete after the timestamp update
    exp.deletion_observed("ns/rs", "ns/other")
    assert not exp.satisfied("ns/rs")
    exp.deletion_observed("ns/rs", "ns/b")
    assert exp.satisfied("ns/rs")


def test_skipped_creations_lower_what_is_expected() -> None:
    exp = Expectations(Clock())
    exp.expect_creations("k", 8)
    exp.lower_creations("k", 7)
    exp.creation_observed("k")
    assert exp.satisfied("k")


def test_counted_deletions_and_forgetting() -> None:
    exp = Expectations(Clock())
    exp.expect_deletion_count("k", 1)
    assert not exp.satisfied("k")
    exp.deletion_observed("k")
    assert exp.satisfied("k")
    exp.expect_creations("k", 1)
    exp.forget("k")
    assert exp.satisfied("k")


def test_an_old_record_expires() -> None:
    clock = Clock()
    exp = Expectations(clock, ttl=300)
    exp.expect_creations("k", 1)
    clock.now = 299
    assert not exp.satisfied("k")
    clock.now = 301
    assert exp.satisfied("k")
