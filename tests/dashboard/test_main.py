"""`inplace dashboard` on its own: any cluster its kubeconfig reaches, the URL it prints."""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import yaml

from inplace.client import PODS, Client, ClusterConfig
from tests.conftest import InProcessServer
from tests.poll import await_until


def kubeconfig(path: Path, server: str, token: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


async def test_it_prints_a_url_with_a_token_and_serves_the_cluster(
    apiserver: InProcessServer, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", apiserver.url, apiserver.token)
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        await client.create(
            PODS,
            {
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "inplace",
        "dashboard",
        "--kubeconfig",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        found = re.fullmatch(
            r"inplace dashboard: (http://127\.0\.0\.1:(\d+))/\?token=(\S+)\n", line
        )
        assert found, line
        base, token = found.group(1), found.group(3)
        async with aiohttp.ClientSession() as session:

            async def rows() -> list[str]:
                headers = {"Authorization": f"Bearer {token}"}
                async with session.get(f"{base}/api/view?view=pods", headers=headers) as r:
                    return [row["key"] for row in (await r.json())["rows"]]

            assert await await_until(rows, what="the pod listed") == ["default/p"]
            async with session.get(f"{base}/?token=wrong{token}") as r:
                assert r.status == 401
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        await asyncio.wait_for(process.wait(), 30)


def test_an_empty_token_file_is_a_clear_error(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", "t")
    empty = tmp_path / "token"
    empty.write_text("\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inplace",
            "dashboard",
            "--kubeconfig",
            str(config),
            "--token-file",
            str(empty),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert f"the token file {empty} is empty" in result.stderr
    assert "Traceback" not in result.stderr
