"""The Pod Security Standards as data and pure functions (upstream's
``k8s.io/pod-security-admission`` ``api`` and ``policy`` packages): levels, versions and the
namespace labels that choose them (:mod:`.levels`), the checks with upstream's messages
(:mod:`.checks`), and which checks a level and version run (:mod:`.registry`).

The admission plugin that applies them to API writes is
:mod:`inplace.apiserver.podsecurity`.
"""

from __future__ import annotations

from inplace.registry.podsecurity.levels import (
    BASELINE,
    LABEL_PREFIX,
    LATEST,
    LEVELS,
    MODES,
    PRIVILEGED,
    RESTRICTED,
    LevelVersion,
    Policy,
    Version,
    compare_levels,
    parse_level,
    parse_version,
    policy_to_evaluate,
)
from inplace.registry.podsecurity.registry import Aggregate, evaluate

__all__ = [
    "BASELINE",
    "LABEL_PREFIX",
    "LATEST",
    "LEVELS",
    "MODES",
    "PRIVILEGED",
    "RESTRICTED",
    "Aggregate",
    "LevelVersion",
    "Policy",
    "Version",
    "compare_levels",
    "evaluate",
    "parse_level",
    "parse_version",
    "policy_to_evaluate",
]
