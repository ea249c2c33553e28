"""``inplace rescue --dry-run``: which running pods the rescuer would shrink, and what that places.

It reads the cluster through the API like any client (nodes, pods, VerticalPodAutoscalers,
ReplicaSets, and ``metrics.k8s.io`` usage for ``--observe`` seconds), runs the very
decisions the controller runs (:mod:`inplace.controllers.rescue`), and prints them:

* the pods it would shrink, by how much (requests before → after) and for which pending pod;
* the pending pods that this would place, those that fit as they are, and those that no
  shrinking can place;
* with ``--explain``, the pods that allow shrinking but are not donors now, and why.

Nothing is written. The controller in the controller manager does the same over its
caches, with a longer usage window (``--rescue-usage-window``, 15 minutes): a peak observed
here over a few seconds may be lower than the one it would use.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from inplace.api.placement import format_cpu, format_memory
from inplace.client import (
    NODES,
    PODMETRICS,
    PODS,
    VERTICALPODAUTOSCALERS,
    APIError,
    Client,
    ConfigError,
    load_config,
)
from inplace.controllers.rescue.model import Plan, Size
from inplace.controllers.rescue.snapshot import Snapshot, plan_of, snapshot, workload_lookup
from inplace.controllers.rescue.usage import UsagePeaks
from inplace.controllers.rescue.view import RescueSettings
from inplace.controllers.workloads import WORKLOAD_KINDS
from inplace.loop import run as run_event_loop

__all__ = ["add_arguments", "describe", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: $KUBECONFIG)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be shrunk and placed, change nothing (required: the "
        "controller manager's rescue controller is what acts)",
    )
    parser.add_argument(
        "--observe",
        type=float,
        default=10.0,
        help="seconds of usage readings to take the peaks from (default: 10, at least two "
        "readings of the node agents' 5 s samples)",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=RescueSettings.margin,
        help="room kept above peak usage, as a fraction (default: 0.15)",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="also list the pods that allow shrinking but are not donors now, and why",
    )


def _change(before: int, after: int, fmt: Callable[[int], str]) -> str:
    if before == after:
        return fmt(before)
    return f"{fmt(before)} → {fmt(after)} (-{fmt(before - after)})"


def describe(state: Snapshot, result: Plan, console: Console, *, explain: bool = False) -> None:
    """Print a plan (shared with the tests, which read the same text)."""
    shrinks = [(rescue, shrink) for rescue in result.rescues for shrink in rescue.shrinks]
    if shrinks:
        table = Table(title=f"would shrink {len(shrinks)} pod(s)", title_justify="left")
        for column in ("pod", "container", "node", "cpu request", "memory request", "for"):
            table.add_column(column)
        for rescue, shrink in shrinks:
            for name, before, after in shrink.containers:
                table.add_row(
                    shrink.donor,
                    name,
                    shrink.node,
                    _change(before.cpu, after.cpu, format_cpu),
                    _change(before.memory, after.memory, format_memory),
                    rescue.pending,
                )
        console.print(table)
    else:
        console.print("would shrink nothing")
    for rescue in result.rescues:
        freed = Size.total(s.freed for s in rescue.shrinks)
        console.print(
            f"would place {rescue.pending} on {rescue.node} by shrinking "
            f"{', '.join(rescue.donors)} (frees {format_cpu(freed.cpu)} CPU, "
            f"{format_memory(freed.memory)} memory)",
            highlight=False,
        )
    for key, node in sorted((result.fits or {}).items()):
        console.print(f"{key} fits {node} as it is (nothing to shrink)", highlight=False)
    for key in result.unplaced:
        console.print(f"{key}: no shrinking can place it", highlight=False)
    if not state.pending:
        console.print("no pod is pending for lack of CPU or memory", highlight=False)
    if explain:
        for key, why in sorted(state.skipped.items()):
            console.print(f"not a donor: {key}: {why}", highlight=False)


async def _observe(client: Client, seconds: float, peaks: UsagePeaks) -> None:
    """Read PodMetrics until ``seconds`` have passed (and at least twice)."""
    deadline = time.monotonic() + seconds
    reads = 0
    while True:
        metrics = await client.list_all(PODMETRICS)
        peaks.record_pod_metrics(metrics.get("items") or ())
        reads += 1
        if reads >= 2 and time.monotonic() >= deadline:
            return
        await asyncio.sleep(2.5)


async def _dry_run(args: argparse.Namespace, console: Console) -> None:
    config = load_config(args.kubeconfig)
    settings = RescueSettings(margin=args.margin)
    peaks = UsagePeaks(min_history=0.0)
    async with Client(config, user_agent="inplace-rescue") as client:
        await _observe(client, args.observe, peaks)
        nodes, pods, *workloads = await asyncio.gather(
            client.list_all(NODES),
            client.list_all(PODS),
            *(client.list_all(resource) for resource in WORKLOAD_KINDS.values()),
        )
        try:
            vpas = (await client.list_all(VERTICALPODAUTOSCALERS)).get("items") or []
        except APIError:
            vpas = []  # a cluster without the VPA's CRD
    state = snapshot(
        pods.get("items") or [],
        nodes.get("items") or [],
        vpas,
        workload_lookup(
            {
                kind: listed.get("items") or []
                for kind, listed in zip(WORKLOAD_KINDS, workloads, strict=True)
            }
        ),
        peaks,
        now=time.time(),
        settings=settings,
    )
    describe(state, plan_of(state), console, explain=args.explain)


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    console = console or Console()
    err = Console(stderr=True)
    if not args.dry_run:
        err.print(
            "inplace rescue: only --dry-run is offered; the rescue controller in the "
            "controller manager makes room for pending pods",
            highlight=False,
        )
        return 2
    try:
        run_event_loop(_dry_run(args, console))
    except (ConfigError, APIError, OSError) as exc:
        err.print(f"inplace rescue: {exc}", markup=False, highlight=False)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="inplace rescue", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
