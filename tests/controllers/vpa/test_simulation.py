"""The replay: the simulated cluster and the metrics, on tiny hand-computed traces and on
the shipped day trace."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from inplace.controllers.vpa.settings import MIB, variant
from inplace.controllers.vpa.simulation import Policy, Simulation, default_nodes
from inplace.controllers.vpa.trace import read_trace, workload_of

TRACES = Path(__file__).parent / "traces"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def run(path: Path, policy: Policy, *, memory: int = 8 * 1024 * MIB) -> Simulation:
    sim = Simulation(
        read_trace(path),
        policy,
        nodes=1,
        node_cpu_milli=4000,
        node_memory=memory,
        keep_series=True,
    )
    sim.run()
    return sim


def test_static_peak_slack_is_hand_computable(tmp_path: Path) -> None:
    # Requested 200Mi/1 core twice (the peaks); used 100+200 Mi and 0.5+1 cores.
    path = write(tmp_path, "0,a-0,main,500m,100Mi\n60,a-0,main,1,200Mi\n")
    result = run(path, Policy.of("static-peak")).result
    assert result.memory_slack == pytest.approx(100 / 400)
    assert result.cpu_slack == pytest.approx(0.5 / 2)
    assert result.ooms == result.resizes == 0
    assert result.memory_gib_hours == pytest.approx(400 * MIB * 60 / 3600 / 1024**3)


def test_an_oom_is_counted_reported_and_resized_away(tmp_path: Path) -> None:
    # The pod is admitted at its hand-set peak (300Mi) but a VPA shrinks it to what it
    # used at first; the step to 300Mi is then an OOM kill, after which it is resized.
    lines = [f"{60 * i},svc-0,main,100m,{100 if i < 30 else 300}Mi" for i in range(40)]
    sim = run(write(tmp_path, "\n".join(lines) + "\n"), Policy.of("inplace"))
    result = sim.result
    assert result.ooms >= 1
    assert result.resizes >= 2  # shrunk, then grown after the OOM
    series = result.series[("svc-0", "main")]
    assert series.ooms and series.ooms[0] == 30 * 60
    assert series.memory_request[-1] > 300 * MIB
    paused = run(write(tmp_path, "\n".join(lines) + "\n"), Policy.of("inplace+pause")).result
    assert paused.ooms == 0 and paused.pauses == result.ooms


def test_a_node_out_of_memory_kills_the_container_furthest_above_its_request(
    tmp_path: Path,
) -> None:
    # On a 1Gi node: a and b sit at 200Mi for 90 minutes (the VPA shrinks them to ~211Mi
    # and gives them limits of twice that); c joins at 300Mi after an hour. Then, within
    # their limits, a bursts to 400Mi for one minute and b rises to 380Mi: 1080Mi in all,
    # more than the node has.
    lines = []
    for i in range(94):
        lines.append(f"{60 * i},a-0,main,100m,{400 if i == 90 else 200}Mi")
        lines.append(f"{60 * i},b-0,main,100m,{200 if i < 90 else 380}Mi")
        if i >= 60:
            lines.append(f"{60 * i},c-0,main,100m,300Mi")
    trace = write(tmp_path, "\n".join(lines) + "\n")
    result = run(trace, Policy.of("inplace"), memory=1024 * MIB).result
    assert result.node_pressure_kills == result.ooms == 1
    assert result.series[("a-0", "main")].ooms == [90 * 60]  # the furthest above its request
    assert not result.series[("b-0", "main")].ooms and not result.series[("c-0", "main")].ooms
    # Pods opted into pausing at their limit are killed all the same: the node is out.
    paused = run(trace, Policy.of("inplace+pause"), memory=1024 * MIB).result
    assert paused.node_pressure_kills == paused.ooms == 1 and paused.pauses == 0
    # Under upstream each limit is its request: the bursts are kills of their own.
    upstream = run(trace, Policy.of("upstream"), memory=1024 * MIB).result
    assert upstream.node_pressure_kills == 0 < upstream.ooms


def test_upstream_grows_a_steady_pod_to_its_margin_as_confidence_builds(tmp_path: Path) -> None:
    lines = [f"{60 * i},svc-0,main,100m,300Mi" for i in range(60)]
    result = run(write(tmp_path, "\n".join(lines) + "\n"), Policy.of("upstream")).result
    # Hand-set at its peak (300Mi); the lower bound (p50 + 15%, times a confidence factor
    # that nears 1 as history builds) passes 300Mi within the hour: one resize up.
    series = result.series[("svc-0", "main")]
    assert result.ooms == 0
    assert 1 <= result.resizes <= 2
    assert series.memory_request[-1] >= int(300 * MIB * 1.15)


def test_a_resize_larger_than_the_node_is_infeasible_and_evicts(tmp_path: Path) -> None:
    lines = [f"{60 * i},svc-0,main,100m,{100 if i < 5 else 900}Mi" for i in range(20)]
    sim = run(write(tmp_path, "\n".join(lines) + "\n"), Policy.of("inplace"), memory=1024 * MIB)
    assert sim.result.infeasible >= 1
    assert sim.result.evictions >= 1


def test_jobs_are_told_apart_from_replicas(tmp_path: Path) -> None:
    text = "0,etl-0,main,1,100Mi\n60,etl-0,main,1,100Mi\n120,etl-1,main,1,100Mi\n"
    text += "0,web-0,main,1,100Mi\n0,web-1,main,1,100Mi\n120,web-1,main,1,100Mi\n"
    sim = run(write(tmp_path, text), Policy.of("upstream"))
    assert sim.vpas["etl"]["spec"]["targetRef"]["kind"] == "Job"
    assert sim.vpas["web"]["spec"]["targetRef"]["kind"] == "Deployment"
    assert sim.vpas["web"]["spec"]["updatePolicy"] == {
        "updateMode": "InPlaceOrRecreate",
        "minReplicas": 1,
    }


def test_unknown_policies_are_refused() -> None:
    with pytest.raises(KeyError):
        Policy.of("clairvoyant")
    with pytest.raises(KeyError):
        Policy.of("upstream+magic")


def test_the_shipped_day_trace() -> None:
    trace = read_trace(TRACES / "day.csv")
    cpu, memory = default_nodes(trace, 3)
    results = {}
    for name in ("static-peak", "upstream", "inplace"):
        sim = Simulation(trace, Policy.of(name), nodes=3, node_cpu_milli=cpu, node_memory=memory)
        results[name] = sim.run()
    assert {"etl", "queue", "web"} == {workload_of(p) for p in trace.pods()}
    assert results["static-peak"].ooms == 0
    for result in results.values():
        assert result.unplaced_samples == 0
        assert 0.0 < result.memory_slack < 1.0
    # The in-place variant follows usage: it asks for less memory than hand-set peaks.
    assert results["inplace"].memory_requested < results["static-peak"].memory_requested
    assert results["inplace"].resizes > results["upstream"].resizes


def test_settings_reach_the_simulation() -> None:
    recommender, updater = variant("inplace")
    trace = read_trace(TRACES / "day.csv")
    resizes = {}
    for interval in (updater.updater_interval, 10.0**9):
        sim = Simulation(
            trace,
            Policy("x", recommender, dataclasses.replace(updater, updater_interval=interval)),
            nodes=3,
            node_cpu_milli=8000,
            node_memory=16 * 1024 * MIB,
        )
        resizes[interval] = sim.run().resizes
    # One updater pass in all (at the first step) resizes each pod at most once.
    assert resizes[10.0**9] <= len(trace.pods()) < resizes[updater.updater_interval]
