"""The volume manager's refresh: a payload unchanged since it was last written is not compared
with the disk again (every pod event refreshes its volumes); a changed one is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from inplace.node.volumes import manager as manager_module
from inplace.node.volumes.manager import VolumeManager


class Objects:
    def __init__(self) -> None:
        self.config: dict[str, Any] = {"data": {"k": "one"}}

    async def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.config if (resource, name) == ("configmaps", "cfg") else None


class NoClaims:
    async def host_path(self, namespace: str, claim: str) -> str:
        raise AssertionError("no claims here")


POD = {
    "metadata": {"uid": "u-1", "name": "p", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "command": ["true"]}],
        "volumes": [{"name": "conf", "configMap": {"name": "cfg"}}],
    },
}


async def test_an_unchanged_payload_skips_the_disk_and_a_changed_one_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = Objects()
    volumes = VolumeManager(tmp_path, objects, NoClaims(), node_memory=1 << 30, node_cpu_milli=1000)
    writes: list[str] = []
    real = manager_module.write_payload

    def counted(target: str, *args: Any, **kwargs: Any) -> bool:
        writes.append(target)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(manager_module, "write_payload", counted)
    target = volumes.volume_dir("u-1", "configMap", "conf")

    assert await volumes.refresh(POD) == []
    assert (target / "k").read_text() == "one" and len(writes) == 1
    assert await volumes.refresh(POD) == []
    assert len(writes) == 1  # the same payload: nothing read or written

    objects.config = {"data": {"k": "two"}}
    assert await volumes.refresh(POD) == []
    assert (target / "k").read_text() == "two" and len(writes) == 2

    volumes.teardown("u-1")  # a pod going: forgotten, so a pod reusing the path is written
    assert not os.path.exists(target)
    assert await volumes.refresh(POD) == []
    assert (target / "k").read_text() == "two" and len(writes) == 3
