"""``inplace rescue --dry-run`` against a real API server (the cluster lives only in it)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from inplace.client import PODS
from tests.controllers.rescue.apicluster import api_cluster, create_node, create_pod
from tests.controllers.rescue.builders import node, pending, running


async def dry_run(kubeconfig: Path, *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "inplace",
        "rescue",
        *args,
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "COLUMNS": "200"},
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    async with api_cluster(tmp_path) as cluster, cluster.client() as client:
        await create_node(client, node("node-1", cpu="4", memory="8Gi"))
        await create_pod(client, running("big", "3", "4Gi"))
        await create_pod(client, running("vip", "500m", "1Gi", priority=100))
        await create_pod(client, running("plain", "200m", "1Gi", shrinkable=None))
        await create_pod(client, running("young", "100m", "64Mi"))
        await create_pod(client, pending("new", "1", "1Gi"))
        await create_pod(client, pending("huge", "5", "1Gi"))
        cluster.usage.table = {"default/big": ("250m", "512Mi"), "default/vip": ("10m", "64Mi")}
        before = await client.list(PODS, namespace="default")
        config = cluster.kubeconfig(tmp_path / "kubeconfig")

        code, out = await dry_run(config, "--dry-run", "--observe", "0", "--explain")
        assert code == 0, out
        lines = out.splitlines()
        row = next(line for line in lines if "default/big" in line and "main" in line)
        # 4 CPU - 3.8 held: 200m free; 1 CPU asked: 800m taken from big (250m peak).
        assert "3 → 2200m (-800m)" in row and "default/new" in row
        assert (
            "would place default/new on node-1 by shrinking default/big "
            "(frees 800m CPU, 0 memory)" in out
        )
        assert "default/huge: no shrinking can place it" in out
        assert "not a donor: default/young: usage not known yet" in out
        assert "vip" not in out and "plain" not in out
        after = await client.list(PODS, namespace="default")
        assert [p["metadata"]["resourceVersion"] for p in after["items"]] == [
            p["metadata"]["resourceVersion"] for p in before["items"]
        ]

        code, out = await dry_run(config)
        assert code == 2 and "only --dry-run" in out
