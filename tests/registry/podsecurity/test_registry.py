"""Which checks a level and version run, in upstream's order."""

from __future__ import annotations

from typing import Any

from inplace.registry.podsecurity import LATEST, LevelVersion, Version, evaluate
from inplace.registry.podsecurity.registry import newest_version

PRIVILEGED_POD: dict[str, Any] = {
    "containers": [
        {
            "name": "app",
            "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
        }
    ],
    "hostNetwork": True,
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
}


def test_restricted_runs_baseline_then_restricted_checks_by_id() -> None:
    result = evaluate(LevelVersion("restricted", LATEST), {}, PRIVILEGED_POD)
    assert result.reasons == (
        "host namespaces",
        "privileged",
        "allowPrivilegeEscalation != false",
        "unrestricted capabilities",
        "restricted volume types",
        "runAsNonRoot != true",
        "seccompProfile",
    )
    assert result.detail() == (
        "host namespaces (hostNetwork), "
        'privileged (container "app" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "app" must set '
        "securityContext.allowPrivilegeEscalation=false), "
        'unrestricted capabilities (container "app" must set securityContext.capabilities.drop='
        '["ALL"]; container "app" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add), "
        'restricted volume types (volume "root" uses restricted volume type "hostPath"), '
        'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")'
    )


def test_baseline_uses_its_own_capability_and_volume_checks() -> None:
    result = evaluate(LevelVersion("baseline", LATEST), {}, PRIVILEGED_POD)
    assert result.reasons == (
        "non-default capabilities",
        "host namespaces",
        "hostPath volumes",
        "privileged",
    )
    assert (
        result.reason() == "non-default capabilities, host namespaces, hostPath volumes, privileged"
    )


def test_privileged_checks_nothing() -> None:
    assert evaluate(LevelVersion("privileged", LATEST), {}, PRIVILEGED_POD).allowed


def test_older_versions_run_the_checks_of_their_time() -> None:
    pod: dict[str, Any] = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {"name": "app", "securityContext": {"allowPrivilegeEscalation": False, "runAsUser": 0}}
        ],
    }
    # v1.21 has no capabilities_restricted and no runAsUser check.
    assert evaluate(LevelVersion("restricted", Version(21)), {}, pod).allowed
    assert evaluate(LevelVersion("restricted", Version(23)), {}, pod).reasons == (
        "unrestricted capabilities",
        "runAsUser=0",
    )
    # Newer than any revision, or latest: the newest.
    assert newest_version() == 32
    assert evaluate(LevelVersion("restricted", Version(99)), {}, pod) == evaluate(
        LevelVersion("restricted", LATEST), {}, pod
    )
