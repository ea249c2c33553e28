"""CronJobs: the object, its updates and status, with upstream's paths and messages (the
schedule's own words are robfig/cron's, from :mod:`inplace.api.cron`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.validation import validate_create, validate_status_update, validate_update
from tests.api.validation.builders import (
    CRONJOB,
    create_messages,
    cron_job,
    messages,
    mutate,
    template,
)

VALID: list[Callable[[], dict[str, Any]]] = [
    cron_job,
    lambda: cron_job(schedule="@hourly", timeZone="Europe/Paris", concurrencyPolicy="Forbid"),
    lambda: cron_job(schedule="0 9 * * MON-FRI", startingDeadlineSeconds=0, suspend=True),
    lambda: cron_job(successfulJobsHistoryLimit=0, failedJobsHistoryLimit=0),
    lambda: mutate(cron_job(), lambda c: c["metadata"].update(name="n" * 52)),
]


@pytest.mark.parametrize("build", VALID)
def test_valid_cron_jobs_pass(build: Callable[[], dict[str, Any]]) -> None:
    validate_create(CRONJOB, build())


INVALID: list[tuple[str, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "schedule required",
        lambda: cron_job(schedule=""),
        ["spec.schedule: Required value"],
    ),
    (
        "schedule parsed as robfig/cron does",
        lambda: cron_job(schedule="not a schedule"),
        [
            'spec.schedule: Invalid value: "not a schedule": expected exactly 5 fields, found 3: '
            "[not a schedule]"
        ],
    ),
    (
        "time zone prefix refused on a new schedule",
        lambda: cron_job(schedule="TZ=UTC 0 * * * *"),
        [
            'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in '
            "schedule, use timeZone field instead"
        ],
    ),
    (
        "unknown time zone",
        lambda: cron_job(timeZone="Mars/Olympus_Mons"),
        ['spec.timeZone: Invalid value: "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons'],
    ),
    (
        "time zone with a bad component",
        lambda: cron_job(timeZone="../etc/passwd"),
        ['spec.timeZone: Invalid value: "../etc/passwd": unknown time zone ../etc/passwd'],
    ),
    (
        "Local is no explicit zone",
        lambda: cron_job(timeZone="Local"),
        [
            'spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as '
            "defined in https://www.iana.org/time-zones"
        ],
    ),
    (
        "empty time zone",
        lambda: cron_job(timeZone=""),
        ['spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string'],
    ),
    (
        "counts and policy",
        lambda: cron_job(
            concurrencyPolicy="Sometimes",
            startingDeadlineSeconds=-1,
            successfulJobsHistoryLimit=-2,
            failedJobsHistoryLimit=-3,
        ),
        [
            'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
            '"Forbid", "Replace"',
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.successfulJobsHistoryLimit: Invalid value: -2: must be greater than or equal "
            "to 0",
            "spec.failedJobsHistoryLimit: Invalid value: -3: must be greater than or equal to 0",
        ],
    ),
    (
        "the job template is a Job's spec",
        lambda: cron_job(
            jobTemplate={
                "spec": {
                    "template": template(labels={}, restart="Always"),
                    "parallelism": -1,
                    "manualSelector": True,
                    "selector": {"matchLabels": {"app": "web"}},
                }
            }
        ),
        [
            "spec.jobTemplate.spec.parallelism: Invalid value: -1: must be greater than or equal "
            "to 0",
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "
            '"OnFailure", "Never"',
            'spec.jobTemplate.spec.selector: Invalid value: {"matchLabels":{"app":"web"}}: '
            "`selector` will be auto-generated",
            "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "
            '"nil", "false"',
        ],
    ),
    (
        "a failure policy needs restartPolicy Never",
        lambda: cron_job(
            jobTemplate={
                "spec": {
                    "template": template(labels={}, restart="OnFailure"),
                    "podFailurePolicy": {"rules": []},
                }
            }
        ),
        [
            'spec.jobTemplate.spec.template.spec.restartPolicy: Invalid value: "OnFailure": '
            'only "Never" is supported when podFailurePolicy is specified'
        ],
    ),
    (
        "name leaves room for the Jobs' suffix",
        lambda: mutate(cron_job(), lambda c: c["metadata"].update(name="n" * 53)),
        [f'metadata.name: Invalid value: "{"n" * 53}": must be no more than 52 characters'],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_cron_jobs(build: Callable[[], dict[str, Any]], expected: list[str]) -> None:
    assert sorted(create_messages(CRONJOB, build())) == sorted(expected)


def test_update_keeps_a_stored_time_zone_prefix_and_long_name() -> None:
    """A schedule stored with ``TZ=`` (before v1.27) may keep it, without ``timeZone``; the
    name's length is a create rule."""
    old = mutate(
        cron_job(schedule="CRON_TZ=UTC 0 * * * *"),
        lambda c: c["metadata"].update(name="n" * 60),
    )
    validate_update(CRONJOB, mutate(old, lambda c: c["spec"].update(suspend=True)), old)
    both = mutate(old, lambda c: c["spec"].update(timeZone="UTC"))
    assert messages(lambda: validate_update(CRONJOB, both, old)) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use both timeZone field '
        "and TZ or CRON_TZ in schedule"
    ]


def test_a_changed_schedule_is_parsed_again() -> None:
    old = cron_job()
    new = mutate(old, lambda c: c["spec"].update(schedule="61 * * * *"))
    got = messages(lambda: validate_update(CRONJOB, new, old))
    assert len(got) == 1 and got[0].startswith('spec.schedule: Invalid value: "61 * * * *": ')


def test_status_checks_the_metadata_only() -> None:
    old = cron_job()
    new = mutate(old, lambda c: c.update(status={"active": [{"name": "tick-1"}]}))
    validate_status_update(CRONJOB, new, old)
