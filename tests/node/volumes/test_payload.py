"""configMap, secret, downwardAPI and projected payloads (upstream's MakePayload)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from inplace.api.quantity import Quantity
from inplace.node.volumes.payload import (
    PROJECTED_SOURCES,
    Projection,
    SourceError,
    volume_payload,
)


class Objects:
    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects

    async def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((resource, name))


POD = {
    "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "labels": {"b": "2", "a": 'x"y'}},
    "spec": {
        "containers": [
            {
                "name": "main",
                "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "64Mi"}},
            }
        ]
    },
}
OBJECTS = Objects(
    {
        ("configmaps", "cfg"): {
            "data": {"k1": "v1", "k2": "v2"},
            "binaryData": {"bin": base64.b64encode(b"\0").decode()},
        },
        ("secrets", "sec"): {"data": {"token": base64.b64encode(b"s3cret").decode()}},
    }
)
P = Projection(POD, OBJECTS, {"cpu": Quantity.parse("2"), "memory": Quantity.parse("1Gi")})


async def payload(volume: dict[str, Any]) -> dict[str, tuple[bytes, int]]:
    made = await volume_payload(P, volume)
    assert made is not None
    return {k: (v.data, v.mode) for k, v in made[1].items()}


async def test_configmap_all_keys_and_items() -> None:
    assert await payload({"configMap": {"name": "cfg", "defaultMode": 0o600}}) == {
        "k1": (b"v1", 0o600),
        "k2": (b"v2", 0o600),
        "bin": (b"\0", 0o600),
    }
    assert await payload(
        {"configMap": {"name": "cfg", "items": [{"key": "k2", "path": "dir/two", "mode": 0o400}]}}
    ) == {"dir/two": (b"v2", 0o400)}


async def test_missing_objects_and_keys() -> None:
    with pytest.raises(SourceError, match='configmap "nope" not found'):
        await payload({"configMap": {"name": "nope"}})
    assert await payload({"configMap": {"name": "nope", "optional": True}}) == {}
    with pytest.raises(SourceError, match="non-existent config key: k9"):
        await payload({"configMap": {"name": "cfg", "items": [{"key": "k9", "path": "x"}]}})
    with pytest.raises(SourceError, match='secret "nope" not found'):
        await payload({"secret": {"secretName": "nope"}})


async def test_secret_decodes() -> None:
    assert await payload({"secret": {"secretName": "sec"}}) == {"token": (b"s3cret", 0o644)}


async def test_downward_api() -> None:
    items = [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "b", "fieldRef": {"fieldPath": "metadata.labels['b']"}},
        {
            "path": "cpu",
            "resourceFieldRef": {
                "containerName": "main",
                "resource": "requests.cpu",
                "divisor": "1m",
            },
        },
        {
            "path": "mem",
            "resourceFieldRef": {
                "containerName": "main",
                "resource": "limits.memory",
                "divisor": "1Mi",
            },
        },
        {"path": "cpulim", "resourceFieldRef": {"containerName": "main", "resource": "limits.cpu"}},
    ]
    got = await payload({"downwardAPI": {"items": items}})
    assert got["labels"][0] == b'a="x\\"y"\nb="2"'
    assert got["name"][0] == b"web" and got["b"][0] == b"2"
    assert got["cpu"][0] == b"250" and got["mem"][0] == b"64"
    assert got["cpulim"][0] == b"2"  # no limit: the node's allocatable


async def test_projected_merges_sources_and_takes_new_kinds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    volume = {
        "projected": {
            "defaultMode": 0o440,
            "sources": [
                {"configMap": {"name": "cfg", "items": [{"key": "k1", "path": "k1"}]}},
                {"secret": {"name": "sec"}},
                {
                    "downwardAPI": {
                        "items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                    }
                },
            ],
        }
    }
    assert await payload(volume) == {
        "k1": (b"v1", 0o440),
        "token": (b"s3cret", 0o440),
        "ns": (b"ns", 0o440),
    }
    with pytest.raises(SourceError, match="not supported"):
        await payload({"projected": {"sources": [{"clusterTrustBundle": {}}]}})

    async def fixed(p: Projection, body: Any) -> dict[str, Any]:
        from inplace.node.volumes.writer import FileProjection

        return {body["path"]: FileProjection(b"tok", p.default_mode)}

    # The registry is the node's own: restored after the test (a test that deleted the
    # entry left every later serviceAccountToken volume in the same worker unsupported).
    monkeypatch.setitem(PROJECTED_SOURCES, "serviceAccountToken", fixed)
    assert await payload(
        {"projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    ) == {"token": (b"tok", 0o644)}
