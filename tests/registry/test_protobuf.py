"""Kubernetes protobuf bodies: the wire reader, the schema, and what real kubectl sends."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.registry.protobuf import (
    MAGIC,
    PROTOBUF_CONTENT_TYPE,
    ProtobufError,
    decode_message,
    decode_object,
    go_duration,
    iter_fields,
    read_varint,
    schema,
)

# --------------------------------------------------------------------------- a tiny encoder


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def v(number: int, n: int) -> bytes:
    """A varint field (negative ints as 10-byte two's complement, as Go writes them)."""
    return varint(number << 3) + varint(n)


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    """A map entry."""
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *, extra: bytes = b"") -> bytes:
    return MAGIC + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + extra


# --------------------------------------------------------------------------- wire format

VARINTS = [
    (b"\x00", 0),
    (b"\x01", 1),
    (b"\x7f", 127),
    (b"\x80\x01", 128),
    (b"\xac\x02", 300),
    (b"\xff\xff\xff\xff\x0f", 2**32 - 1),
    (b"\xff" * 9 + b"\x01", 2**64 - 1),
    (b"\x80\x80\x80\x00", 0),  # over-long but valid
]


@pytest.mark.parametrize(("data", "value"), VARINTS)
def test_read_varint(data: bytes, value: int) -> None:
    assert read_varint(data + b"\x99", 0) == (value, len(data))
    assert varint(value) == data or value == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated varint"),
        (b"\x80", "truncated varint"),
        (b"\xff\xff", "truncated varint"),
        (b"\xff" * 9 + b"\x02", "overflows 64 bits"),
        (b"\xff" * 10 + b"\x01", "overflows 64 bits"),
    ],
)
def test_read_varint_errors(data: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        read_varint(data, 0, "x")


def test_iter_fields_every_wire_type() -> None:
    data = (
        v(1, 150)
        + varint(2 << 3 | 1)
        + (2**64 - 1).to_bytes(8, "little")
        + ld(3, "hi")
        + varint(4 << 3 | 5)
        + (7).to_bytes(4, "little")
        + ld(536870911, b"")
    )
    assert list(iter_fields(data)) == [
        (1, 0, 150),
        (2, 1, 2**64 - 1),
        (3, 2, b"hi"),
        (4, 5, 7),
        (536870911, 2, b""),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (varint(1 << 3 | 1) + b"1234567", r"m#1: truncated 64-bit field"),
        (varint(1 << 3 | 5) + b"123", r"m#1: truncated 32-bit field"),
        (varint(1 << 3 | 2) + varint(5) + b"abcd", r"m#1: length 5 runs past the end"),
        (varint(1 << 3 | 2) + b"\x80", r"m#1: truncated varint"),
        (varint(1 << 3 | 0), r"m#1: truncated varint"),
        (varint(0 << 3 | 0) + b"\x00", r"m: invalid field number 0"),
        (varint(1 << 3 | 3), r"m#1: unsupported wire type 3"),
        (varint(1 << 3 | 4), r"m#1: unsupported wire type 4"),
        (varint(1 << 3 | 6), r"m#1: unsupported wire type 6"),
        (varint(1 << 3 | 7), r"m#1: unsupported wire type 7"),
    ],
)
def test_iter_fields_errors(data: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        list(iter_fields(data, "m"))


def test_packed_and_unpacked_repeated_scalars_decode_alike() -> None:
    # PodSecurityContext.supplementalGroups (4) is repeated int64; Go writes it unpacked,
    # proto3 writers pack it. Both read the same.
    unpacked = v(4, 1) + v(4, 2) + v(4, 300)
    packed = ld(4, varint(1) + varint(2) + varint(300))
    mixed = v(4, 1) + ld(4, varint(2) + varint(300))
    for data in (unpacked, packed, mixed):
        assert decode_message("core.v1.PodSecurityContext", data) == {
            "supplementalGroups": [1, 2, 300]
        }
    with pytest.raises(ProtobufError, match="supplementalGroups: truncated varint"):
        decode_message("core.v1.PodSecurityContext", ld(4, b"\x80"))


def test_wrong_wire_type_names_the_field_path() -> None:
    raw = ld(2, ld(2, ld(1, "c") + v(2, 5)))  # Pod.spec.containers[0].image as a varint
    with pytest.raises(ProtobufError, match=r"Pod\.spec\.containers\[0\]\.image: wire type 0"):
        decode_object(envelope("v1", "Pod", raw))


def test_unknown_fields_are_skipped() -> None:
    raw = ld(1, ld(1, "x") + v(999, 5) + ld(998, "junk"))
    assert decode_object(envelope("v1", "Namespace", raw))["metadata"] == {
        "name": "x",
        "creationTimestamp": None,
    }


# --------------------------------------------------------------------------- envelope


def test_envelope_errors() -> None:
    with pytest.raises(ProtobufError, match="magic"):
        decode_object(b'{"kind": "Pod"}')
    with pytest.raises(ProtobufError, match="apiVersion and kind are required"):
        decode_object(MAGIC + ld(2, b""))
    with pytest.raises(ProtobufError, match="no protobuf schema for kind 'PersistentVolume'"):
        decode_object(envelope("v1", "PersistentVolume", b""))
    with pytest.raises(ProtobufError, match="unsupported encoding 'gzip'"):
        decode_object(envelope("v1", "Pod", b"", extra=ld(3, "gzip")))
    with pytest.raises(ProtobufError, match="unsupported content type"):
        decode_object(envelope("v1", "Pod", b"", extra=ld(4, "application/json")))
    # The content type kubectl may name is accepted.
    assert decode_object(envelope("v1", "Namespace", b"", extra=ld(4, PROTOBUF_CONTENT_TYPE)))


def test_meta_kinds_decode_in_any_group() -> None:
    body = envelope("policy/v1", "DeleteOptions", v(1, 0) + ld(4, "Foreground"))
    assert decode_object(body) == {
        "kind": "DeleteOptions",
        "apiVersion": "policy/v1",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
    }


# --------------------------------------------------------------------------- a hand-built Pod


def test_hand_built_pod() -> None:
    meta = (
        ld(1, "web-1")
        + ld(3, "default")
        + ld(5, "")  # uid "" on the wire: omitempty, so absent from JSON
        + v(7, 0)  # generation 0: likewise
        + ld(8, v(1, 1_700_000_000))  # creationTimestamp
        + entry(11, "app", "web")
        + entry(11, "tier", "front")
        + ld(17, ld(1, "kubectl") + ld(6, "FieldsV1") + ld(7, ld(1, b'{"f:spec":{}}')))
    )
    quantity = lambda text: ld(1, text)  # noqa: E731
    resources = ld(
        8,
        entry(1, "cpu", quantity("500m"))
        + entry(1, "memory", quantity("1Gi"))
        + entry(2, "cpu", quantity("250m"))
        + entry(2, "memory", b""),  # a map value with no bytes is the zero Quantity
    )
    int_port = ld(2, v(1, 0) + v(2, 8080))
    named_port = ld(1, v(1, 1) + ld(3, "http"))
    main = (
        ld(1, "main")
        + ld(2, "nginx")
        + ld(3, "sleep")
        + ld(3, "3600")
        + ld(6, v(3, 8080) + ld(4, "TCP"))
        + resources
        + ld(10, ld(1, ld(2, ld(1, "/healthz") + int_port)) + v(2, 5))  # livenessProbe
        + ld(11, ld(1, ld(3, named_port)))  # readinessProbe
        + v(16, 0)  # stdin false: omitempty
    )
    spec = (
        ld(2, main)
        + ld(2, ld(1, "sidecar") + ld(8, b""))
        + ld(3, "Always")
        + v(4, 30)  # terminationGracePeriodSeconds (pointer)
        + entry(7, "disk", "ssd")
        + v(11, 0)  # hostNetwork false: non-pointer omitempty, dropped
        + ld(14, v(4, 1) + v(4, 2))  # securityContext.supplementalGroups
        + v(21, 0)  # automountServiceAccountToken false: a pointer, kept
        + v(25, -5)  # priority (int32 written as a 10-byte varint)
    )
    status = ld(1, "Running") + ld(7, v(1, 1_700_000_100) + v(2, 123_000_000))
    raw = ld(1, meta) + ld(2, spec) + ld(3, status)
    assert decode_object(envelope("v1", "Pod", raw)) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "labels": {"app": "web", "tier": "front"},
            "managedFields": [
                {"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nginx",
                    "command": ["sleep", "3600"],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "1Gi"},
                        "requests": {"cpu": "250m", "memory": "0"},
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": 8080},
                        "initialDelaySeconds": 5,
                    },
                    "readinessProbe": {"tcpSocket": {"port": "http"}},
                },
                {"name": "sidecar", "resources": {}},
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "nodeSelector": {"disk": "ssd"},
            "securityContext": {"supplementalGroups": [1, 2]},
            "automountServiceAccountToken": False,
            "priority": -5,
        },
        "status": {"phase": "Running", "startTime": "2023-11-14T22:15:00Z"},
    }


def test_absent_fields_print_as_go_prints_the_zero_value() -> None:
    # A writer other than gogo may leave out non-pointer fields; Go reads them as zero values
    # and prints those that have no omitempty: structs, required scalars, required lists.
    assert decode_object(envelope("v1", "Pod", b"")) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"creationTimestamp": None},
        "spec": {"containers": None},
        "status": {},
    }
    assert decode_message("core.v1.ContainerPort", b"") == {"containerPort": 0}
    assert decode_message("core.v1.HTTPGetAction", b"") == {"port": 0}


def test_pointer_zero_is_kept_and_omitempty_zero_is_dropped() -> None:
    # DeploymentSpec.replicas is *int32 (0 means zero replicas); ScaleSpec.replicas is an
    # int32 with omitempty.
    assert decode_message("apps.v1.DeploymentSpec", v(1, 0))["replicas"] == 0
    assert decode_message("autoscaling.v1.ScaleSpec", v(1, 0)) == {}
    assert decode_message("autoscaling.v1.ScaleSpec", v(1, 3)) == {"replicas": 3}


def test_inline_structs_merge_into_their_parent() -> None:
    # Volume embeds VolumeSource, Probe embeds ProbeHandler, *KeySelector LocalObjectReference.
    volume = ld(1, "data") + ld(2, ld(2, ld(1, "Memory") + ld(2, ld(1, "1Gi"))))
    assert decode_message("core.v1.Volume", volume) == {
        "name": "data",
        "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"},
    }
    selector = ld(1, ld(1, "cfg")) + ld(2, "key") + v(3, 0)
    assert decode_message("core.v1.ConfigMapKeySelector", selector) == {
        "name": "cfg",
        "key": "key",
        "optional": False,
    }


def test_special_types() -> None:
    time = lambda *fields: decode_message("meta.v1.Time", b"".join(fields))  # noqa: E731
    assert time() is None
    assert time(v(1, 0)) == "1970-01-01T00:00:00Z"
    assert time(v(1, 1_700_000_000), v(2, 999_999_999)) == "2023-11-14T22:13:20Z"
    assert time(v(1, -86400)) == "1969-12-31T00:00:00Z"
    with pytest.raises(ProtobufError, match="out of range"):
        time(v(1, 2**62))
    micro = decode_message("meta.v1.MicroTime", v(1, 1_700_000_000) + v(2, 123_456_789))
    assert micro == "2023-11-14T22:13:20.123456Z"
    assert decode_message("meta.v1.Duration", v(1, 90 * 10**9)) == "1m30s"
    assert decode_message("intstr.IntOrString", v(1, 1) + ld(3, "25%")) == "25%"
    assert decode_message("intstr.IntOrString", v(2, -1)) == -1
    assert decode_message("intstr.IntOrString", b"") == 0
    assert decode_message("resource.Quantity", ld(1, "1.5Gi")) == "1.5Gi"
    assert decode_message("meta.v1.FieldsV1", ld(1, b"[1]")) == [1]
    with pytest.raises(ProtobufError, match="embedded JSON does not parse"):
        decode_message("meta.v1.FieldsV1", ld(1, b"{"))
    event = ld(10, b"") + v(8, 0)  # eventTime empty: null
    assert decode_message("core.v1.Event", event)["eventTime"] is None
    bad = ld(1, b"\xff\xfe") + ld(6, "x")
    assert decode_message("core.v1.EnvVar", bad) == {"name": "\ufffd\ufffd"}


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_500, "1.5µs"),
        (1_500_000, "1.5ms"),
        (10**9, "1s"),
        (1_500_000_000, "1.5s"),
        (3_600 * 10**9, "1h0m0s"),
        (3_723 * 10**9 + 5 * 10**8, "1h2m3.5s"),
        (-90 * 10**9, "-1m30s"),
    ],
)
def test_go_duration(nanos: int, text: str) -> None:
    assert go_duration(nanos) == text


# --------------------------------------------------------------------------- the schema


def _client_model(message: str) -> Any:
    import kubernetes.client.models as models

    package, name = message.rsplit(".", 1)
    group, version = package.split(".")[0].capitalize(), package.split(".")[-1].capitalize()
    # The client names a model V1Pod, or CoreV1Event where two groups share a name.
    for candidate in (f"{group}{version}{name}", f"{version}{name}"):
        if hasattr(models, candidate):
            return getattr(models, candidate)
    return None


def test_every_json_name_exists_in_the_kubernetes_client_models() -> None:
    messages = schema().messages
    # Types that only ever appear inlined (ProbeHandler, VolumeSource, ...) have no model of
    # their own: their fields must be in the model of each message that embeds them.
    embedders: dict[str, list[str]] = {}
    for message, fields in messages.items():
        for field in fields.values():
            if field.mode == "i":
                embedders.setdefault(field.type, []).append(message)
    checked = 0
    for message, fields in messages.items():
        model = _client_model(message)
        owners = [message] if model is not None else embedders.get(message, [])
        assert owners, f"{message} has no client model and is never inlined"
        for owner in owners:
            owner_model = _client_model(owner)
            assert owner_model is not None, owner
            names = set(owner_model.attribute_map.values())
            for field in fields.values():
                if field.mode != "i":
                    assert field.name in names, f"{message}.{field.name} not in {owner_model}"
                    checked += 1
    assert checked > 800


def test_schema_covers_the_served_kinds() -> None:
    kinds = schema().kinds
    for api_version, kind in [
        ("v1", "Namespace"),
        ("v1", "Node"),
        ("v1", "Pod"),
        ("v1", "Event"),
        ("v1", "Binding"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("autoscaling/v1", "Scale"),
        ("batch/v1", "Job"),
        ("policy/v1", "PodDisruptionBudget"),
        ("policy/v1", "Eviction"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("coordination.k8s.io/v1", "Lease"),
    ]:
        assert (api_version, kind) in kinds
    for fields in schema().messages.values():
        for field in fields.values():
            assert field.mode in "poai"
            assert field.scalar or field.type in schema().messages or "." in field.type


# --------------------------------------------------------------------------- hypothesis


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_protobuf_error(data: bytes) -> None:
    for decode in (
        lambda: list(iter_fields(data)),
        lambda: decode_object(data),
        lambda: decode_object(MAGIC + data),
        lambda: decode_object(envelope("v1", "Pod", data)),
        lambda: decode_message("core.v1.PodSpec", data),
        lambda: decode_message("meta.v1.ObjectMeta", data),
        lambda: decode_message("apps.v1.Deployment", data),
    ):
        try:
            decode()
        except ProtobufError:
            pass


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 40),
            st.sampled_from([0, 1, 2, 5]),
            st.one_of(st.integers(0, 2**64 - 1), st.binary(max_size=30)),
        ),
        max_size=12,
    )
)
def test_well_framed_random_fields_raise_only_protobuf_error(
    fields: list[tuple[int, int, int | bytes]],
) -> None:
    # Valid framing gets past the reader into the typed decoding: wrong wire types,
    # bad nested messages, out-of-range times.
    data = bytearray()
    for number, wire, value in fields:
        data += varint(number << 3 | wire)
        if wire == 0:
            data += varint(value if isinstance(value, int) else len(value))
        elif wire == 1:
            data += (value if isinstance(value, int) else 0).to_bytes(8, "little")
        elif wire == 5:
            data += ((value if isinstance(value, int) else 0) & 0xFFFFFFFF).to_bytes(4, "little")
        else:
            payload = value if isinstance(value, bytes) else varint(value)
            data += varint(len(payload)) + payload
    for message in ("core.v1.PodSpec", "core.v1.Container", "meta.v1.ObjectMeta"):
        try:
            decode_message(message, bytes(data))
        except ProtobufError:
            pass


# --------------------------------------------------------------------------- real kubectl

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")

_RESOURCES: dict[tuple[str, str], list[tuple[str, str, bool]]] = {
    ("", "v1"): [
        ("namespaces", "Namespace", False),
        ("pods", "Pod", True),
        ("nodes", "Node", False),
    ],
    ("apps", "v1"): [("deployments", "Deployment", True), ("replicasets", "ReplicaSet", True)],
    ("batch", "v1"): [("jobs", "Job", True)],
    ("policy", "v1"): [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    ("scheduling.k8s.io", "v1"): [("priorityclasses", "PriorityClass", False)],
}

_POD = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "p1",
        "namespace": "default",
        "uid": "u1",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r1"}
            | {"controller": True}
        ],
    },
    "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "x"}]},
    "status": {"phase": "Running"},
}


def _not_found() -> web.Response:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}
    return web.json_response(status | {"reason": "NotFound"}, status=404)


class FakeAPIServer:
    """Just enough of the API for kubectl: legacy discovery, and it records every write."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, str, bytes]] = []
        self.evicted = False

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = [
            {"name": name, "namespaced": namespaced, "kind": kind, "verbs": ["create", "get"]}
            for name, kind, namespaced in _RESOURCES[group, version]
        ]
        if not group:
            resources.append(
                {"name": "pods/eviction", "namespaced": True, "kind": "Eviction"}
                | {"group": "policy", "version": "v1", "verbs": ["create"]}
            )
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "groupVersion": gv, "resources": resources}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        body = await request.read()
        if request.method in ("POST", "PUT", "PATCH"):
            content_type = request.headers.get("Content-Type", "")
            self.writes.append((request.method, path, content_type, body))
            if path.endswith("/eviction"):
                self.evicted = True
                return web.json_response({"kind": "Status", "status": "Success"}, status=201)
            if path == "/api/v1/nodes/node1":
                return web.json_response({"kind": "Node", "metadata": {"name": "node1"}})
            if content_type == PROTOBUF_CONTENT_TYPE:
                try:
                    obj = decode_object(body)
                except ProtobufError as exc:
                    return web.json_response({"kind": "Status", "message": str(exc)}, status=400)
            else:
                obj = json.loads(body)
            return web.json_response(obj, status=201)
        parts = path.strip("/").split("/")
        if path == "/version":
            return web.json_response({"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
        if path == "/api":
            return web.json_response({"kind": "APIVersions", "versions": ["v1"]})
        if path == "/apis":
            groups = [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}]}
                | {"preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}}
                for g, v in _RESOURCES
                if g
            ]
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        if path == "/api/v1":
            return web.json_response(self._resource_list("", "v1"))
        if parts[0] == "apis" and len(parts) == 3 and (parts[1], parts[2]) in _RESOURCES:
            return web.json_response(self._resource_list(parts[1], parts[2]))
        if path == "/api/v1/nodes/node1":
            return web.json_response({"kind": "Node", "apiVersion": "v1", "metadata": {}})
        if path == "/api/v1/pods":
            items = [] if self.evicted else [_POD]
            return web.json_response({"kind": "PodList", "metadata": {}, "items": items})
        if path == "/api/v1/namespaces/default/pods/p1" and not self.evicted:
            return web.json_response(_POD)
        return _not_found()


async def _kubectl(*args: str) -> str:
    assert KUBECTL is not None
    env = dict(os.environ, KUBECONFIG=os.devnull)
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def _capture(*args: str) -> tuple[FakeAPIServer, str]:
    """Run kubectl against a fresh fake server; the server's record and kubectl's stdout."""
    server = FakeAPIServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        out = await _kubectl(f"--server=http://127.0.0.1:{port}", *args)
    finally:
        await runner.cleanup()
    return server, out


CREATES = [
    ("namespace", ["create", "namespace", "demo"], "/api/v1/namespaces"),
    (
        "deployment",
        ["create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80"],
        "/apis/apps/v1/namespaces/default/deployments",
    ),
    (
        "job",
        ["create", "job", "seq", "--image=busybox", "--", "sleep", "5"],
        "/apis/batch/v1/namespaces/default/jobs",
    ),
    (
        "priorityclass",
        ["create", "priorityclass", "high", "--value=1000", "--description=x"],
        "/apis/scheduling.k8s.io/v1/priorityclasses",
    ),
    (
        "poddisruptionbudget",
        ["create", "poddisruptionbudget", "pdb", "--selector=app=web", "--min-available=1"],
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    ),
    (
        "deployment-zero",
        ["create", "deployment", "idle", "--image=nginx", "--replicas=0"],
        "/apis/apps/v1/namespaces/default/deployments",
    ),
]


@needs_kubectl
@pytest.mark.parametrize(("what", "args", "path"), CREATES, ids=[c[0] for c in CREATES])
async def test_kubectl_create_sends_protobuf_we_decode(
    what: str, args: list[str], path: str
) -> None:
    server, out = await _capture(*args)
    [(method, write_path, content_type, body)] = server.writes
    assert (method, write_path, content_type) == ("POST", path, PROTOBUF_CONTENT_TYPE)
    assert body.startswith(MAGIC)
    # kubectl prints the object it sent as JSON with --dry-run=client: the exact expected value.
    dry_run = [*args[:3], "--dry-run=client", "-o", "json", *args[3:]]
    expected = json.loads(await _kubectl(*dry_run))
    assert decode_object(body) == expected
    assert f"{args[2]} created" in out  # our JSON answer satisfied kubectl
    if what == "deployment-zero":
        assert expected["spec"]["replicas"] == 0


@needs_kubectl
async def test_kubectl_run_and_drain_send_json() -> None:
    # Found by capture: `kubectl run` (dynamic builder) and `kubectl drain`'s Eviction go as
    # JSON in kubectl 1.32, so they never reach decode_object.
    args = ["run", "worker", "--image=busybox", "--labels=app=w", "--restart=Never"]
    server, _ = await _capture(*args, "--", "sleep", "3600")
    [(_, path, content_type, body)] = server.writes
    assert (path, content_type) == ("/api/v1/namespaces/default/pods", "application/json")
    pod = json.loads(body)
    assert (pod["kind"], pod["metadata"]["name"], pod["metadata"]["labels"]) == (
        "Pod",
        "worker",
        {"app": "w"},
    )
    assert pod["spec"]["containers"][0]["args"] == ["sleep", "3600"]

    server, out = await _capture("drain", "node1", "--grace-period=30", "--timeout=20s")
    assert "pod/p1 evicted" in out
    eviction = [w for w in server.writes if w[1].endswith("/eviction")]
    [(_, path, content_type, body)] = eviction
    assert (path, content_type) == (
        "/api/v1/namespaces/default/pods/p1/eviction",
        "application/json",
    )
    assert json.loads(body)["deleteOptions"] == {"gracePeriodSeconds": 30}
