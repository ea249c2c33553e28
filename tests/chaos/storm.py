"""The storm: a seeded random sequence of writes through the API, each one logged and, when
the server acknowledged it (2xx), kept to be checked against the final state and the watch
history (invariant 4)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections import Counter
from typing import Any

from inplace.client import Client
from inplace.client.api import DEPLOYMENTS, JOBS, PODDISRUPTIONBUDGETS, PODS
from inplace.client.errors import APIConnectionError, APIError
from tests.chaos import workloads
from tests.chaos.workloads import NAMESPACE

MAX_PODS = 7
MAX_DEPLOYMENTS = 3
MAX_JOBS = 2


@dataclasses.dataclass
class Write:
    """One write the storm sent, acknowledged or not, in order."""

    kind: str  # "create pod", "resize pod (deferred)", ...
    target: str  # the kind of object: pod, deployment, budget, job
    name: str
    value: Any  # what the write set: resources, replicas, minAvailable; None for a delete
    acked: bool
    uid: str | None = None
    rv: int | None = None


@dataclasses.dataclass
class StandalonePod:
    name: str
    guaranteed: bool
    cpu: int
    memory: int


@dataclasses.dataclass
class Storm:
    rng: random.Random
    client: Client
    log: list[str] = dataclasses.field(default_factory=list)
    writes: list[Write] = dataclasses.field(default_factory=list)
    pods: dict[str, StandalonePod] = dataclasses.field(default_factory=dict)
    deployments: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    jobs: set[str] = dataclasses.field(default_factory=set)
    budgets: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> app
    operations: int = 0
    acknowledged: int = 0
    errors: Counter[str] = dataclasses.field(default_factory=Counter)
    error_samples: dict[str, str] = dataclasses.field(default_factory=dict)
    """The first message of each kind of refusal, to tell a clear error from a bug."""
    """How the unacknowledged writes were answered (status code and reason, or the
    connection error): what a fault looked like from the client's side."""
    serial: int = 0
    started: float = dataclasses.field(default_factory=time.monotonic)

    def say(self, line: str) -> None:
        self.log.append(f"{time.monotonic() - self.started:7.2f} {line}")

    def fresh(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial}"

    async def send(self, kind: str, name: str, value: Any, call: Any) -> dict[str, Any] | None:
        """Send one write; log it; keep it with whether it was acknowledged."""
        self.operations += 1
        try:
            answer: dict[str, Any] = await call
        except (APIError, APIConnectionError, OSError, TimeoutError) as exc:
            self.writes.append(Write(kind, kind.split(" ")[1], name, value, False))
            code = getattr(exc, "status", None)
            reason = getattr(exc, "reason", None) or ""
            answer_kind = f"{code} {reason}" if code else type(exc).__name__
            self.errors[answer_kind] += 1
            self.error_samples.setdefault(answer_kind, f"{kind}: {str(exc)[:200]}")
            self.say(f"{kind} {name} {value!r}: {type(exc).__name__} {str(exc)[:120]}")
            return None
        self.acknowledged += 1
        meta = answer.get("metadata") or {}
        rv = meta.get("resourceVersion")
        target = kind.split(" ")[1]
        self.writes.append(
            Write(kind, target, name, value, True, meta.get("uid"), int(rv) if rv else None)
        )
        self.say(f"{kind} {name} {value!r}: ok rv={rv}")
        return answer

    async def run(self, seconds: float, stop: asyncio.Event) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not stop.is_set():
            await self.step()
            await asyncio.sleep(self.rng.uniform(0.05, 0.4))

    async def step(self) -> None:
        ops = [
            (self.create_pod, 3 if len(self.pods) < MAX_PODS else 0),
            (self.delete_pod, 1 if self.pods else 0),
            (self.resize_pod, 6 if self.pods else 0),
            (self.create_deployment, 1 if len(self.deployments) < MAX_DEPLOYMENTS else 0),
            (self.scale_deployment, 1 if self.deployments else 0),
            (self.resize_deployment, 2 if self.deployments else 0),
            (self.delete_deployment, 0.4 if self.deployments else 0),
            (self.create_job, 1 if len(self.jobs) < MAX_JOBS else 0),
            (self.delete_job, 0.3 if self.jobs else 0),
            (self.change_budget, 1 if self.deployments else 0),
        ]
        op = self.rng.choices([o for o, _ in ops], [w for _, w in ops])[0]
        await op()

    # -- pods ------------------------------------------------------------------------------

    async def create_pod(self) -> None:
        name = self.fresh("pod")
        body = workloads.pod(self.rng, name)
        main = body["spec"]["containers"][0]["resources"]["requests"]
        cpu, memory = int(main["cpu"].removesuffix("m")), int(main["memory"].removesuffix("Mi"))
        guaranteed = (
            body["spec"]["containers"][0]["resources"]["limits"]["memory"] == main["memory"]
        )
        value = workloads.resources(cpu, memory, guaranteed=guaranteed)
        if await self.send("create pod", name, value, self.client.create(PODS, body)):
            self.pods[name] = StandalonePod(name, guaranteed, cpu, memory)

    async def delete_pod(self) -> None:
        name = self.rng.choice(sorted(self.pods))
        del self.pods[name]  # gone or not, the storm no longer counts on it
        await self.send(
            "delete pod", name, None, self.client.delete(PODS, name, namespace=NAMESPACE)
        )

    async def resize_pod(self) -> None:
        pod = self.pods[self.rng.choice(sorted(self.pods))]
        kind = self.rng.choices(workloads.RESIZE_KINDS, (4, 3, 2, 1, 1))[0]
        cpu, memory = workloads.resize_target(kind, self.rng, pod.cpu, pod.memory)
        value = workloads.resources(cpu, memory, guaranteed=pod.guaranteed)
        body = {"spec": {"containers": [{"name": "main", "resources": value}]}}
        call = self.client.patch(
            PODS, pod.name, body, patch_type="strategic", namespace=NAMESPACE, subresource="resize"
        )
        if await self.send(f"resize pod ({kind})", pod.name, value, call):
            pod.cpu, pod.memory = cpu, memory

    # -- deployments and budgets -----------------------------------------------------------

    async def create_deployment(self) -> None:
        name = self.fresh("web")
        body = workloads.deployment(self.rng, name)
        spec = body["spec"]
        requests = spec["template"]["spec"]["containers"][0]["resources"]["requests"]
        state = {
            "replicas": spec["replicas"],
            "cpu": int(requests["cpu"].removesuffix("m")),
            "memory": int(requests["memory"].removesuffix("Mi")),
        }
        if await self.send(
            "create deployment", name, dict(state), self.client.create(DEPLOYMENTS, body)
        ):
            self.deployments[name] = state

    async def scale_deployment(self) -> None:
        name = self.rng.choice(sorted(self.deployments))
        replicas = self.rng.randint(0, 3)
        body = {"spec": {"replicas": replicas}}
        call = self.client.patch(DEPLOYMENTS, name, body, namespace=NAMESPACE)
        self.deployments[name]["replicas"] = replicas  # unacknowledged, it may still land
        await self.send("scale deployment", name, {"replicas": replicas}, call)

    async def resize_deployment(self) -> None:
        name = self.rng.choice(sorted(self.deployments))
        old = self.deployments[name]
        cpu = self.rng.choice((25, 50, 75, 100, 150, 300))
        memory = self.rng.choice((32, 48, 64, 96))
        resources = workloads.resources(cpu, memory, guaranteed=False)
        body = {
            "spec": {
                "template": {"spec": {"containers": [{"name": "main", "resources": resources}]}}
            }
        }
        call = self.client.patch(
            DEPLOYMENTS, name, body, patch_type="strategic", namespace=NAMESPACE
        )
        old.update(cpu=cpu, memory=memory)
        await self.send("resize deployment", name, {"cpu": cpu, "memory": memory}, call)

    async def delete_deployment(self) -> None:
        name = self.rng.choice(sorted(self.deployments))
        del self.deployments[name]
        for budget, app in list(self.budgets.items()):
            if app == name:
                del self.budgets[budget]
                await self.send(
                    "delete budget",
                    budget,
                    None,
                    self.client.delete(PODDISRUPTIONBUDGETS, budget, namespace=NAMESPACE),
                )
        await self.send(
            "delete deployment",
            name,
            None,
            self.client.delete(
                DEPLOYMENTS, name, namespace=NAMESPACE, propagation_policy="Background"
            ),
        )

    async def change_budget(self) -> None:
        app = self.rng.choice(sorted(self.deployments))
        name = f"pdb-{app}"
        min_available = self.rng.randint(0, 2)
        if name not in self.budgets:
            call = self.client.create(
                PODDISRUPTIONBUDGETS, workloads.budget(name, app, min_available)
            )
            if await self.send("create budget", name, min_available, call):
                self.budgets[name] = app
        elif self.rng.random() < 0.3:
            del self.budgets[name]
            call = self.client.delete(PODDISRUPTIONBUDGETS, name, namespace=NAMESPACE)
            await self.send("delete budget", name, None, call)
        else:
            body = {"spec": {"minAvailable": min_available}}
            call = self.client.patch(PODDISRUPTIONBUDGETS, name, body, namespace=NAMESPACE)
            await self.send("update budget", name, min_available, call)

    # -- jobs ------------------------------------------------------------------------------

    async def create_job(self) -> None:
        name = self.fresh("job")
        if await self.send(
            "create job", name, None, self.client.create(JOBS, workloads.job(self.rng, name))
        ):
            self.jobs.add(name)

    async def delete_job(self) -> None:
        name = self.rng.choice(sorted(self.jobs))
        self.jobs.discard(name)
        call = self.client.delete(JOBS, name, namespace=NAMESPACE, propagation_policy="Background")
        await self.send("delete job", name, None, call)
