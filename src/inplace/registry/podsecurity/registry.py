"""Which checks a level and version run, in upstream's order, and their aggregate verdict.

Upstream's ``policy/registry.go`` (v1.33): a check belongs to ``baseline`` or ``restricted``
and has revisions from a minimum policy version on; ``restricted`` runs the baseline checks
too, except those a restricted check replaces at that version (``capabilities_baseline``,
``hostPathVolumes`` and ``seccompProfile_baseline`` by their stricter forms). Results are in
check-ID order, baseline first, which is the order of the reasons in a message
(``privileged (...), allowPrivilegeEscalation != false (...)``). A version newer than the
newest revision (and ``latest``) evaluates as the newest. ``privileged`` checks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from inplace.registry.podsecurity import checks as c
from inplace.registry.podsecurity.checks import CheckFn, CheckResult
from inplace.registry.podsecurity.levels import (
    BASELINE,
    PRIVILEGED,
    RESTRICTED,
    LevelVersion,
    Version,
)

__all__ = ["CHECKS", "Aggregate", "Check", "evaluate", "newest_version"]


@dataclass(frozen=True)
class Check:
    """One check: its ID, level, revisions (minimum version, function) in increasing order,
    and the baseline checks it replaces at the restricted level."""

    id: str
    level: str
    versions: tuple[tuple[int, CheckFn], ...]
    overrides: tuple[str, ...] = ()

    def at(self, minor: int) -> CheckFn | None:
        """The revision in force at ``v1.minor``, if the check exists yet."""
        found = None
        for since, fn in self.versions:
            if since <= minor:
                found = fn
        return found


CHECKS: Final[tuple[Check, ...]] = (
    Check("appArmorProfile", BASELINE, ((0, c.app_armor_profile),)),
    Check("capabilities_baseline", BASELINE, ((0, c.capabilities_baseline),)),
    Check("hostNamespaces", BASELINE, ((0, c.host_namespaces),)),
    Check("hostPathVolumes", BASELINE, ((0, c.host_path_volumes),)),
    Check("hostPorts", BASELINE, ((0, c.host_ports),)),
    Check("privileged", BASELINE, ((0, c.privileged),)),
    Check("procMount", BASELINE, ((0, c.proc_mount),)),
    Check("seLinuxOptions", BASELINE, ((0, c.se_linux_options),)),
    Check(
        "seccompProfile_baseline",
        BASELINE,
        ((0, c.seccomp_profile_baseline_1_0), (19, c.seccomp_profile_baseline_1_19)),
    ),
    Check(
        "sysctls",
        BASELINE,
        (
            (0, c.sysctls(c.SYSCTLS_1_0)),
            (27, c.sysctls(c.SYSCTLS_1_27)),
            (29, c.sysctls(c.SYSCTLS_1_29)),
            (32, c.sysctls(c.SYSCTLS_1_32)),
        ),
    ),
    Check("windowsHostProcess", BASELINE, ((0, c.windows_host_process),)),
    Check(
        "allowPrivilegeEscalation",
        RESTRICTED,
        (
            (8, c.allow_privilege_escalation_1_8),
            (25, c.unless_windows(c.allow_privilege_escalation_1_8)),
        ),
    ),
    Check(
        "capabilities_restricted",
        RESTRICTED,
        (
            (22, c.capabilities_restricted_1_22),
            (25, c.unless_windows(c.capabilities_restricted_1_22)),
        ),
        overrides=("capabilities_baseline",),
    ),
    Check(
        "restrictedVolumes",
        RESTRICTED,
        ((0, c.restricted_volumes),),
        overrides=("hostPathVolumes",),
    ),
    Check("runAsNonRoot", RESTRICTED, ((0, c.run_as_non_root),)),
    Check("runAsUser", RESTRICTED, ((23, c.run_as_user),)),
    Check(
        "seccompProfile_restricted",
        RESTRICTED,
        (
            (19, c.seccomp_profile_restricted_1_19),
            (25, c.unless_windows(c.seccomp_profile_restricted_1_19)),
        ),
        overrides=("seccompProfile_baseline",),
    ),
)


def newest_version() -> int:
    """The newest minor version any check has a revision for; ``latest`` evaluates as it."""
    return max(since for check in CHECKS for since, _ in check.versions)


@cache
def _checks_for(level: str, minor: int) -> tuple[CheckFn, ...]:
    """The functions a level runs at ``v1.minor``, baseline IDs first, each group sorted."""
    baseline = sorted((ch for ch in CHECKS if ch.level == BASELINE), key=lambda ch: ch.id)
    restricted = sorted((ch for ch in CHECKS if ch.level == RESTRICTED), key=lambda ch: ch.id)
    chosen: list[CheckFn] = []
    overridden: set[str] = set()
    if level == RESTRICTED:
        for check in restricted:
            if check.at(minor) is not None:
                overridden.update(check.overrides)
    for check in baseline:
        fn = check.at(minor)
        if fn is not None and check.id not in overridden:
            chosen.append(fn)
    if level == RESTRICTED:
        chosen.extend(fn for check in restricted if (fn := check.at(minor)) is not None)
    return tuple(chosen)


@dataclass(frozen=True)
class Aggregate:
    """Upstream ``AggregateCheckResult``: the reasons and details of the failed checks."""

    reasons: tuple[str, ...]
    details: tuple[str, ...]

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def reason(self) -> str:
        """``host ports, privileged`` (namespace-wide warnings)."""
        return ", ".join(self.reasons)

    def detail(self) -> str:
        """``host ports (8080), privileged (container "a" must not ...)`` (one object)."""
        return ", ".join(
            f"{reason} ({detail})" if detail else reason
            for reason, detail in zip(self.reasons, self.details, strict=True)
        )


def evaluate(policy: LevelVersion, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Aggregate:
    """Every check `policy` runs on a pod's metadata and spec, aggregated."""
    if policy.level == PRIVILEGED:
        return Aggregate((), ())
    version: Version = policy.version
    newest = newest_version()
    minor = newest if version.latest or version.minor > newest else version.minor
    results: list[CheckResult] = [fn(meta, spec) for fn in _checks_for(policy.level, minor)]
    failed = [r for r in results if not r.allowed]
    return Aggregate(
        tuple(r.reason or "unknown forbidden reason" for r in failed),
        tuple(r.detail for r in failed),
    )
