"""CronJobs (upstream's ``pkg/apis/batch/validation``): the object, its updates and its
status. Jobs are in :mod:`inplace.registry.validation.workloads`, whose job-spec rules a CronJob's
``jobTemplate`` shares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.cron import ScheduleError, load_location, parse_schedule
from inplace.api.validation.errors import (
    FieldError,
    as_map,
    as_str,
    invalid,
    lookup,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    required,
)
from inplace.api.validation.meta import (
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)
from inplace.registry.validation.workloads import validate_job_spec

__all__ = [
    "CRON_JOB_NAME_MAX_LENGTH",
    "validate_cron_job",
    "validate_cron_job_status_update",
    "validate_cron_job_update",
]

#: A Job's name is the CronJob's plus ``-`` and a 10-digit timestamp, and must be a
#: 63-character DNS-1035 label: 63 - 11.
CRON_JOB_NAME_MAX_LENGTH: Final = 52
_CONCURRENCY_POLICIES: Final = ("Allow", "Forbid", "Replace")
#: Upstream's ``validTimeZoneCharacters``: one component of an IANA name.
_TIME_ZONE_PART: Final = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _validate_schedule(
    errs: list[FieldError], schedule: str, *, tz_allowed: bool, time_zone: object
) -> None:
    """Upstream ``validateScheduleFormat``: robfig/cron's parse, and ``TZ=``/``CRON_TZ=``
    only where the stored schedule already had one (and then not with ``timeZone``)."""
    path = "spec.schedule"
    try:
        parse_schedule(schedule)
    except ScheduleError as err:
        errs.append(invalid(path, schedule, str(err)))
    if tz_allowed and "TZ" in schedule and time_zone is not None:
        errs.append(
            invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule")
        )
    elif not tz_allowed and "TZ" in schedule:
        errs.append(
            invalid(
                path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            )
        )


def _validate_time_zone(errs: list[FieldError], time_zone: object) -> None:
    """Upstream ``validateTimeZone``: an explicit IANA zone Go's ``time.LoadLocation`` finds."""
    path = "spec.timeZone"
    if time_zone is None:
        return
    zone = as_str(errs, time_zone, path)
    if not isinstance(time_zone, str):
        return
    if not zone:
        errs.append(invalid(path, zone, "timeZone must be nil or non-empty string"))
        return
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            errs.append(invalid(path, zone, f"unknown time zone {zone}"))
            return
    if zone.lower() == "local":
        errs.append(
            invalid(
                path,
                zone,
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
            )
        )
    try:
        load_location(zone)
    except ScheduleError as err:
        errs.append(invalid(path, zone, str(err)))


def _validate_job_template(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    """Upstream ``ValidateJobTemplateSpec``: a Job's spec whose selector the controller
    generates."""
    path = "spec.jobTemplate.spec"
    job_spec = as_map(errs, lookup(spec, "jobTemplate", "spec"), path)
    validate_job_spec(errs, job_spec, path)
    if job_spec.get("selector") is not None:
        errs.append(
            invalid(
                f"{path}.selector", job_spec.get("selector"), "`selector` will be auto-generated"
            )
        )
    if job_spec.get("manualSelector") is True:
        errs.append(not_supported(f"{path}.manualSelector", True, ("nil", "false")))


def _validate_cron_job_spec(
    errs: list[FieldError], obj: Mapping[str, Any], old: Mapping[str, Any] | None
) -> None:
    """Upstream ``validateCronJobSpec``."""
    spec = as_map(errs, obj.get("spec"), "spec")
    old_spec = as_map([], old.get("spec"), "spec") if old is not None else None
    schedule = as_str(errs, spec.get("schedule"), "spec.schedule")
    if not schedule:
        errs.append(required("spec.schedule"))
    else:
        old_schedule = old_spec.get("schedule") if old_spec is not None else None
        _validate_schedule(
            errs,
            schedule,
            tz_allowed=isinstance(old_schedule, str) and "TZ" in old_schedule,
            time_zone=spec.get("timeZone"),
        )
    nonnegative(errs, spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        _validate_time_zone(errs, spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(required("spec.concurrencyPolicy"))
    elif policy not in _CONCURRENCY_POLICIES:
        errs.append(not_supported("spec.concurrencyPolicy", policy, _CONCURRENCY_POLICIES))
    _validate_job_template(errs, spec)
    nonnegative(errs, spec.get("successfulJobsHistoryLimit"), "spec.successfulJobsHistoryLimit")
    nonnegative(errs, spec.get("failedJobsHistoryLimit"), "spec.failedJobsHistoryLimit")


def validate_cron_job(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateCronJobCreate``: the spec, and a name short enough for its Jobs'."""
    meta = validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    _validate_cron_job_spec(errs, obj, None)
    name = meta.get("name")
    if isinstance(name, str) and len(name) > CRON_JOB_NAME_MAX_LENGTH:
        errs.append(
            invalid(
                "metadata.name", name, f"must be no more than {CRON_JOB_NAME_MAX_LENGTH} characters"
            )
        )


def validate_cron_job_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateCronJobUpdate``: the name's length is not checked again (an old
    CronJob with a longer name can still be changed or deleted)."""
    validate_object_meta_update(errs, new, old)
    _validate_cron_job_spec(errs, new, old)


def validate_cron_job_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream's CronJob status strategy checks the metadata only."""
    validate_status_metadata(errs, new, old)
