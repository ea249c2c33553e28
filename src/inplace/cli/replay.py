"""``inplace replay TRACE``: the VPA's recommender and updater over a usage trace.

Runs each policy (:data:`~inplace.controllers.vpa.simulation.POLICIES` by default) over
the trace on simulated nodes and a simulated clock — a week of trace takes seconds — and
prints, per policy, the relative slack ``(requested - used) / requested``, OOM kills,
pauses, resizes, evictions and requested resource-hours against static peak sizing: as a
table when the terminal is wide enough for every name and unit, else one block per policy
(``--json`` for scripts). ``--plot out.png`` writes a one-page summary (the cluster's memory
requested and used over time per policy, OOM kills and pauses marked, slack and savings in
the legend), and ``out-POD.png`` per pod asked for with ``--pods``, or for the ``--worst`` N.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    default_nodes,
    iter_results,
)
from inplace.controllers.vpa.trace import Trace, TraceError, read_trace

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["add_arguments", "run"]

KNOWN_POLICIES = ("static-peak", *VARIANTS, *(f"{name}+pause" for name in VARIANTS))

DESCRIPTIONS = {
    "static-peak": "every container at its workload's peak, set by hand",
    "upstream": "upstream's VPA recommender and updater defaults",
    "inplace": "the variant built for in-place resizing",
}

AUTOPILOT_SLACK = 0.23
"""Google's Autopilot, EuroSys '20: relative memory slack with its ML recommender."""


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
    parser.add_argument(
        "--plot",
        type=Path,
        default=None,
        help="write a summary PNG here, and PATH-STEM-POD.png per pod plotted",
    )
    parser.add_argument(
        "--pods",
        action="append",
        default=None,
        metavar="POD",
        help="with --plot: a pod to draw a page for (repeatable, or comma-separated)",
    )
    parser.add_argument(
        "--worst",
        type=int,
        default=3,
        metavar="N",
        help="with --plot and no --pods: pages for the N pods with the most OOM kills, "
        "then the most unused memory (default: 3; 0: the summary only)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
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
    pods = [p for item in args.pods or [] for p in item.split(",") if p]
    unknown = [p for p in pods if p not in trace.first_seen]
    if unknown:
        err.print(
            f"inplace replay: no pod {', '.join(unknown)} in {args.trace.name}",
            markup=False,
            highlight=False,
        )
        return 2
    policies: Sequence[str] = args.policy or POLICIES
    results = _replay(trace, policies, args, cpu, memory, console)
    header = (
        f"{args.trace.name}: {len(trace.pods())} pods over {trace.duration / 86400:.1f} days "
        f"every {trace.step:.0f}s, on {args.nodes} node(s) of "
        f"{Quantity.from_milli(cpu)} CPU and {Quantity.from_int(memory).with_format(_BIN)} memory"
    )
    if args.json:
        print(json.dumps(_as_json(args.trace.name, trace, args.nodes, cpu, memory, results)))
    else:
        console.print(header, highlight=False, soft_wrap=True)
        _print_results(console, results)
    if args.plot is not None:
        _plot_summary(results, args.plot, header)
        written = [args.plot]
        for key in _pods_to_plot(results, trace, pods, args.worst):
            page = args.plot.with_name(f"{args.plot.stem}-{key[0]}-{key[1]}.png")
            _plot_pod(results, key, page)
            written.append(page)
        if not args.json:
            names = ", ".join(str(p) for p in written)
            console.print(f"plot written to {names}", highlight=False, soft_wrap=True)
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
    if args.no_progress or args.json:
        return list(iter_results(trace, policies, keep_series=keep, **common))
    with Progress(
        TextColumn("{task.description:>14}"),
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


# -- the numbers -----------------------------------------------------------------------------


def _metrics(r: PolicyResult) -> list[tuple[str, str, str]]:
    """(label with its unit, short column header, value) for one policy, in table order."""
    saved = "-" if r.memory_saved is None else f"{r.memory_saved:.1%}"
    return [
        ("memory slack", "memory slack", f"{r.memory_slack:.1%}"),
        ("memory-hours saved vs static-peak", "memory saved", saved),
        ("OOM kills (by node pressure)", "OOM kills", _kills(r)),
        ("pauses at the memory limit", "pauses", f"{r.pauses:,}"),
        ("CPU slack", "CPU slack", f"{r.cpu_slack:.1%}"),
        ("CPU demand above request", "CPU over request", f"{r.cpu_shortfall:.1%}"),
        ("resizes", "resizes", f"{r.resizes:,}"),
        ("evictions", "evictions", f"{r.evictions:,}"),
        ("memory requested (GiB-hours)", "memory GiB-hours", f"{r.memory_gib_hours:,.0f}"),
        ("CPU requested (core-hours)", "CPU core-hours", f"{r.cpu_core_hours:,.0f}"),
    ]


def _kills(r: PolicyResult) -> str:
    """OOM kills, with those a node out of memory made (a container under its limit)."""
    if not r.node_pressure_kills:
        return f"{r.ooms:,}"
    return f"{r.ooms:,} ({r.node_pressure_kills:,} by node)"


def _as_json(
    name: str, trace: Trace, nodes: int, cpu: int, memory: int, results: Sequence[PolicyResult]
) -> dict[str, Any]:
    return {
        "trace": name,
        "pods": len(trace.pods()),
        "days": trace.duration / 86400,
        "step_seconds": trace.step,
        "nodes": {"count": nodes, "cpu_millicores": cpu, "memory_bytes": memory},
        "policies": [
            {
                "policy": r.policy,
                "memory_slack": r.memory_slack,
                "memory_saved": r.memory_saved,
                "oom_kills": r.ooms,
                "node_pressure_kills": r.node_pressure_kills,
                "pauses": r.pauses,
                "cpu_slack": r.cpu_slack,
                "cpu_demand_above_request": r.cpu_shortfall,
                "resizes": r.resizes,
                "evictions": r.evictions,
                "deferred": r.deferred,
                "infeasible": r.infeasible,
                "unplaced_samples": r.unplaced_samples,
                "memory_gib_hours": r.memory_gib_hours,
                "cpu_core_hours": r.cpu_core_hours,
            }
            for r in results
        ],
    }


def _print_results(console: Console, results: Sequence[PolicyResult]) -> None:
    """A table when every column fits with its whole name, else a block per policy."""
    widths = _fit(results, console.width)
    if widths is not None:
        console.print(_table(results, widths))
    else:
        console.print(_vertical(results), highlight=False, soft_wrap=True)
    console.print(
        "slack = (requested - used) / requested over every sample; memory saved = "
        "memory-hours saved against static-peak; "
        f"Autopilot (EuroSys '20) reports {AUTOPILOT_SLACK:.0%} memory slack",
        highlight=False,
        soft_wrap=True,
    )
    for r in results:
        base, _, pause = r.policy.partition("+")
        text = DESCRIPTIONS.get(base, "a named variant")
        if pause:
            text += ", pods paused at their memory limit instead of killed"
        console.print(f"  {r.policy}: {text}", highlight=False, soft_wrap=True)


def _column_widths(results: Sequence[PolicyResult], *, whole: bool) -> list[int]:
    """Each column as wide as its longest value and its header, whole (``whole``) or its
    longest word (the header then wraps between words; no word is ever cut)."""
    widths = [max(len("policy"), *(len(r.policy) for r in results))]
    for index, (_, header, _) in enumerate(_metrics(results[0])):
        values = max(len(_metrics(r)[index][2]) for r in results)
        words = [header] if whole else header.split()
        widths.append(max(*(len(w) for w in words), values))
    return widths


def _fit(results: Sequence[PolicyResult], width: int) -> list[int] | None:
    """The column widths of a table that fits ``width`` (None: no table does)."""
    if not results:
        return None
    for whole in (True, False):
        widths = _column_widths(results, whole=whole)
        if sum(widths) + 3 * len(widths) <= width:
            return widths
    return None


def _table(results: Sequence[PolicyResult], widths: Sequence[int]) -> Table:
    table = Table(show_edge=False)
    table.add_column("policy", no_wrap=True, width=widths[0])
    for (_, header, _), width in zip(_metrics(results[0]), widths[1:], strict=True):
        table.add_column(header, justify="right", width=width)
    for r in results:
        table.add_row(r.policy, *(value for _, _, value in _metrics(r)))
    return table


def _vertical(results: Sequence[PolicyResult]) -> str:
    lines = []
    for r in results:
        lines.append(r.policy)
        lines += [f"  {label:<34} {value:>9}" for label, _, value in _metrics(r)]
    return "\n".join(lines)


# -- the plots -------------------------------------------------------------------------------


def _pods_to_plot(
    results: Sequence[PolicyResult], trace: Trace, pods: Sequence[str], worst: int
) -> list[tuple[str, str]]:
    """The (pod, container) pages: every container of the pods asked for, else the worst N
    pods: most OOM kills and pauses under any policy, then most memory requested unused."""
    if pods:
        return [(p, c) for p in pods for c in trace.containers[p]]
    scored: dict[str, tuple[int, int]] = {}
    for r in results:
        if r.policy == "static-peak":
            continue
        for (pod, _), series in r.series.items():
            kills, waste = scored.get(pod, (0, 0))
            scored[pod] = (kills + len(series.ooms), max(waste, series.memory_waste))
    chosen = sorted(scored, key=lambda p: scored[p], reverse=True)[: max(worst, 0)]
    return [(p, c) for p in chosen for c in trace.containers[p]]


def _days_axis(ax: Axes) -> None:
    """Ticks at each day (the trace starts on a Monday), or every 6 hours on a short trace."""
    import matplotlib.ticker as ticker

    names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    low, high = ax.get_xlim()
    if high - low <= 2.5:
        ax.xaxis.set_major_locator(ticker.MultipleLocator(0.25))
        ax.xaxis.set_major_formatter(
            ticker.FuncFormatter(
                lambda x, _: f"{names[int(x) % 7]} {round((x % 1) * 24) % 24:02d}:00"
            )
        )
    else:
        ax.xaxis.set_major_locator(ticker.MultipleLocator(1.0))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: names[int(x) % 7]))
    ax.grid(True, axis="x", color="0.9")


def _plot_summary(results: Sequence[PolicyResult], path: Path, title: str) -> None:
    """One page: the cluster's memory requested per policy against used, over time, OOM
    kills (x) and pauses (o) on each policy's line; bars of slack and of kills beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig = plt.figure(figsize=(14, 8.5))
    grid = fig.add_gridspec(2, 2, height_ratios=(2.2, 1), hspace=0.35, wspace=0.2)
    timeline: Axes = fig.add_subplot(grid[0, :])
    slack_ax: Axes = fig.add_subplot(grid[1, 0])
    kills_ax: Axes = fig.add_subplot(grid[1, 1])
    used_drawn = False
    for index, r in enumerate(results):
        days = [t / 86400 for t in r.cluster.times]
        color = colors[index % len(colors)]
        if not used_drawn and days:
            used = [u / GIB for u in r.cluster.memory_used]
            timeline.fill_between(days, used, color="0.85", label="memory used", step="post")
            used_drawn = True
        requested = [m / GIB for m in r.cluster.memory_requested]
        saved = "" if r.memory_saved is None else f", saved {r.memory_saved:.0%}"
        events = f", {r.ooms} OOM kills" + (f", {r.pauses} pauses" if r.pauses else "")
        label = f"{r.policy}: slack {r.memory_slack:.1%}{saved}{events}"
        timeline.step(days, requested, where="post", color=color, lw=1.2, label=label)
        for moments, marker in ((r.cluster.ooms, "x"), (r.cluster.pauses, "o")):
            if moments:
                at = _values_at(r.cluster.times, requested, moments)
                timeline.plot(
                    [t / 86400 for t in moments],
                    at,
                    marker,
                    color=color,
                    ms=6,
                    mfc="none" if marker == "o" else color,
                    mew=1.2,
                    zorder=3,
                )
    timeline.set_title(title, fontsize=11)
    timeline.set_ylabel("cluster memory (GiB)")
    timeline.set_xlabel("day of the trace (x: an OOM kill, o: a pause at the limit)")
    timeline.set_ylim(bottom=0)
    _days_axis(timeline)
    timeline.legend(loc="upper left", fontsize=9, framealpha=0.9)
    names = [r.policy for r in results]
    bar_colors = [colors[i % len(colors)] for i in range(len(results))]
    bars = slack_ax.bar(names, [r.memory_slack * 100 for r in results], color=bar_colors)
    slack_ax.bar_label(bars, fmt="%.1f%%", fontsize=9)
    slack_ax.axhline(AUTOPILOT_SLACK * 100, color="0.3", ls="--", lw=1)
    slack_ax.set_title(f"memory slack (dashed: Autopilot's {AUTOPILOT_SLACK:.0%})", fontsize=10)
    slack_ax.set_ylabel("memory slack (%)")
    kills_ax.bar(names, [r.ooms for r in results], color=bar_colors, label="OOM kills")
    for index, r in enumerate(results):
        kills_ax.annotate(
            f"{r.ooms}" + (f" + {r.pauses} paused" if r.pauses else ""),
            (index, r.ooms + r.pauses),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
    kills_ax.bar(
        names,
        [r.pauses for r in results],
        bottom=[r.ooms for r in results],
        color="none",
        edgecolor=bar_colors,
        hatch="//",
        label="pauses",
    )
    kills_ax.set_ylabel("OOM kills (hatched: pauses)")
    kills_ax.set_title("OOM kills and pauses at the memory limit", fontsize=10)
    kills_ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    kills_ax.set_ylim(0, max((r.ooms + r.pauses for r in results), default=0) * 1.2 + 1)
    slack_ax.set_ylim(0, max((r.memory_slack for r in results), default=0) * 120 + 1)
    for ax in (slack_ax, kills_ax):
        ax.tick_params(axis="x", labelsize=9, labelrotation=10)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


def _values_at(
    times: Sequence[float], values: Sequence[float], moments: Sequence[float]
) -> list[float]:
    """``values`` at each of ``moments`` (each a time in ``times``, or the one before)."""
    import bisect

    out = []
    for moment in moments:
        index = max(bisect.bisect_right(times, moment) - 1, 0)
        out.append(values[index] if values else 0.0)
    return out


def _plot_pod(results: Sequence[PolicyResult], key: tuple[str, str], path: Path) -> None:
    """One pod's page: its CPU and memory, used and requested per policy, events marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, (cpu_ax, mem_ax) = plt.subplots(2, 1, figsize=(14, 7), sharex=True)
    for index, result in enumerate(results):
        series = result.series.get(key)
        if series is None:
            continue
        days = [t / 86400 for t in series.times]
        color = colors[index % len(colors)]
        if index == 0:
            cpu_ax.plot(days, [c / 1000 for c in series.cpu_used], color="0.6", lw=0.7)
            mem_ax.plot(days, [m / GIB for m in series.memory_used], color="0.6", lw=0.7)
        cpu_ax.step(days, [c / 1000 for c in series.cpu_request], where="post", color=color)
        events = "pauses" if result.policy.endswith("+pause") else "OOM kills"
        label = f"{result.policy}: {len(series.ooms)} {events}"
        mem_ax.step(
            days, [m / GIB for m in series.memory_request], where="post", color=color, label=label
        )
        for marks, marker in ((series.evictions, "v"), (series.ooms, "x")):
            if marks:
                y = [_at(series, t) / GIB for t in marks]
                mem_ax.plot([t / 86400 for t in marks], y, marker, color=color, ms=7, mew=1.5)
    cpu_ax.set_ylabel("CPU (cores)")
    mem_ax.set_ylabel("memory (GiB)")
    cpu_ax.set_title(f"{key[0]} / {key[1]}: usage in grey, requests per policy")
    mem_ax.set_xlabel("day of the trace (x: an OOM kill or a pause, v: an eviction)")
    mem_ax.legend(loc="upper left", fontsize=9)
    for ax in (cpu_ax, mem_ax):
        ax.set_ylim(bottom=0)
        _days_axis(ax)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def _at(series: PodSeries, moment: float) -> float:
    """The memory request in force at ``moment`` (where a mark is drawn)."""
    return _values_at(series.times, series.memory_request, [moment])[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="inplace replay", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
