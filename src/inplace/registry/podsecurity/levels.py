"""Pod Security levels, versions and the namespace labels that choose them.

A namespace picks, per mode, a level (``privileged``, ``baseline``, ``restricted``) and the
policy version it was written against (``latest`` or ``v1.N``) with the labels
``pod-security.kubernetes.io/<mode>`` and ``pod-security.kubernetes.io/<mode>-version``.
Unset labels fall back to the server's defaults. A label that does not parse is an error
(refused on a namespace write); what is evaluated meanwhile fails closed for ``enforce``
(``restricted``, ``latest``) and open for ``audit`` and ``warn`` (``privileged``), as
upstream's ``api.PolicyToEvaluate`` does (``k8s.io/pod-security-admission/api``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from inplace.api.validation.errors import FieldError, invalid, key_path

__all__ = [
    "BASELINE",
    "LABEL_PREFIX",
    "LATEST",
    "LEVELS",
    "MODES",
    "PRIVILEGED",
    "RESTRICTED",
    "LevelVersion",
    "Policy",
    "Version",
    "compare_levels",
    "parse_level",
    "parse_version",
    "policy_to_evaluate",
]

Level = Literal["privileged", "baseline", "restricted"]
PRIVILEGED: Final = "privileged"
BASELINE: Final = "baseline"
RESTRICTED: Final = "restricted"
LEVELS: Final[tuple[Level, ...]] = ("privileged", "baseline", "restricted")
MODES: Final = ("enforce", "audit", "warn")
LABEL_PREFIX: Final = "pod-security.kubernetes.io/"
_VERSION_RE: Final = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class Version:
    """``v1.N``, or ``latest`` (newer than any version)."""

    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return "latest" if self.latest else f"v1.{self.minor}"

    def older(self, other: Version) -> bool:
        if self.latest:
            return False
        if other.latest:
            return True
        return self.minor < other.minor


LATEST: Final = Version(latest=True)


@dataclass(frozen=True)
class LevelVersion:
    level: Level
    version: Version = LATEST

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = field(default_factory=lambda: LevelVersion(PRIVILEGED))
    audit: LevelVersion = field(default_factory=lambda: LevelVersion(PRIVILEGED))
    warn: LevelVersion = field(default_factory=lambda: LevelVersion(PRIVILEGED))


def parse_level(text: str) -> tuple[Level, str | None]:
    """The level, or ``restricted`` and upstream's error."""
    for level in LEVELS:
        if text == level:
            return level, None
    return RESTRICTED, "must be one of privileged, baseline, restricted"


def parse_version(text: str) -> tuple[Version, str | None]:
    """The version, or ``latest`` and upstream's error."""
    if text == "latest":
        return LATEST, None
    match = _VERSION_RE.match(text)
    if match is None:
        return LATEST, 'must be "latest" or "v1.x"'
    return Version(int(match.group(1))), None


def compare_levels(a: Level, b: Level) -> int:
    """-1, 0 or 1 as `a` is less strict than, as strict as, or stricter than `b`."""
    return (LEVELS.index(a) > LEVELS.index(b)) - (LEVELS.index(a) < LEVELS.index(b))


def policy_to_evaluate(
    labels: Mapping[str, str] | None, defaults: Policy
) -> tuple[Policy, list[FieldError]]:
    """Upstream ``PolicyToEvaluate``: always a usable policy, plus the label errors."""
    errors: list[FieldError] = []
    modes = {"enforce": defaults.enforce, "audit": defaults.audit, "warn": defaults.warn}
    for mode in MODES:
        level, version = modes[mode].level, modes[mode].version
        level_label = LABEL_PREFIX + mode
        if labels and level_label in labels:
            value = labels[level_label]
            level, error = parse_level(value)
            if error is not None:
                errors.append(invalid(key_path("metadata.labels", level_label), value, error))
                if mode != "enforce":
                    level = PRIVILEGED  # fail open for audit and warn
        version_label = f"{LABEL_PREFIX}{mode}-version"
        if labels and version_label in labels:
            value = labels[version_label]
            version, error = parse_version(value)
            if error is not None:
                errors.append(invalid(key_path("metadata.labels", version_label), value, error))
        modes[mode] = LevelVersion(level, version)
    return Policy(modes["enforce"], modes["audit"], modes["warn"]), errors
