"""Shared by ``bench/upstream_*.py``: the same load against inplace and against upstream.

Upstream is the test bed of ``upstream/testbed`` (kube-apiserver, kube-controller-manager and
kube-scheduler of the release ``upstream/go.mod`` pins, on etcd; built once into a cache by
``scripts/upstream build``); inplace is its own API server and components. Both are driven over
HTTPS through a session made from a kubeconfig (:func:`session`): the test bed's admin proves
itself with a client certificate, inplace's with a bearer token.

Each script prints its figures for both and a side-by-side table (:func:`side_by_side`): the
figure for inplace, for upstream, and inplace ÷ upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from inplace.client import load_kubeconfig

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "upstream"))

from testbed.build import Binaries, build  # noqa: E402
from testbed.cluster import ControlPlane, down, up  # noqa: E402
from testbed.images import WORKLOAD_IMAGE  # noqa: E402
from testbed.kubelet_node import container_pid  # noqa: E402

__all__ = [
    "WORKLOAD_IMAGE",
    "Binaries",
    "ControlPlane",
    "Row",
    "binaries",
    "container_pid",
    "ensure_service_account",
    "machine",
    "pct",
    "session",
    "side_by_side",
    "testbed",
    "wait_service_account",
]


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (seconds), in milliseconds."""
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)] * 1000


def machine() -> str:
    """CPUs and load average now: a figure on a shared machine reads with the load it met."""
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {one:.1f} (5 min {five:.1f})"


def session(kubeconfig: Path, *, limit: int = 200) -> aiohttp.ClientSession:
    """An HTTPS session to the kubeconfig's server as its user (client certificate or bearer
    token), relative URLs resolved against the server."""
    config = load_kubeconfig(str(kubeconfig))
    context: ssl.SSLContext | None = config.ssl_context()
    token = config.bearer_token()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(ssl=context if context is not None else False, limit=limit)
    return aiohttp.ClientSession(config.server, headers=headers, connector=connector)


def binaries() -> Binaries:
    """The upstream binaries (built on the first call on a machine: 15-20 minutes)."""
    return build(log=True)


@contextlib.contextmanager
def testbed(**kwargs: Any) -> Iterator[ControlPlane]:
    """A test bed (``testbed.cluster.up`` with ``kwargs``) in a scratch directory; taken down
    and removed on exit, anything it left behind printed."""
    directory = Path(tempfile.mkdtemp(prefix="upstream-bench-"))
    try:
        yield up(directory / "bed", binaries=binaries(), **kwargs)
    finally:
        # with no node, nothing runs a pod: a graceful delete would wait for no kubelet
        nodes = kwargs.get("nodes", 1) + kwargs.get("kubelet_nodes", 0)
        leftovers = down(directory / "bed", delete_workloads=nodes > 0)
        if leftovers:
            print("upstream test bed left behind:\n  " + "\n  ".join(leftovers), file=sys.stderr)
        shutil.rmtree(directory, ignore_errors=True)


async def ensure_service_account(http: aiohttp.ClientSession, namespace: str = "default") -> None:
    """Create the namespace's ``default`` ServiceAccount, as kube-controller-manager would:
    upstream's ServiceAccount admission refuses pods until it exists. Waits for the namespace
    (kube-apiserver creates ``default`` just after it is ready)."""
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    deadline = time.monotonic() + 60
    while True:
        async with http.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json=body) as r:
            if r.status in (201, 409):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"cannot create {namespace}/default: {await r.text()}")
        await asyncio.sleep(0.5)


async def wait_service_account(http: aiohttp.ClientSession, namespace: str = "default") -> None:
    """Wait until kube-controller-manager has made the namespace's ``default`` ServiceAccount."""
    deadline = time.monotonic() + 60
    while True:
        async with http.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default") as r:
            if r.status == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"no ServiceAccount {namespace}/default after 60 s")
        await asyncio.sleep(0.5)


@dataclass
class Row:
    """One figure for both: ``higher`` when a larger figure is the better one, None when
    neither is (a size, for the record)."""

    name: str
    inplace: float
    upstream: float
    unit: str
    higher: bool | None = False


def _fmt(value: float, unit: str) -> str:
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f} {unit}"


def side_by_side(title: str, rows: list[Row]) -> None:
    """Print the rows: inplace, upstream, inplace ÷ upstream and which is better."""
    width = max(len(row.name) for row in rows)
    print(f"\n{title}")
    print(f"  {'figure':<{width}}  {'inplace':>14}  {'upstream':>14}  {'inplace/upstream':>16}")
    for row in rows:
        ratio = row.inplace / row.upstream if row.upstream else float("inf")
        better = "inplace" if (row.inplace > row.upstream) == row.higher else "upstream"
        if row.inplace == row.upstream:
            better = "even"
        verdict = f"({'higher' if row.higher else 'lower'} is better: {better})"
        print(
            f"  {row.name:<{width}}  {_fmt(row.inplace, row.unit):>14}  "
            f"{_fmt(row.upstream, row.unit):>14}  {ratio:>15.2f}x  "
            f"{verdict if row.higher is not None else ''}".rstrip()
        )
    sys.stdout.flush()
