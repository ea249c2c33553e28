"""Status writers cannot lose each other's decisions (inplace.client.status).

Two writers of one pod's status, each working from its own possibly stale view as the
scheduler's arbiter and the node agent do: first against an in-memory store that behaves as
the API server does (strategic merge, resourceVersion preconditions) in every interleaving
hypothesis finds, then against the real API server, raced a thousand times.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.api.conditions import KUBELET, SCHEDULER, Decision, absent, present, status_update
from inplace.client import PODS, APIConflictError, APINotFoundError, Client, ClusterConfig
from inplace.client.events import EventRecorder
from inplace.client.status import write_status
from inplace.node.actions import ClientActions as NodeClientActions
from inplace.registry.kinds import REGISTRY
from inplace.registry.patch import apply_strategic_merge_patch
from inplace.registry.patchmeta import schema_for_kind
from inplace.scheduler.actions import ClientActions as SchedulerClientActions
from inplace.scheduler.framework import pod_info
from tests.conftest import InProcessServer

_POD = REGISTRY.by_kind("", "Pod")
assert _POD is not None
SCHEMA = schema_for_kind(_POD)
assert SCHEMA is not None


class Store:
    """One pod, written as the API server writes it."""

    def __init__(self) -> None:
        self.rv = 1
        self.pod: dict[str, Any] = {
            "metadata": {"name": "p", "namespace": "default", "uid": "u", "generation": 1},
            "spec": {"containers": [{"name": "main"}]},
            "status": {"conditions": []},
        }
        self._stamp()
        self.conflicts = 0
        self.deciding: int | None = None
        """The generation the write being sent was decided for (checked against rule 2)."""

    def check_rule(self, body: dict[str, Any]) -> None:
        """Rule 2, checked as the server applies a write to the shared type."""
        assert self.deciding is not None
        for item in body["status"].get("conditions") or ():
            if item["type"] != "PodResizePending":
                continue
            stored = self.condition("PodResizePending")
            if stored is not None:
                assert stored["observedGeneration"] <= self.deciding, (stored, item)
            assert self.deciding >= self.pod["metadata"]["generation"], (self.deciding, item)
            assert body.get("metadata", {}).get("resourceVersion"), "shared type unguarded"

    def _stamp(self) -> None:
        self.pod["metadata"]["resourceVersion"] = str(self.rv)

    def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.pod)

    def resize(self) -> None:
        """A spec change: a new generation."""
        self.pod["metadata"]["generation"] += 1
        self.rv += 1
        self._stamp()

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != self.pod["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise APIConflictError(409, "Conflict", "the object has been modified")
        if self.deciding is not None:
            self.check_rule(body)
        assert SCHEMA is not None
        self.pod = apply_strategic_merge_patch(self.pod, {"status": body["status"]}, SCHEMA)
        self.rv += 1
        self._stamp()
        return self.snapshot()

    async def reread(self) -> dict[str, Any]:
        return self.snapshot()

    async def write(
        self, view: dict[str, Any], writer: str, decisions: dict[str, Decision]
    ) -> dict[str, Any]:
        def compute(pod: Any) -> Any:
            return status_update(pod, writer=writer, now="T", decisions=decisions)

        written = await write_status(view, compute, send=self.send, reread=self.reread)
        assert written is not None
        return written

    def condition(self, ctype: str) -> dict[str, Any] | None:
        for cond in self.pod["status"]["conditions"]:
            if cond["type"] == ctype:
                return dict(cond)
        return None


async def test_two_writers_of_different_conditions_keep_both() -> None:
    store = Store()
    arbiter_view = agent_view = store.snapshot()  # both start from the same revision
    arbiter_view = await store.write(
        arbiter_view, SCHEDULER, {"PodResizeScheduled": present(1, "True")}
    )
    # The agent has not seen the arbiter's write; its patch names only its own condition.
    agent_view = await store.write(agent_view, KUBELET, {"Ready": present(1, "True")})
    assert store.condition("PodResizeScheduled") is not None
    assert store.condition("Ready") is not None
    assert store.conflicts == 0  # neither needed a precondition


async def test_a_stale_removal_never_erases_a_newer_decision() -> None:
    """Case (a) of the issue: the agent's "no resize pending" for generation 2 must not
    erase the arbiter's Infeasible for generation 3, whatever its view."""
    store = Store()
    view = await store.write(
        store.snapshot(), SCHEDULER, {"PodResizePending": present(2, "True", "Deferred")}
    )
    agent_view = copy.deepcopy(view)  # the agent saw Pending at generation 2...
    await store.write(view, SCHEDULER, {"PodResizePending": present(3, "True", "Infeasible")})
    # ...and decides, for generation 2, that nothing is pending: its guarded delete conflicts,
    # it re-reads, and the rule drops its older decision.
    await store.write(agent_view, KUBELET, {"PodResizePending": absent(2)})
    pending = store.condition("PodResizePending")
    assert pending is not None and pending["observedGeneration"] == 3
    assert store.conflicts == 1
    # A decision for generation 3 or later may remove it.
    await store.write(store.snapshot(), KUBELET, {"PodResizePending": absent(3)})
    assert store.condition("PodResizePending") is None


STEP = st.tuples(
    st.sampled_from([SCHEDULER, KUBELET]),
    st.integers(min_value=0, max_value=3),  # how many revisions behind the writer's view is
    st.sampled_from(["present", "absent", "none"]),  # its decision on the shared type
    st.booleans(),  # the pod is resized (a new generation) before this step
)


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=25))
def test_no_interleaving_loses_a_decision(steps: list[tuple[str, int, str, bool]]) -> None:
    """Writers decide their own type, and maybe the shared ``PodResizePending``, for the
    generation of their view, which is up to three revisions old (never older than their
    own last write, as the components keep the pod their last write returned). The store
    checks rule 2 on every write it applies; afterwards each own type holds its writer's
    last decision."""
    own = {SCHEDULER: "PodResizeScheduled", KUBELET: "Ready"}

    async def run() -> None:
        store = Store()
        history = [store.snapshot()]
        last_own_rv = {SCHEDULER: 0, KUBELET: 0}
        last_message: dict[str, str] = {}
        for i, (writer, behind, shared, resized) in enumerate(steps):
            if resized:
                store.resize()
                history.append(store.snapshot())
            candidates = [
                h
                for h in history[-1 - behind :]
                if int(h["metadata"]["resourceVersion"]) >= last_own_rv[writer]
            ]
            view = candidates[0]
            generation = view["metadata"]["generation"]
            decisions = {own[writer]: present(generation, "True", "", f"s{i}")}
            if shared == "present":
                decisions["PodResizePending"] = present(generation, "True", "Deferred", f"s{i}")
            elif shared == "absent":
                decisions["PodResizePending"] = absent(generation)
            store.deciding = generation
            written = await store.write(view, writer, decisions)
            last_own_rv[writer] = int(written["metadata"]["resourceVersion"])
            last_message[writer] = f"s{i}"
            history.append(store.snapshot())
        for writer, ctype in own.items():
            if writer in last_message:
                cond = store.condition(ctype)
                assert cond is not None and cond["message"] == last_message[writer], ctype

    asyncio.run(run())


# -- the real API server ---------------------------------------------------------------------

ROUNDS = 1000


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "raced", "namespace": "default"},
        "spec": {
            "nodeName": "race-node",  # no agent serves it: only the two writers below
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ],
        },
    }


def _condition(pod: dict[str, Any], ctype: str) -> dict[str, Any]:
    for cond in pod["status"].get("conditions") or ():
        if cond["type"] == ctype:
            return dict(cond)
    raise AssertionError(f"{ctype} lost: {pod['status'].get('conditions')}")


async def test_the_arbiters_and_the_agents_writes_race_and_none_is_lost(
    apiserver: InProcessServer,
) -> None:
    """Each round the pod is resized (a new generation); the arbiter, which saw it, writes
    ``PodResizeScheduled`` and ``PodResizePending`` for it, while the agent, one generation
    behind, writes ``Ready`` and decides for its generation that no resize is pending, at the
    same moment, through the components' real actions. After every round each decision of
    the round is there."""
    config = ClusterConfig(server=apiserver.url, token=apiserver.token)
    async with Client(config) as admin, Client(config) as sched, Client(config) as node:
        created = await admin.create(PODS, _pod(), namespace="default")
        arbiter = SchedulerClientActions(sched, EventRecorder(sched, component=SCHEDULER))
        agent = NodeClientActions(node, "race-node")
        conflicts = 0
        send = node.patch

        async def counting_patch(*args: Any, **kwargs: Any) -> dict[str, Any]:
            nonlocal conflicts
            try:
                return await send(*args, **kwargs)
            except APIConflictError:
                conflicts += 1
                raise

        node.patch = counting_patch  # type: ignore[method-assign]
        agent_view = created
        for r in range(ROUNDS):
            resize = {"spec": {"containers": [{"name": "main", "resources": {
                "requests": {"cpu": f"{100 + (r % 2)}m"}}}]}}  # fmt: skip
            fresh = await admin.patch(
                PODS,
                "raced",
                resize,
                namespace="default",
                subresource="resize",
                patch_type="strategic",
            )
            generation = fresh["metadata"]["generation"]
            info = pod_info(fresh)
            arbiter_decisions = {
                "PodResizeScheduled": present(generation, "True", "", f"r{r}"),
                "PodResizePending": present(generation, "True", "Deferred", f"r{r}"),
            }
            agent_generation = agent_view["metadata"]["generation"]
            agent_decisions = {
                "Ready": present(agent_generation, "True" if r % 2 else "False", "", f"r{r}"),
                "PodResizePending": absent(agent_generation),
            }

            def agent_compute(pod: Any, decisions: dict[str, Decision] = agent_decisions) -> Any:
                return status_update(pod, writer=KUBELET, now="T", decisions=decisions)

            _, written = await asyncio.gather(
                arbiter.write_status(info, conditions=arbiter_decisions),
                agent.write_pod_status(_Ref(), agent_view, agent_compute),
            )
            assert written is not None
            agent_view = written
            stored = await admin.get(PODS, "raced", namespace="default")
            pending = _condition(stored, "PodResizePending")
            assert (pending["observedGeneration"], pending["message"]) == (generation, f"r{r}")
            assert _condition(stored, "PodResizeScheduled")["message"] == f"r{r}"
            assert _condition(stored, "Ready")["message"] == f"r{r}"
        assert conflicts > 0, "the writers never actually raced"
        print(f"\n[race] {ROUNDS} rounds, {conflicts} conflicts re-read and re-decided")
        try:
            await admin.delete(PODS, "raced", namespace="default", grace_period_seconds=0)
        except APINotFoundError:
            pass


class _Ref:
    namespace = "default"
    name = "raced"
    uid = ""
