"""Each Pod Security check, as a table: what passes, and upstream's reason and detail for what
does not."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.registry.podsecurity import checks as c
from inplace.registry.podsecurity.checks import CheckFn, CheckResult


def spec(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"containers": list(containers) or [{"name": "app"}], **fields}


def ctr(name: str = "app", **security: Any) -> dict[str, Any]:
    return {"name": name, "securityContext": security} if security else {"name": name}


OK = CheckResult(True)

CASES: list[tuple[str, CheckFn, dict[str, Any], dict[str, Any], CheckResult]] = [
    # baseline
    (
        "privileged",
        c.privileged,
        {},
        spec(ctr(privileged=True), ctr("b", privileged=False)),
        CheckResult(
            False, "privileged", 'container "app" must not set securityContext.privileged=true'
        ),
    ),
    (
        "privileged, init first",
        c.privileged,
        {},
        spec(ctr("main", privileged=True), initContainers=[ctr("init", privileged=True)]),
        CheckResult(
            False,
            "privileged",
            'containers "init", "main" must not set securityContext.privileged=true',
        ),
    ),
    (
        "host namespaces sorted",
        c.host_namespaces,
        {},
        spec(hostPID=True, hostNetwork=True),
        CheckResult(False, "host namespaces", "hostNetwork, hostPID"),
    ),
    ("no host namespaces", c.host_namespaces, {}, spec(hostIPC=False), OK),
    (
        "hostPath volumes",
        c.host_path_volumes,
        {},
        spec(
            volumes=[{"name": "root", "hostPath": {"path": "/"}}, {"name": "tmp", "emptyDir": {}}]
        ),
        CheckResult(False, "hostPath volumes", 'volume "root"'),
    ),
    (
        "host ports",
        c.host_ports,
        {},
        spec(
            {
                "name": "web",
                "ports": [
                    {"containerPort": 80, "hostPort": 8080},
                    {"containerPort": 9, "hostPort": 80},
                ],
            }
        ),
        CheckResult(False, "hostPort", 'container "web" uses hostPorts 80, 8080'),
    ),
    (
        "host port zero is none",
        c.host_ports,
        {},
        spec({"name": "web", "ports": [{"containerPort": 80, "hostPort": 0}]}),
        OK,
    ),
    (
        "default capabilities may be added",
        c.capabilities_baseline,
        {},
        spec(ctr(capabilities={"add": ["CHOWN", "KILL"]})),
        OK,
    ),
    (
        "others may not",
        c.capabilities_baseline,
        {},
        spec(ctr(capabilities={"add": ["SYS_ADMIN", "NET_RAW", "KILL"]})),
        CheckResult(
            False,
            "non-default capabilities",
            'container "app" must not include "NET_RAW", "SYS_ADMIN" in '
            "securityContext.capabilities.add",
        ),
    ),
    (
        "procMount",
        c.proc_mount,
        {},
        spec(ctr(procMount="Unmasked"), ctr("b", procMount="Default")),
        CheckResult(
            False,
            "procMount",
            'container "app" must not set securityContext.procMount to "Unmasked"',
        ),
    ),
    (
        "seLinux type",
        c.se_linux_options,
        {},
        spec(
            ctr(seLinuxOptions={"type": "spc_t", "user": "root"}),
            securityContext={"seLinuxOptions": {"type": "container_t"}},
        ),
        CheckResult(
            False,
            "seLinuxOptions",
            'container "app" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may '
            "not be set",
        ),
    ),
    (
        "seLinux allowed types",
        c.se_linux_options,
        {},
        spec(ctr(seLinuxOptions={"type": "container_init_t", "level": "s0"})),
        OK,
    ),
    (
        "seccomp unconfined (baseline)",
        c.seccomp_profile_baseline_1_19,
        {},
        spec(
            ctr(seccompProfile={"type": "Unconfined"}),
            securityContext={"seccompProfile": {"type": "Unconfined"}},
        ),
        CheckResult(
            False,
            "seccompProfile",
            'pod and container "app" must not set securityContext.seccompProfile.type to '
            '"Unconfined"',
        ),
    ),
    ("seccomp unset is fine for baseline", c.seccomp_profile_baseline_1_19, {}, spec(), OK),
    (
        "seccomp annotations before v1.19",
        c.seccomp_profile_baseline_1_0,
        {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}},
        spec(),
        CheckResult(
            False,
            "seccompProfile",
            'forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined"',
        ),
    ),
    (
        "sysctls",
        c.sysctls(c.SYSCTLS_1_32),
        {},
        spec(
            securityContext={
                "sysctls": [
                    {"name": "kernel.msgmax", "value": "1"},
                    {"name": "net.ipv4.tcp_rmem", "value": "1"},
                    {"name": "vm.swappiness", "value": "1"},
                ]
            }
        ),
        CheckResult(False, "forbidden sysctls", "kernel.msgmax, vm.swappiness"),
    ),
    (
        "tcp_rmem before v1.32",
        c.sysctls(c.SYSCTLS_1_29),
        {},
        spec(securityContext={"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}]}),
        CheckResult(False, "forbidden sysctls", "net.ipv4.tcp_rmem"),
    ),
    (
        "AppArmor unconfined",
        c.app_armor_profile,
        {"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}},
        spec(securityContext={"appArmorProfile": {"type": "Unconfined"}}),
        CheckResult(
            False,
            "forbidden AppArmor profiles",
            'pod and annotation must not set AppArmor profile type to "Unconfined", '
            '"container.apparmor.security.beta.kubernetes.io/app="unconfined""',
        ),
    ),
    (
        "AppArmor runtime default",
        c.app_armor_profile,
        {},
        spec(ctr(appArmorProfile={"type": "RuntimeDefault"})),
        OK,
    ),
    (
        "Windows host process",
        c.windows_host_process,
        {},
        spec(
            ctr(windowsOptions={"hostProcess": True}),
            securityContext={"windowsOptions": {"hostProcess": True}},
        ),
        CheckResult(
            False,
            "hostProcess",
            'pod and container "app" must not set securityContext.windowsOptions.hostProcess=true',
        ),
    ),
    # restricted
    (
        "allowPrivilegeEscalation unset",
        c.allow_privilege_escalation_1_8,
        {},
        spec(ctr(), ctr("b", allowPrivilegeEscalation=False)),
        CheckResult(
            False,
            "allowPrivilegeEscalation != false",
            'container "app" must set securityContext.allowPrivilegeEscalation=false',
        ),
    ),
    (
        "Windows pods need not",
        c.unless_windows(c.allow_privilege_escalation_1_8),
        {},
        spec(ctr(), os={"name": "windows"}),
        OK,
    ),
    (
        "capabilities: drop ALL, add only NET_BIND_SERVICE",
        c.capabilities_restricted_1_22,
        {},
        spec(
            ctr(),
            ctr("b", capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "CHOWN"]}),
            ctr("c", capabilities={"drop": ["ALL"]}),
        ),
        CheckResult(
            False,
            "unrestricted capabilities",
            'container "app" must set securityContext.capabilities.drop=["ALL"]; container "b" '
            'must not include "CHOWN" in securityContext.capabilities.add',
        ),
    ),
    (
        "restricted volumes",
        c.restricted_volumes,
        {},
        spec(
            volumes=[
                {"name": "a", "hostPath": {"path": "/x"}},
                {"name": "b", "nfs": {}},
                {"name": "c", "configMap": {"name": "x"}},
                {"name": "d"},
            ]
        ),
        CheckResult(
            False,
            "restricted volume types",
            'volumes "a", "b", "d" use restricted volume types "hostPath", "nfs", "unknown"',
        ),
    ),
    (
        "runAsNonRoot on the pod covers containers",
        c.run_as_non_root,
        {},
        spec(ctr(), securityContext={"runAsNonRoot": True}),
        OK,
    ),
    (
        "runAsNonRoot missing",
        c.run_as_non_root,
        {},
        spec(ctr(), ctr("b", runAsNonRoot=True)),
        CheckResult(
            False,
            "runAsNonRoot != true",
            'pod or container "app" must set securityContext.runAsNonRoot=true',
        ),
    ),
    (
        "runAsNonRoot false wins",
        c.run_as_non_root,
        {},
        spec(ctr(runAsNonRoot=False), securityContext={"runAsNonRoot": True}),
        CheckResult(
            False,
            "runAsNonRoot != true",
            'container "app" must not set securityContext.runAsNonRoot=false',
        ),
    ),
    (
        "runAsUser 0",
        c.run_as_user,
        {},
        spec(ctr(runAsUser=0), securityContext={"runAsUser": 0}),
        CheckResult(False, "runAsUser=0", 'pod and container "app" must not set runAsUser=0'),
    ),
    ("runAsUser 65534", c.run_as_user, {}, spec(ctr(runAsUser=65534)), OK),
    (
        "seccomp required (restricted)",
        c.seccomp_profile_restricted_1_19,
        {},
        spec(ctr(), ctr("b", seccompProfile={"type": "RuntimeDefault"})),
        CheckResult(
            False,
            "seccompProfile",
            'pod or container "app" must set securityContext.seccompProfile.type to '
            '"RuntimeDefault" or "Localhost"',
        ),
    ),
    (
        "seccomp on the pod covers containers",
        c.seccomp_profile_restricted_1_19,
        {},
        spec(
            ctr(),
            securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}},
        ),
        OK,
    ),
]


@pytest.mark.parametrize(
    ("check", "meta", "pod_spec", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_check(
    check: CheckFn, meta: dict[str, Any], pod_spec: dict[str, Any], expected: CheckResult
) -> None:
    assert check(meta, pod_spec) == expected


def test_checks_never_crash_on_odd_json() -> None:
    """Validation runs first, but a check must still read anything without raising."""
    odd: dict[str, Any] = {
        "containers": ["x", {"name": 3, "securityContext": "no"}],
        "securityContext": [],
        "volumes": [None],
    }
    for case in CASES:
        case[1]({"annotations": None}, odd)
