"""A container's environment as kubelet builds it: envFrom, env values with $(VAR)
expansion, and every valueFrom, with kubelet's errors; then what the runtime adds: containerd's
PATH and HOSTNAME, runc's HOME from the passwd the container sees."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from inplace.api.quantity import Format, Quantity
from inplace.node.env import (
    EnvError,
    PodAddresses,
    api_server_env,
    container_env,
    expand,
    expand_command,
    kubernetes_service_env,
    pod_hostname,
    runtime_env,
)
from inplace.node.shim.enter import passwd_home, prepare_env


class Objects:
    def __init__(self, **objects: dict[str, Any]) -> None:
        self.objects = objects
        self.reads: list[tuple[str, str, str]] = []

    async def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads.append((resource, namespace, name))
        return self.objects.get(f"{resource}/{namespace}/{name}")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


OBJECTS = Objects(
    **{
        "configmaps/shop/cfg": {"data": {"GREETING": "hello", "MODE": "fast", "bad=key": "x"}},
        "secrets/shop/creds": {"data": {"PASSWORD": b64("s3cret"), "USER": b64("admin")}},
    }
)
ALLOCATABLE = {
    "cpu": Quantity.from_milli(2000),
    "memory": Quantity.from_int(4 << 30, Format.BINARY_SI),
}


def pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "uid": "u-1",
            "labels": {"app": "web"},
            "annotations": {"team": "a"},
        },
        "spec": {
            "nodeName": "node-1",
            "serviceAccountName": "robot",
            "containers": list(containers),
        },
    }


def container(**fields: Any) -> dict[str, Any]:
    return {
        "name": "main",
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
        **fields,
    }


async def env_of(c: dict[str, Any], objects: Objects | None = OBJECTS) -> dict[str, str]:
    result = await container_env(
        pod(c),
        c,
        objects=objects,
        node_allocatable=ALLOCATABLE,
        addresses=PodAddresses(["10.0.0.2"], ["10.0.0.3", "fd00::3"]),
    )
    return result


async def env_error(c: dict[str, Any], objects: Objects | None = OBJECTS) -> str:
    with pytest.raises(EnvError) as info:
        await env_of(c, objects)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("plain", "plain"),
        ("$(A)-$(B)", "1-two"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("$(A", "$(A"),
        ("$A", "$A"),
        ("cost: 5$", "cost: 5$"),
        ("$(A)$(A)", "11"),
    ],
)
def test_expand(text: str, expanded: str) -> None:
    assert expand(text, {"A": "1"}, {"B": "two"}) == expanded


def test_command_and_args_expand_from_kubelets_env() -> None:
    """kubelet's ExpandContainerCommandAndArgs: command, then args, each word expanded."""
    container = {
        "command": ["$(TOOL)", "run"],
        "args": ["--namespace=$(POD_NAMESPACE)", "--id=$(POD_NAME)", "$$(POD_NAME)", "$(PATH)"],
    }
    env = {"TOOL": "inplace", "POD_NAMESPACE": "ops", "POD_NAME": "op-1"}
    assert expand_command(container, env) == [
        "inplace",
        "run",
        "--namespace=ops",
        "--id=op-1",
        "$(POD_NAME)",
        "$(PATH)",  # the runtime's PATH is not kubelet's to expand
    ]
    assert expand_command({"args": ["only"]}, {}) == ["only"]


async def test_env_from_then_env_overrides_and_expands() -> None:
    c = container(
        envFrom=[
            {"configMapRef": {"name": "cfg"}},
            {"secretRef": {"name": "creds"}, "prefix": "DB_"},
            {"configMapRef": {"name": "absent", "optional": True}},
        ],
        env=[
            {"name": "MODE", "value": "slow"},
            {"name": "URL", "value": "https://$(DB_USER):$(DB_PASSWORD)@db/$(MODE)"},
        ],
    )
    assert await env_of(c) == {
        "GREETING": "hello",
        "MODE": "slow",
        "DB_PASSWORD": "s3cret",
        "DB_USER": "admin",
        "URL": "https://admin:s3cret@db/slow",
    }


async def test_key_references() -> None:
    c = container(
        env=[
            {"name": "G", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "GREETING"}}},
            {"name": "P", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
            {
                "name": "OPT",
                "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope", "optional": True}},
            },
            {
                "name": "GONE",
                "valueFrom": {"configMapKeyRef": {"name": "x", "key": "k", "optional": True}},
            },
        ]
    )
    assert await env_of(c) == {"G": "hello", "P": "s3cret"}


@pytest.mark.parametrize(
    ("value_from", "message"),
    [
        ({"configMapKeyRef": {"name": "missing", "key": "k"}}, 'configmap "missing" not found'),
        ({"secretKeyRef": {"name": "missing", "key": "k"}}, 'secret "missing" not found'),
        (
            {"configMapKeyRef": {"name": "cfg", "key": "absent"}},
            "couldn't find key absent in ConfigMap shop/cfg",
        ),
        (
            {"secretKeyRef": {"name": "creds", "key": "absent"}},
            "couldn't find key absent in Secret shop/creds",
        ),
        ({"fieldRef": {"fieldPath": "metadata.labels"}}, "unsupported fieldPath: metadata.labels"),
        ({"fieldRef": {"fieldPath": "spec.hostname"}}, "unsupported fieldPath: spec.hostname"),
    ],
)
async def test_reference_errors_are_kubelets(value_from: dict[str, Any], message: str) -> None:
    assert await env_error(container(env=[{"name": "X", "valueFrom": value_from}])) == message


async def test_env_from_errors() -> None:
    c = container(envFrom=[{"secretRef": {"name": "missing"}}])
    assert await env_error(c) == 'secret "missing" not found'
    c = container(envFrom=[{"configMapRef": {"name": "cfg"}}])
    assert await env_error(c, objects=None) == (
        "couldn't get configMap shop/cfg, no kubeClient defined"
    )


async def test_field_references() -> None:
    paths = [
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "metadata.labels['app']",
        "metadata.annotations['team']",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    ]
    c = container(
        env=[
            {"name": f"F{i}", "valueFrom": {"fieldRef": {"fieldPath": p}}}
            for i, p in enumerate(paths)
        ]
    )
    assert list((await env_of(c)).values()) == [
        "web",
        "shop",
        "u-1",
        "web",
        "a",
        "node-1",
        "robot",
        "10.0.0.2",
        "10.0.0.2",
        "10.0.0.3",
        "10.0.0.3,fd00::3",
    ]


@pytest.mark.parametrize(
    ("ref", "value"),
    [
        ({"resource": "requests.cpu"}, "1"),  # 250m rounds up to 1 core
        ({"resource": "requests.cpu", "divisor": "1m"}, "250"),
        ({"resource": "limits.cpu", "divisor": "1m"}, "1000"),
        ({"resource": "requests.memory", "divisor": "1Mi"}, "64"),
        ({"resource": "requests.memory"}, str(64 << 20)),
        ({"resource": "limits.memory", "divisor": "1Gi"}, "4"),  # unset: node allocatable
    ],
)
async def test_resource_references(ref: dict[str, Any], value: str) -> None:
    c = container(env=[{"name": "R", "valueFrom": {"resourceFieldRef": ref}}])
    assert await env_of(c) == {"R": value}


async def test_lenient_skips_what_does_not_resolve() -> None:
    c = container(
        env=[
            {"name": "A", "value": "1"},
            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "missing", "key": "k"}}},
        ]
    )
    env = await container_env(
        pod(c), c, objects=OBJECTS, node_allocatable=ALLOCATABLE, lenient=True
    )
    assert env == {"A": "1"}  # kubelet's alone: what subPathExpr expands with


async def test_the_kubernetes_service_variables_name_the_api_server_under_the_containers() -> None:
    services = api_server_env("https://127.0.0.1:6443")
    assert services == kubernetes_service_env("127.0.0.1", 6443)
    assert services == {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "6443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "6443",
        "KUBERNETES_PORT": "tcp://127.0.0.1:6443",
        "KUBERNETES_PORT_6443_TCP": "tcp://127.0.0.1:6443",
        "KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_6443_TCP_PORT": "6443",
        "KUBERNETES_PORT_6443_TCP_ADDR": "127.0.0.1",
    }
    c = container(
        env=[
            {"name": "KUBERNETES_SERVICE_PORT", "value": "1"},
            {
                "name": "URL",
                "value": "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
            },
        ]
    )
    env = await container_env(
        pod(c), c, objects=OBJECTS, node_allocatable=ALLOCATABLE, service_env=services
    )
    assert env["KUBERNETES_SERVICE_PORT"] == "1"
    assert env["URL"] == "https://127.0.0.1:1"
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert api_server_env("https://[::1]:6443")["KUBERNETES_PORT"] == "tcp://[::1]:6443"


# -- what the runtime adds --------------------------------------------------------------------


async def test_the_runtime_adds_path_and_hostname_under_kubelets_env() -> None:
    """containerd's CRI: the default PATH, then HOSTNAME, then the image's variables (none
    here), then kubelet's, each replacing what came before."""
    c = container(env=[{"name": "A", "value": "1"}])
    env = runtime_env(
        pod(c), await container_env(pod(c), c, objects=OBJECTS, node_allocatable=ALLOCATABLE)
    )
    assert env == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOSTNAME": "web",
        "A": "1",
    }
    own = container(
        env=[
            {"name": "PATH", "value": "/opt/bin"},
            {"name": "HOSTNAME", "value": "mine"},
            {"name": "HOME", "value": "/data"},
        ]
    )
    kubelets = await container_env(pod(own), own, objects=OBJECTS, node_allocatable=ALLOCATABLE)
    assert runtime_env(pod(own), kubelets) == {
        "PATH": "/opt/bin",
        "HOSTNAME": "mine",
        "HOME": "/data",
    }


def named(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "shop"}, "spec": spec}


@pytest.mark.parametrize(
    ("the_pod", "hostname"),
    [
        (named("web"), "web"),
        (named("seq-abcde", hostname="seq-3"), "seq-3"),  # an Indexed Job's JOB-INDEX
        (named("web", hostname="h", hostnameOverride="over.ride"), "over.ride"),
        (named("x" * 62 + "-y" + "z" * 10), "x" * 62),  # 63 characters, no trailing "-"
        (named("web", hostname="h", subdomain="sub"), "h"),
        (
            named("web", hostname="h", subdomain="sub", setHostnameAsFQDN=True),
            "h.sub.shop.svc.cluster.local",
        ),
        (named("web", hostNetwork=True, hostname="h"), "the-host"),
    ],
)
def test_hostname_is_the_sandboxes(the_pod: dict[str, Any], hostname: str) -> None:
    """kubelet's hostname for the sandbox, which containerd exports as HOSTNAME; a
    hostNetwork pod's sandbox has none and containerd gives the host's."""
    assert pod_hostname(the_pod, host_hostname="the-host") == hostname


def test_a_fqdn_hostname_too_long_is_kubelets_error() -> None:
    long = named("web", hostname="h" * 40, subdomain="sub", setHostnameAsFQDN=True)
    with pytest.raises(EnvError, match=r"FQDN .* is too long \(64 characters is the max, 67"):
        pod_hostname(long)


PASSWD = """\
root:x:0:0:root:/root:/bin/bash

app:x:1000:1000:App:/home/app:/bin/sh
twin:x:1000:1000::/home/twin:/bin/sh
  padded:x:1002:1002::/srv/padded:/bin/sh  \r
short:x:1001
"""


@pytest.fixture
def passwd(tmp_path: Path) -> str:
    path = tmp_path / "passwd"
    path.write_text(PASSWD)
    return str(path)


@pytest.mark.parametrize(
    ("uid", "home"),
    [
        (0, "/root"),
        (1000, "/home/app"),  # the first entry for the uid, as moby/sys/user's LookupUid
        (1002, "/srv/padded"),  # a line is trimmed
        (1001, ""),  # an entry without a home field: an empty one, as runc reads it
        (12345, "/"),  # no entry: runc's default
    ],
)
def test_home_is_the_users_in_the_containers_passwd(passwd: str, uid: int, home: str) -> None:
    assert prepare_env({"PATH": "/bin"}, uid, passwd) == {"PATH": "/bin", "HOME": home}


def test_home_without_a_passwd_is_the_root(tmp_path: Path) -> None:
    assert passwd_home(0, str(tmp_path / "missing")) == "/"


def test_the_pods_home_wins_unless_empty(passwd: str) -> None:
    """runc's prepareEnv keeps a HOME the spec sets; an empty one is replaced."""
    assert prepare_env({"HOME": "/data"}, 1000, passwd) == {"HOME": "/data"}
    assert prepare_env({"HOME": ""}, 1000, passwd) == {"HOME": "/home/app"}
