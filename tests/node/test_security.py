"""Who a container runs as: upstream's precedence, containerd's capabilities, runAsNonRoot."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.node.security import (
    CAPABILITIES,
    DEFAULT_CAPABILITIES,
    ConfigError,
    capability_sets,
    effective_context,
    resolve_security,
)

EVERY = tuple(range(41))


class Users:
    """/etc/passwd and /etc/group of a made-up image."""

    def primary_gid(self, uid: int) -> int | None:
        return {0: 0, 65534: 65534, 1000: 1000}.get(uid)

    def groups_of(self, uid: int) -> list[int]:
        return {1000: [27, 100]}.get(uid, [])


def pod(pod_sc: dict[str, Any] | None = None, sc: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
        "spec": {
            "securityContext": pod_sc or {},
            "containers": [{"name": "main", "securityContext": sc or {}}],
        },
    }


def resolve(pod_sc: dict[str, Any] | None = None, sc: dict[str, Any] | None = None) -> Any:
    p = pod(pod_sc, sc)
    return resolve_security(p, p["spec"]["containers"][0], Users(), available=EVERY)


def test_default_set_is_containerds() -> None:
    mask = sum(1 << CAPABILITIES[name] for name in DEFAULT_CAPABILITIES)
    assert mask == 0xA80425FB


@pytest.mark.parametrize(
    ("pod_sc", "sc", "expected"),
    [
        ({"runAsUser": 1}, {"runAsUser": 2}, {"runAsUser": 2}),
        ({"runAsUser": 1, "runAsNonRoot": True}, {}, {"runAsUser": 1, "runAsNonRoot": True}),
        ({"runAsGroup": 5, "fsGroup": 7}, {}, {"runAsGroup": 5}),  # fsGroup stays pod-level
        (
            {"seccompProfile": {"type": "RuntimeDefault"}},
            {"seccompProfile": {"type": "Unconfined"}},
            {"seccompProfile": {"type": "Unconfined"}},
        ),
        ({"supplementalGroups": [1]}, {"privileged": True}, {"privileged": True}),
    ],
)
def test_container_context_wins(
    pod_sc: dict[str, Any], sc: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert effective_context(pod_sc, sc) == expected


@pytest.mark.parametrize(
    ("pod_sc", "sc", "uid", "gid", "groups"),
    [
        ({}, {}, 0, 0, (0,)),
        ({"runAsUser": 65534}, {}, 65534, 65534, (65534,)),
        ({"runAsUser": 4242}, {}, 4242, 0, (0,)),  # unknown user: gid 0, as containerd
        ({"runAsUser": 1000}, {"runAsGroup": 5}, 1000, 5, (5, 27, 100)),
        (
            {"runAsUser": 1000, "fsGroup": 2000, "supplementalGroups": [3000, 27]},
            {},
            1000,
            1000,
            (1000, 27, 100, 2000, 3000),
        ),
    ],
)
def test_identity(
    pod_sc: dict[str, Any], sc: dict[str, Any], uid: int, gid: int, groups: tuple[int, ...]
) -> None:
    sec = resolve(pod_sc, sc)
    assert (sec.uid, sec.gid, sec.groups) == (uid, gid, groups)


@pytest.mark.parametrize(
    ("pod_sc", "sc", "message"),
    [
        (
            {"runAsNonRoot": True},
            {},
            'container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", '
            "container: main)",
        ),
        (
            {"runAsNonRoot": True},
            {"runAsUser": 0},
            'container\'s runAsUser breaks non-root policy (pod: "web_ns(u1)", container: main)',
        ),
        (
            {},
            {"runAsNonRoot": True, "readOnlyRootFilesystem": False},
            'container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", '
            "container: main)",
        ),
        (
            {},
            {"capabilities": {"add": ["WARP_DRIVE"]}},
            'unknown capability "WARP_DRIVE" in securityContext.capabilities.add',
        ),
        (
            {},
            {"seccompProfile": {"type": "Localhost"}},
            "seccompProfile type Localhost needs localhostProfile",
        ),
    ],
)
def test_refused(pod_sc: dict[str, Any], sc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(pod_sc, sc)
    assert str(info.value) == message


def test_read_only_root_filesystem_is_honoured_by_the_containers_root() -> None:
    assert resolve(sc={"readOnlyRootFilesystem": True}).read_only_root is True
    assert resolve(pod_sc={}, sc={}).read_only_root is False


def test_run_as_non_root_with_a_user_runs() -> None:
    assert resolve({"runAsNonRoot": True, "runAsUser": 65534}).uid == 65534


def _mask(caps: tuple[int, ...]) -> int:
    return sum(1 << c for c in caps)


@pytest.mark.parametrize(
    ("capabilities", "privileged", "available", "expected"),
    [
        (None, False, EVERY, 0xA80425FB),
        ({"drop": ["ALL"]}, False, EVERY, 0),
        ({"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}, False, EVERY, 1 << 10),
        (
            {"add": ["SYS_ADMIN"], "drop": ["NET_RAW", "cap_kill"]},
            False,
            EVERY,
            (0xA80425FB | 1 << 21) & ~(1 << 13) & ~(1 << 5),
        ),
        ({"add": ["ALL"], "drop": ["CHOWN"]}, False, EVERY, (1 << 41) - 2),
        (None, True, EVERY, (1 << 41) - 1),
        ({"drop": ["ALL"]}, True, (0, 1, 40), 1 | 2 | 1 << 40),  # privileged ignores drop
    ],
)
def test_capability_sets(
    capabilities: dict[str, Any] | None,
    privileged: bool,
    available: tuple[int, ...],
    expected: int,
) -> None:
    sets = capability_sets(capabilities, privileged=privileged, available=available)
    assert _mask(sets.bounding) == _mask(sets.effective) == _mask(sets.permitted) == expected
    assert sets.inheritable == sets.ambient == ()


def test_a_capability_the_agent_lacks_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not hold it"):
        capability_sets({"add": ["SYS_ADMIN"]}, privileged=False, available=range(21))


@pytest.mark.parametrize(
    ("sc", "no_new_privs", "seccomp"),
    [
        ({}, False, "Unconfined"),
        ({"allowPrivilegeEscalation": True}, False, "Unconfined"),
        ({"allowPrivilegeEscalation": False}, True, "Unconfined"),
        ({"seccompProfile": {"type": "RuntimeDefault"}}, False, "RuntimeDefault"),
        ({"seccompProfile": {"type": "RuntimeDefault"}, "privileged": True}, False, "Unconfined"),
        (
            {"seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"}},
            False,
            "Localhost",
        ),
    ],
)
def test_no_new_privs_and_seccomp(sc: dict[str, Any], no_new_privs: bool, seccomp: str) -> None:
    sec = resolve({}, sc)
    assert sec.no_new_privs is no_new_privs
    assert sec.seccomp.kind == seccomp
