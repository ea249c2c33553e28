"""Namespace labels to a policy: defaults, parse errors, fail closed for enforce and open for
audit and warn."""

from __future__ import annotations

import pytest

from inplace.registry.podsecurity import (
    LATEST,
    LevelVersion,
    Policy,
    Version,
    compare_levels,
    parse_version,
    policy_to_evaluate,
)

DEFAULTS = Policy(LevelVersion("baseline", Version(30)))


def test_unset_labels_are_the_defaults() -> None:
    assert policy_to_evaluate({}, DEFAULTS) == (DEFAULTS, [])
    assert policy_to_evaluate(None, DEFAULTS) == (DEFAULTS, [])


def test_labels_choose_level_and_version_per_mode() -> None:
    policy, errors = policy_to_evaluate(
        {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/warn": "baseline",
            "pod-security.kubernetes.io/warn-version": "v1.29",
            "app": "web",
        },
        DEFAULTS,
    )
    assert errors == []
    assert policy.enforce == LevelVersion("restricted", Version(30))  # the default's version
    assert policy.warn == LevelVersion("baseline", Version(29))
    assert policy.audit == LevelVersion("privileged", LATEST)
    assert str(policy.warn) == "baseline:v1.29"


def test_bad_labels_fail_closed_for_enforce_and_open_for_the_others() -> None:
    policy, errors = policy_to_evaluate(
        {
            "pod-security.kubernetes.io/enforce": "strict",
            "pod-security.kubernetes.io/audit": "paranoid",
            "pod-security.kubernetes.io/warn-version": "1.29",
        },
        Policy(),
    )
    assert policy.enforce.level == "restricted"
    assert policy.audit.level == "privileged"
    assert [error.message() for error in errors] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be '
        "one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "paranoid": must be '
        "one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.29": must '
        'be "latest" or "v1.x"',
    ]


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("latest", LATEST),
        ("v1.0", Version(0)),
        ("v1.33", Version(33)),
        ("v1.033", LATEST),
        ("v2.1", LATEST),
    ],
)
def test_versions(text: str, version: Version) -> None:
    assert parse_version(text)[0] == version


def test_levels_order_by_strictness() -> None:
    assert compare_levels("restricted", "baseline") == 1
    assert compare_levels("privileged", "baseline") == -1
    assert compare_levels("baseline", "baseline") == 0
    assert Version(32).older(LATEST) and not LATEST.older(Version(99))
