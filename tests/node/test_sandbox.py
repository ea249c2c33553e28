"""A node agent that is not root builds no sandbox: a pod with volumes is refused, except for
the kube-api-access volume every pod gets, which such a pod goes without."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inplace.api.token_volume import mount_service_account_token
from inplace.node.config import AgentConfig
from inplace.node.sandbox import PodSandboxes
from inplace.node.security import ConfigError
from inplace.node.volumes.manager import VolumeManager


class Nothing:
    async def get(self, *args: Any) -> None:
        return None


def sandboxes(tmp_path: Path) -> PodSandboxes:
    config = AgentConfig("node-1", 1000, 1 << 30, tmp_path, tmp_path / "logs")
    volumes = VolumeManager(
        tmp_path, Nothing(), Nothing(), node_memory=1 << 30, node_cpu_milli=1000
    )
    return PodSandboxes(config, volumes, enabled=False)


def pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "command": ["true"]}]}
    if volumes:
        spec["volumes"] = list(volumes)
    return {"metadata": {"uid": "u-1", "name": "p", "namespace": "default"}, "spec": spec}


async def test_without_root_the_token_volume_is_skipped_and_others_refused(
    tmp_path: Path,
) -> None:
    boxes = sandboxes(tmp_path)
    with_token = pod()
    mount_service_account_token(with_token)
    await boxes.prepare(with_token, pod_memory_limit=None, env_of={})
    with pytest.raises(ConfigError, match="volumes need a mount namespace"):
        await boxes.prepare(
            pod({"name": "scratch", "emptyDir": {}}), pod_memory_limit=None, env_of={}
        )


async def test_a_pods_directory_goes_to_the_trash_and_is_swept(tmp_path: Path) -> None:
    """The teardown renames the pod's directory aside (its deletion does not wait for the
    removal); the sweep empties the trash, also what an earlier agent left there."""
    boxes = sandboxes(tmp_path)
    layer = boxes.volumes.pod_dir("u-1") / "layers" / "main" / "upper" / "1"
    layer.mkdir(parents=True)
    (layer / "file").write_text("x")
    left = boxes.volumes.trash / "u-0-earlier"
    left.mkdir(parents=True)
    await boxes.teardown("u-1")
    assert not boxes.volumes.pod_dir("u-1").exists()
    assert boxes._sweep is not None
    await boxes._sweep
    assert list(boxes.volumes.trash.iterdir()) == []
