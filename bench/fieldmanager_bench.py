"""Field manager benchmark: the CPU cost of keeping managedFields on one write.

Every write the API server takes computes the object's new managedFields, so this is what
field management adds to each PATCH, PUT and create. Measured in this process (no server,
no network), per operation, on the objects `bench/api_bench.py` writes. Baseline in the same
run: the JSON round trip (`orjson` dumps + loads of the pod) that every patch already pays to
copy the stored object.

    python bench/fieldmanager_bench.py [--rounds 3000] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from inplace.registry.fieldmanager import field_manager
from inplace.registry.kinds import REGISTRY
from inplace.registry.strategy import apply_defaults

PODS = REGISTRY.by_kind("", "Pod")
DEPLOYMENTS = REGISTRY.by_kind("apps", "Deployment")
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pod-00001",
            "namespace": "default",
            "labels": {"app": "bench", "shard": "1"},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "1d"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "200m", "memory": "128Mi"},
                    },
                }
            ]
        },
    }


def stored_pod() -> dict[str, Any]:
    """A pod as the server stores it once created and run: a creator's and a node's entry."""
    assert PODS is not None
    obj = pod()
    apply_defaults(PODS, obj, on_create=False)
    obj["metadata"]["managedFields"] = field_manager(PODS).update(None, obj, "kubectl", T0)
    obj["metadata"]["uid"] = "0b1c"
    running = copy.deepcopy(obj)
    running["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": T0}
            for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0}],
        "podIP": "127.0.0.1",
    }
    running["metadata"]["managedFields"] = field_manager(PODS, "status").update(
        obj, running, "kubelet", T0
    )
    result: dict[str, Any] = orjson.loads(orjson.dumps(running))
    return result


def timed(
    name: str, rounds: int, prepare: Callable[[int], Any], run: Callable[[Any], Any]
) -> float:
    """Microseconds per ``run`` (printed), over ``rounds`` inputs made beforehand."""
    inputs = [prepare(i) for i in range(rounds)]
    started = time.perf_counter()
    for value in inputs:
        run(value)
    elapsed = (time.perf_counter() - started) / rounds
    print(f"{name:<48} {elapsed * 1e6:8.1f} µs/op", flush=True)
    return elapsed * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    rounds = args.rounds
    figures: dict[str, float] = {}
    assert PODS is not None and DEPLOYMENTS is not None
    live = stored_pod()
    raw = orjson.dumps(live)

    def copy_of(_: int) -> bytes:
        return raw

    figures["round_trip_us"] = timed(
        "baseline: JSON round trip of the pod", rounds, copy_of, orjson.loads
    )

    def labelled(i: int) -> dict[str, Any]:
        new: dict[str, Any] = orjson.loads(raw)
        new["metadata"]["labels"]["bench-seq"] = str(i)
        return new

    main_fm, status_fm = field_manager(PODS), field_manager(PODS, "status")
    figures["label_patch_us"] = timed(
        "update: a label patch (api_bench's PATCH)",
        rounds,
        labelled,
        lambda new: main_fm.update(live, new, "bench", T1),
    )

    def condition(i: int) -> dict[str, Any]:
        new: dict[str, Any] = orjson.loads(raw)
        new["status"]["conditions"].append(
            {"type": "PodResizeInProgress", "status": "True", "observedGeneration": i}
        )
        return new

    figures["status_patch_us"] = timed(
        "update: a /status patch adding a condition",
        rounds,
        condition,
        lambda new: status_fm.update(live, new, "kubelet", T1),
    )
    timed(
        "update: a write that changes nothing",
        rounds,
        lambda _: orjson.loads(raw),
        lambda new: main_fm.update(live, new, "bench", T1),
    )

    def created(_: int) -> dict[str, Any]:
        obj = pod()
        apply_defaults(PODS, obj, on_create=False)
        return obj

    figures["create_us"] = timed(
        "create: a new pod", rounds, created, lambda obj: main_fm.update(None, obj, "kubectl", T0)
    )
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [pod()["spec"]["containers"][0]]},
            },
        },
    }
    deployments = field_manager(DEPLOYMENTS)
    applied = deployments.apply(None, config, "kubectl", T0)
    assert applied is not None
    applied = orjson.loads(orjson.dumps(applied))
    timed(
        "apply: a deployment, again (no change)",
        max(rounds // 10, 1),
        lambda _: config,
        lambda c: deployments.apply(applied, c, "kubectl", T1),
    )

    def rescaled(i: int) -> dict[str, Any]:
        return {**config, "spec": {**config["spec"], "replicas": 3 + i % 5}}

    figures["apply_us"] = timed(
        "apply: a deployment with new replicas",
        max(rounds // 10, 1),
        rescaled,
        lambda c: deployments.apply(applied, c, "kubectl", T1),
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
