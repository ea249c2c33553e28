"""Simulated nodes: the real agent logic (admission, resize, status, leases) without processes.

One process serves N nodes (``inplace node --simulated N``). Each is a full
:class:`~inplace.node.agent.NodeAgent` with its own Node (label ``inplace.dev/simulated:
"true"``), Lease, ledger and checkpoints; only three parts are swapped:

* the runtime, :class:`SimulatedRuntime`: a "container" is a record that runs until it is
  stopped; its containerID is a made-up number, and a line is written to its log file so
  ``kubectl logs`` works;
* the cgroup driver, :class:`~inplace.node.cgroups.NoneDriver`: limits are recorded, not
  applied (there is nothing to apply them to);
* usage, which follows the pod annotation ``inplace.dev/usage-profile`` (JSON, see
  :mod:`inplace.api.usage_profile`) instead of cgroup readings.

The nodes share one pod informer (one watch for all of them, indexed by node) and one stats
endpoint (``/stats/summary?node=NAME``), so thousands of nodes cost thousands of small objects,
not thousands of connections. The process authenticates as ``system:node-simulator``, which
the API server allows to write simulated nodes and the pods bound to them.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Final

from inplace.api.annotations import SIMULATED, USAGE_PROFILE
from inplace.api.usage_profile import UsageProfile, parse_profile, profile_for
from inplace.client import PODS, Client, Informer

from .agent import AgentConfig, NodeAgent
from .cgroups import NoneDriver
from .runtime import ExitStatus, ProcessSpec, RunningProcess
from .stats import StatsServer, endpoint_ssl_context
from .worker import PodWorker

__all__ = [
    "PROFILE_ANNOTATION",
    "SIMULATED_LABEL",
    "SimulatedRuntime",
    "UsageProfile",
    "parse_profile",
    "profile_for",
    "run_simulated",
]

PROFILE_ANNOTATION: Final = USAGE_PROFILE
SIMULATED_LABEL: Final = SIMULATED


class SimulatedRuntime:
    """Containers that run until stopped (see the module docstring)."""

    def __init__(self) -> None:
        self._ids = itertools.count(4_000_000)
        self._running: dict[int, asyncio.Future[ExitStatus]] = {}

    def _future(self, pid: int) -> asyncio.Future[ExitStatus]:
        fut = self._running.get(pid)
        if fut is None:
            fut = self._running[pid] = asyncio.get_running_loop().create_future()
        return fut

    async def start(self, spec: ProcessSpec) -> RunningProcess:
        pid = next(self._ids)
        os.makedirs(os.path.dirname(spec.log_path), exist_ok=True)
        with open(spec.log_path, "a") as fh:
            fh.write(f"simulated container: {' '.join(spec.command)}\n")
        self._future(pid)
        return RunningProcess(pid=pid, start_time=time.time(), log_path=spec.log_path)

    def adopt(self, pid: int, start_time: float, log_path: str) -> RunningProcess | None:
        """A simulated container outlives its agent, as a real one does."""
        self._future(pid)
        return RunningProcess(pid=pid, start_time=start_time, log_path=log_path)

    async def wait(self, proc: RunningProcess) -> ExitStatus:
        return await asyncio.shield(self._future(proc.pid))

    async def stop(self, proc: RunningProcess, *, grace_period: float) -> ExitStatus:
        fut = self._future(proc.pid)
        if not fut.done():
            fut.set_result(
                ExitStatus(
                    exit_code=143, signal=15, oom_killed=False, finished_at=datetime.now(UTC)
                )
            )
        self._running.pop(proc.pid, None)
        return fut.result()


# -- usage profiles (parsed in inplace.api.usage_profile, which validation shares) ---------------


def simulated_usage(w: PodWorker, container: str) -> tuple[int, int]:
    """(nano-cores, bytes) now, for the agent's usage loop."""
    profile = profile_for(w.pod, container)
    if profile is None:
        return (0, 0)
    started = w.started_mono.get(container)
    elapsed = 0.0 if started is None else time.monotonic() - started
    cpu_milli, memory = profile.at(elapsed)
    return cpu_milli * 1_000_000, memory


# -- the process ------------------------------------------------------------------------------


async def run_simulated(
    client: Client, base: AgentConfig, count: int, stop: asyncio.Event, *, prefix: str = "sim"
) -> None:
    """Serve ``count`` simulated nodes named ``<prefix>-<i>`` until ``stop``."""
    informer = Informer(client, PODS)
    stats = StatsServer(
        host=base.http_host, port=base.http_port, ssl_context=endpoint_ssl_context(base)
    )
    await stats.start()
    runtime = SimulatedRuntime()
    agents: list[NodeAgent] = []
    for i in range(1, count + 1):
        name = f"{prefix}-{i}"
        config = replace(
            base,
            node_name=name,
            data_dir=base.data_dir / name,
            labels={**base.labels, SIMULATED_LABEL: "true"},
            workers=2,
        )
        agent = NodeAgent(
            client,
            config,
            driver=NoneDriver(),
            runtime=runtime,
            informer=informer,
            stats=stats,
            usage=simulated_usage,
        )
        agents.append(agent)
    informer_task = asyncio.create_task(informer.run(), name="simulated-pods")
    try:
        await asyncio.gather(*(agent.run(stop) for agent in agents))
    finally:
        informer.stop()
        informer_task.cancel()
        await stats.stop()
