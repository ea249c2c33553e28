"""``inplace replay TRACE``: the VPA's recommender and updater over a usage trace.

Runs each policy (:data:`~inplace.controllers.vpa.simulation.POLICIES` by default) over
the trace on simulated nodes and a simulated clock — a week of trace takes seconds — and
prints, per policy, the relative slack ``(requested - used) / requested``, OOM kills,
resizes, evictions and requested resource-hours against static peak sizing. ``--plot``
draws, per pod, usage and requests over time with resizes and OOM kills marked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from inplace.api.quantity import Quantity, QuantityError
from inplace.controllers.vpa.settings import VARIANTS
from inplace.controllers.vpa.simulation import (
    GIB,
    POLICIES,
    PodSeries,
    PolicyResult,
    Trace,
    TraceError,
    default_nodes,
    iter_results,
    read_trace,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["add_arguments", "run"]

KNOWN_POLICIES = ("static-peak", *VARIANTS, *(f"{name}+pause" for name in VARIANTS))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", type=Path, help="CSV: time,pod,container,cpu,memory (.csv.gz too)")
    parser.add_argument(
        "--policy",
        action="append",
        choices=KNOWN_POLICIES,
        help=f"policy to replay (repeatable; default: {', '.join(POLICIES)})",
    )
    parser.add_argument("--nodes", type=int, default=3, help="simulated nodes (default: 3)")
    parser.add_argument(
        "--node-cpu", default=None, help="CPU per node (default: sized from the trace)"
    )
    parser.add_argument(
        "--node-memory", default=None, help="memory per node (default: sized from the trace)"
    )
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG of every pod")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    console = console or Console()
    err = Console(stderr=True)
    try:
        trace = read_trace(args.trace)
    except (OSError, TraceError) as exc:
        err.print(f"inplace replay: {exc}", markup=False, highlight=False)
        return 1
    if args.nodes < 1:
        err.print("inplace replay: --nodes must be at least 1")
        return 2
    cpu, memory = default_nodes(trace, args.nodes)
    try:
        if args.node_cpu is not None:
            cpu = Quantity.parse(args.node_cpu).milli_value()
        if args.node_memory is not None:
            memory = Quantity.parse(args.node_memory).value()
    except QuantityError as exc:
        err.print(f"inplace replay: {exc}", markup=False, highlight=False)
        return 2
    policies: Sequence[str] = args.policy or POLICIES
    results = _replay(trace, policies, args, cpu, memory, console)
    console.print(
        f"{args.trace.name}: {len(trace.pods())} pods over {trace.duration / 86400:.1f} days "
        f"every {trace.step:.0f}s, on {args.nodes} node(s) of "
        f"{Quantity.from_milli(cpu)} CPU and {Quantity.from_int(memory).with_format(_BIN)} memory",
        highlight=False,
    )
    console.print(_table(results))
    if args.plot is not None:
        _plot(results, args.plot)
        console.print(f"plot written to {args.plot}", highlight=False)
    return 0


def _replay(
    trace: Trace,
    policies: Sequence[str],
    args: argparse.Namespace,
    cpu: int,
    memory: int,
    console: Console,
) -> list[PolicyResult]:
    keep = args.plot is not None
    common = {"nodes": args.nodes, "node_cpu_milli": cpu, "node_memory": memory}
    if args.no_progress:
        return list(iter_results(trace, policies, keep_series=keep, **common))
    with Progress(
        TextColumn("{task.description:>12}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        tasks = {name: progress.add_task(name, total=len(trace.steps)) for name in policies}

        def advance(name: str, done: int) -> None:
            if done % 50 == 0 or done == len(trace.steps):
                progress.update(tasks[name], completed=done)

        return list(iter_results(trace, policies, keep_series=keep, progress=advance, **common))


_BIN = Quantity.parse("1Gi").format


def _table(results: Sequence[PolicyResult]) -> Table:
    baseline = next((r for r in results if r.policy == "static-peak"), None)
    table = Table(title="per policy (slack = (requested - used) / requested)")
    for column in (
        "policy",
        "mem slack",
        "CPU slack",
        "CPU>req",
        "OOM kills",
        "pauses",
        "resizes",
        "evicted",
        "mem GiB-h",
        "CPU core-h",
    ):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for r in results:
        memory_h = f"{r.memory_gib_hours:,.0f}"
        cpu_h = f"{r.cpu_core_hours:,.0f}"
        if baseline is not None and r is not baseline and baseline.memory_requested:
            memory_h += f" ({r.memory_requested / baseline.memory_requested:.0%})"
            cpu_h += f" ({r.cpu_requested / max(baseline.cpu_requested, 1e-9):.0%})"
        table.add_row(
            r.policy,
            f"{r.memory_slack:.1%}",
            f"{r.cpu_slack:.1%}",
            f"{r.cpu_shortfall:.1%}",
            str(r.ooms),
            str(r.pauses),
            str(r.resizes),
            str(r.evictions),
            memory_h,
            cpu_h,
        )
    return table


def _plot(results: Sequence[PolicyResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({key for r in results for key in r.series})
    fig, axes = plt.subplots(
        len(keys), 2, figsize=(16, 2.2 * len(keys) + 1), squeeze=False, sharex=True
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, key in enumerate(keys):
        cpu_ax: Axes = axes[row][0]
        mem_ax: Axes = axes[row][1]
        for index, result in enumerate(results):
            series = result.series.get(key)
            if series is None:
                continue
            hours = [t / 3600 for t in series.times]
            color = colors[index % len(colors)]
            if index == 0:
                cpu_ax.plot(hours, [c / 1000 for c in series.cpu_used], color="0.6", lw=0.6)
                mem_ax.plot(hours, [m / GIB for m in series.memory_used], color="0.6", lw=0.6)
            label = result.policy
            cpu_ax.step(
                hours, [c / 1000 for c in series.cpu_request], color=color, lw=1, label=label
            )
            mem_ax.step(hours, [m / GIB for m in series.memory_request], color=color, lw=1)
            for marks, marker in ((series.resizes, "|"), (series.evictions, "v")):
                if marks:
                    y = [_at(series, t) / GIB for t in marks]
                    mem_ax.plot([t / 3600 for t in marks], y, marker, color=color, ms=5)
            if series.ooms:
                y = [_at(series, t) / GIB for t in series.ooms]
                mem_ax.plot([t / 3600 for t in series.ooms], y, "x", color="red", ms=5)
        cpu_ax.set_ylabel(f"{key[0]}\n{key[1]}", fontsize=8)
        cpu_ax.tick_params(labelsize=7)
        mem_ax.tick_params(labelsize=7)
    axes[0][0].set_title("CPU (cores): usage in grey, requests per policy")
    axes[0][1].set_title("memory (GiB): | resize, v eviction, x OOM kill")
    axes[0][0].legend(fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("hours")
    axes[-1][1].set_xlabel("hours")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _at(series: PodSeries, moment: float) -> float:
    """The memory request in force at ``moment`` (where a mark is drawn)."""
    value = series.memory_request[0] if series.memory_request else 0
    for t, request in zip(series.times, series.memory_request, strict=False):
        if t > moment:
            break
        value = request
    return float(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="inplace replay", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
