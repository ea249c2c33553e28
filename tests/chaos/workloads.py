"""What the storm creates: pods, Deployments, Jobs and budgets, as plain manifests.

Kept deliberately simple (one container, no init containers, no pod overhead) so that the
checker's own accounting (`checker.pod_charge`) is a sum over containers that cannot share a
bug with the scheduler's resource math.
"""

from __future__ import annotations

import random
from typing import Any

from inplace.api.annotations import OOM_KILL_DISABLE, RESIZE_POLICY

NAMESPACE = "chaos"
NODE_CPU_MILLI = 1000
NODE_MEMORY_MI = 1024

SLEEP = ["sh", "-c", "exec sleep 100000"]

SPIKE = """\
import os, time
mb, every = int(os.environ["SPIKE_MB"]), float(os.environ["SPIKE_EVERY"])
while True:
    time.sleep(every)
    b = bytearray(mb * 2**20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    time.sleep(1)
    del b
"""
"""A workload whose memory jumps by SPIKE_MB every SPIKE_EVERY seconds: over a small limit it
is OOM-killed (or paused at the limit with `inplace.dev/oom-kill-disable`)."""


def resources(cpu_milli: int, memory_mi: int, *, guaranteed: bool) -> dict[str, Any]:
    """Requests and limits; Burstable pods get limits at twice the requests, so a resize that
    keeps the ratio keeps the QoS class."""
    requests = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mi}Mi"}
    factor = 1 if guaranteed else 2
    limits = {"cpu": f"{cpu_milli * factor}m", "memory": f"{memory_mi * factor}Mi"}
    return {"requests": requests, "limits": limits}


def container(
    rng: random.Random, cpu_milli: int, memory_mi: int, *, guaranteed: bool, spike: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "main",
        "image": "busybox",
        "command": SLEEP,
        "resources": resources(cpu_milli, memory_mi, guaranteed=guaranteed),
    }
    if spike:
        body["image"] = "python"
        body["command"] = ["python3", "-c", SPIKE]
        body["env"] = [
            {"name": "SPIKE_MB", "value": str(rng.choice((40, 200)))},
            {"name": "SPIKE_EVERY", "value": str(rng.choice((3, 6)))},
        ]
    if rng.random() < 0.3:
        body["resizePolicy"] = [
            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
            {"resourceName": "memory", "restartPolicy": "RestartContainer"},
        ]
    return body


def pod(rng: random.Random, name: str) -> dict[str, Any]:
    spike = rng.random() < 0.25
    annotations = {}
    if spike and rng.random() < 0.5:
        annotations[OOM_KILL_DISABLE] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"chaos": "pod"},
            "annotations": annotations,
        },
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [
                container(
                    rng,
                    rng.choice((50, 100, 150)),
                    rng.choice((48, 64, 96)),
                    guaranteed=rng.random() < 0.4,
                    spike=spike,
                )
            ],
        },
    }


def deployment(rng: random.Random, name: str) -> dict[str, Any]:
    annotations = {RESIZE_POLICY: "InPlacePreferred"} if rng.random() < 0.5 else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": rng.randint(1, 3),
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {
                    "terminationGracePeriodSeconds": 2,
                    "containers": [
                        container(rng, rng.choice((50, 100)), 48, guaranteed=False, spike=False)
                    ],
                },
            },
        },
    }


def job(rng: random.Random, name: str) -> dict[str, Any]:
    seconds = rng.choice((2, 4, 6))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "completions": rng.randint(2, 3),
            "parallelism": 2,
            "completionMode": "Indexed",
            "backoffLimit": 20,
            "template": {
                "metadata": {"labels": {"job": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 2,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["sh", "-c", f"exec sleep {seconds}"],
                            "resources": resources(50, 32, guaranteed=False),
                        }
                    ],
                },
            },
        },
    }


def budget(name: str, app: str, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


RESIZE_KINDS = ("fit-up", "fit-down", "deferred", "infeasible", "tiny")


def resize_target(kind: str, rng: random.Random, cpu_milli: int, memory_mi: int) -> tuple[int, int]:
    """New (cpu milli, memory Mi) requests for a resize of ``kind`` from the given size."""
    if kind == "fit-up":
        return cpu_milli + rng.choice((25, 50, 100)), memory_mi + rng.choice((8, 16, 32))
    if kind == "fit-down":
        return max(25, cpu_milli - rng.choice((25, 50))), max(24, memory_mi - 16)
    if kind == "deferred":  # fits an empty node, rarely the node it is on
        return rng.choice((500, 700, 850)), rng.choice((384, 512))
    if kind == "infeasible":  # more than any node has
        return NODE_CPU_MILLI + 500, memory_mi
    return cpu_milli, 12  # tiny: near what a spiking process uses (the kernel may refuse)
