"""``pods/resize`` over HTTP: the strategy takes only the containers' resources and resize
policies from the request, and upstream's end-to-end cases (``test/e2e/common/node/
pod_resize.go``) get upstream's answers. Their patches are the strategic merge patches
upstream's ``podresize.MakeResizePatch`` builds (``CreateTwoWayMergePatch`` of the pod before
and after), written here by :func:`resize_patch`; what the node does with an accepted resize
is the node agent's business and is tested end to end elsewhere."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.apiserver.support import API, PODS, make_api
from tests.conftest import InProcessServer

ORIGINAL_CPU, ORIGINAL_CPU_LIMIT = "20m", "30m"
REDUCED_CPU, REDUCED_CPU_LIMIT = "15m", "25m"
INCREASED_CPU, INCREASED_CPU_LIMIT = "25m", "35m"
ORIGINAL_MEM, ORIGINAL_MEM_LIMIT = "35Mi", "45Mi"
REDUCED_MEM, REDUCED_MEM_LIMIT = "30Mi", "40Mi"
INCREASED_MEM, INCREASED_MEM_LIMIT = "40Mi", "50Mi"


@dataclass
class Ctr:
    """Upstream's ``ResizableContainerInfo``: a name, resources, resize policies."""

    name: str
    cpu_req: str = ""
    cpu_lim: str = ""
    mem_req: str = ""
    mem_lim: str = ""
    eph_req: str = ""
    policies: dict[str, str] = field(default_factory=dict)

    def resources(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        requests = {"cpu": self.cpu_req, "memory": self.mem_req, "ephemeral-storage": self.eph_req}
        limits = {"cpu": self.cpu_lim, "memory": self.mem_lim}
        if any(requests.values()):
            out["requests"] = {k: v for k, v in requests.items() if v}
        if any(limits.values()):
            out["limits"] = {k: v for k, v in limits.items() if v}
        return out

    def container(self) -> dict[str, Any]:
        c: dict[str, Any] = {
            "name": self.name,
            "image": "busybox",
            "command": ["sh", "-c", "sleep 1d"],
            "resources": self.resources(),
        }
        if self.policies:
            c["resizePolicy"] = [
                {"resourceName": r, "restartPolicy": p} for r, p in self.policies.items()
            ]
        return c


def _map_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted({*old, *new}):
        if key not in new:
            out[key] = None
        elif key not in old:
            out[key] = new[key]
        elif isinstance(old[key], dict) and isinstance(new[key], dict):
            sub = _map_patch(old[key], new[key])
            if sub:
                out[key] = sub
        elif old[key] != new[key]:
            out[key] = new[key]
    return out


def resize_patch(original: list[Ctr], desired: list[Ctr]) -> dict[str, Any]:
    """What ``CreateTwoWayMergePatch`` makes of two pods differing in their containers: the
    new order, each changed container's changes by name, deleted ones as ``$patch: delete``."""
    old = {c.name: c.container() for c in original}
    containers: list[dict[str, Any]] = []
    for ctr in desired:
        new = ctr.container()
        if ctr.name not in old:
            containers.append(new)
            continue
        changes = _map_patch(old[ctr.name], new)
        if changes:
            containers.append({"name": ctr.name, **changes})
    desired_names = {c.name for c in desired}
    containers += [{"$patch": "delete", "name": n} for n in old if n not in desired_names]
    spec: dict[str, Any] = {"$setElementOrder/containers": [{"name": c.name} for c in desired]}
    if containers:
        spec["containers"] = containers
    return {"spec": spec}


async def create(api: API, name: str, containers: list[Ctr]) -> dict[str, Any]:
    body = {"metadata": {"name": name}, "spec": {"containers": [c.container() for c in containers]}}
    status, created = await api.call("POST", PODS, body)
    assert status == 201, created
    return created  # type: ignore[no-any-return]


async def patch_resize(api: API, name: str, patch: dict[str, Any]) -> tuple[int, Any]:
    return await api.call(
        "PATCH", f"{PODS}/{name}/resize", patch, "application/strategic-merge-patch+json"
    )


def resources_of(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c.get("resources", {}) for c in pod["spec"]["containers"]}


# -- doPodResizePatchErrorTests ---------------------------------------------------------------

ERRORS: list[tuple[str, list[Ctr], list[Ctr], str]] = [
    (
        "BestEffort pod - request memory",
        [Ctr("c1")],
        [Ctr("c1", mem_req=ORIGINAL_MEM)],
        "Pod QOS Class may not change as a result of resizing",
    ),
    (
        "BestEffort pod - request cpu",
        [Ctr("c1")],
        [Ctr("c1", cpu_req=ORIGINAL_CPU)],
        "Pod QOS Class may not change as a result of resizing",
    ),
    (
        "Guaranteed pod - remove cpu & memory limits",
        [Ctr("c1", ORIGINAL_CPU, ORIGINAL_CPU, ORIGINAL_MEM, ORIGINAL_MEM)],
        [Ctr("c1", cpu_req=ORIGINAL_CPU, mem_req=ORIGINAL_MEM)],
        "resource limits cannot be removed",
    ),
    (
        "Burstable pod - remove cpu & memory limits + increase requests",
        [Ctr("c1", ORIGINAL_CPU, INCREASED_CPU_LIMIT, ORIGINAL_MEM, INCREASED_MEM_LIMIT)],
        [Ctr("c1", cpu_req=INCREASED_CPU, mem_req=INCREASED_MEM)],
        "resource limits cannot be removed",
    ),
    (
        "Burstable pod - remove memory requests",
        [Ctr("c1", mem_req=ORIGINAL_MEM)],
        [Ctr("c1")],
        "resource requests cannot be removed",
    ),
    (
        "Burstable pod - remove cpu requests",
        [Ctr("c1", cpu_req=ORIGINAL_CPU)],
        [Ctr("c1")],
        "resource requests cannot be removed",
    ),
    (
        "Burstable pod - reorder containers",
        [Ctr("c1", cpu_req=ORIGINAL_CPU), Ctr("c2", cpu_req=ORIGINAL_CPU)],
        [Ctr("c2", cpu_req=ORIGINAL_CPU), Ctr("c1", cpu_req=ORIGINAL_CPU)],
        "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on "
        "resize, spec.containers[1].name: Forbidden: containers may not be renamed or "
        "reordered on resize",
    ),
    (
        "Guaranteed pod - rename containers",
        [
            Ctr("c1-old", ORIGINAL_CPU, ORIGINAL_CPU, ORIGINAL_MEM, ORIGINAL_MEM),
            Ctr("c2-old", ORIGINAL_CPU, ORIGINAL_CPU, ORIGINAL_MEM, ORIGINAL_MEM),
        ],
        [
            Ctr("c1-new", ORIGINAL_CPU, ORIGINAL_CPU, ORIGINAL_MEM, ORIGINAL_MEM),
            Ctr("c2-new", ORIGINAL_CPU, ORIGINAL_CPU, ORIGINAL_MEM, ORIGINAL_MEM),
        ],
        "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on "
        "resize, spec.containers[1].name: Forbidden: containers may not be renamed or "
        "reordered on resize",
    ),
    (
        "Burstable pod - set requests == limits",
        [Ctr("c1", ORIGINAL_CPU, INCREASED_CPU_LIMIT, ORIGINAL_MEM, INCREASED_MEM_LIMIT)],
        [
            Ctr(
                "c1",
                INCREASED_CPU_LIMIT,
                INCREASED_CPU_LIMIT,
                INCREASED_MEM_LIMIT,
                INCREASED_MEM_LIMIT,
            )
        ],
        "Pod QOS Class may not change as a result of resizing",
    ),
    (
        "Burstable pod - resize ephemeral storage",
        [Ctr("c1", cpu_req=ORIGINAL_CPU, mem_req=ORIGINAL_MEM, eph_req="1")],
        [Ctr("c1", cpu_req=ORIGINAL_CPU, mem_req=ORIGINAL_MEM, eph_req="3")],
        "only cpu and memory resources are mutable",
    ),
]


@pytest.mark.parametrize(
    ("original", "desired", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
async def test_invalid_resize_patches(
    apiserver: InProcessServer, original: list[Ctr], desired: list[Ctr], message: str
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        created = await create(api, "p", original)
        status, answer = await patch_resize(api, "p", resize_patch(original, desired))
        assert status == 422, answer
        assert message in answer["message"]
        _, after = await api.call("GET", f"{PODS}/p")
        assert resources_of(after) == resources_of(created)  # nothing half-written
        assert after["metadata"]["generation"] == 1


# -- the resizes upstream accepts ------------------------------------------------------------


def offset_cpu(i: int, value: str) -> str:
    return f"{int(value[:-1]) + 2 * i}m"


def offset_memory(i: int, value: str) -> str:
    return f"{int(value[:-2]) + 2 * i}Mi"


def guaranteed(n: int, cpu: str, mem: str) -> list[Ctr]:
    return [
        Ctr(f"c{i + 1}", *(offset_cpu(i, cpu),) * 2, *(offset_memory(i, mem),) * 2)
        for i in range(n)
    ]


ACCEPTED: list[tuple[str, list[Ctr], list[Ctr]]] = [
    *[
        (
            f"guaranteed 1 container - {what}",
            guaranteed(1, ORIGINAL_CPU, ORIGINAL_MEM),
            guaranteed(1, cpu, mem),
        )
        for what, cpu, mem in (
            ("cpu", INCREASED_CPU, ORIGINAL_MEM),
            ("mem", ORIGINAL_CPU, INCREASED_MEM),
            ("cpu & mem in the same direction", INCREASED_CPU, INCREASED_MEM),
            ("cpu & mem in opposite directions", INCREASED_CPU, REDUCED_MEM),
        )
    ],
    (
        "3 containers - increase cpu & mem on c1, c2, decrease cpu & mem on c3 - net increase",
        guaranteed(3, ORIGINAL_CPU, ORIGINAL_MEM),
        [
            *guaranteed(2, INCREASED_CPU, INCREASED_MEM),
            Ctr("c3", *(offset_cpu(2, REDUCED_CPU),) * 2, *(offset_memory(2, REDUCED_MEM),) * 2),
        ],
    ),
    *[
        (
            f"burstable 1 container - {what}",
            [Ctr("c1", ORIGINAL_CPU, ORIGINAL_CPU_LIMIT, ORIGINAL_MEM, ORIGINAL_MEM_LIMIT)],
            [Ctr("c1", *desired)],
        )
        for what, desired in (
            ("cpu requests", (INCREASED_CPU, ORIGINAL_CPU_LIMIT, ORIGINAL_MEM, ORIGINAL_MEM_LIMIT)),
            ("cpu limits", (ORIGINAL_CPU, INCREASED_CPU_LIMIT, ORIGINAL_MEM, ORIGINAL_MEM_LIMIT)),
            ("mem requests", (ORIGINAL_CPU, ORIGINAL_CPU_LIMIT, INCREASED_MEM, ORIGINAL_MEM_LIMIT)),
            ("mem limits", (ORIGINAL_CPU, ORIGINAL_CPU_LIMIT, ORIGINAL_MEM, INCREASED_MEM_LIMIT)),
            (
                "all resources in the same direction",
                (INCREASED_CPU, INCREASED_CPU_LIMIT, INCREASED_MEM, INCREASED_MEM_LIMIT),
            ),
            (
                "cpu & mem in opposite directions",
                (INCREASED_CPU, INCREASED_CPU_LIMIT, REDUCED_MEM, REDUCED_MEM_LIMIT),
            ),
            (
                "requests & limits in opposite directions",
                (REDUCED_CPU, INCREASED_CPU_LIMIT, INCREASED_MEM, REDUCED_MEM_LIMIT),
            ),
        )
    ],
    (
        "6 containers - various operations performed (including adding limits and requests)",
        [
            Ctr("c1", cpu_req=ORIGINAL_CPU),
            Ctr("c2", mem_req=ORIGINAL_MEM),
            Ctr("c3", cpu_req=ORIGINAL_CPU, mem_req=ORIGINAL_MEM),
            Ctr("c4", cpu_req=ORIGINAL_CPU),
            Ctr("c5", mem_req=ORIGINAL_MEM),
        ],
        [
            Ctr("c1", cpu_req=INCREASED_CPU, cpu_lim=INCREASED_CPU_LIMIT),
            Ctr("c2", mem_req=REDUCED_MEM, mem_lim=INCREASED_MEM_LIMIT),
            Ctr("c3", cpu_req=ORIGINAL_CPU, mem_req=REDUCED_MEM),
            Ctr("c4", cpu_req=REDUCED_CPU, mem_req=ORIGINAL_MEM),
            Ctr("c5", cpu_req=ORIGINAL_CPU, mem_req=INCREASED_MEM),
        ],
    ),
    (
        "resize with equivalents",
        [Ctr("c1", cpu_req="2m", cpu_lim="10m")],
        [Ctr("c1", cpu_req="1m", cpu_lim="5m")],
    ),
]


@pytest.mark.parametrize(
    ("original", "desired"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED]
)
async def test_accepted_resizes_and_their_rollback(
    apiserver: InProcessServer, original: list[Ctr], desired: list[Ctr]
) -> None:
    """Each resize is accepted, bumps the generation, changes exactly the resources; and the
    patch back (the e2e tests' rollback) restores them."""
    api, session = await make_api(apiserver)
    async with session:
        created = await create(api, "p", original)
        status, resized = await patch_resize(api, "p", resize_patch(original, desired))
        assert status == 200, resized
        assert resources_of(resized) == {c.name: c.resources() for c in desired}
        assert resized["metadata"]["generation"] == 2
        unchanged = copy.deepcopy(resized)
        for c in unchanged["spec"]["containers"]:
            c["resources"] = next(
                o for o in created["spec"]["containers"] if o["name"] == c["name"]
            )["resources"]
        assert unchanged["spec"] == created["spec"]

        def names(ctrs: list[Ctr]) -> set[tuple[str, str, str]]:
            return {(c.name, sec, r) for c in ctrs for sec, rl in c.resources().items() for r in rl}

        if not names(desired) <= names(original):
            return  # a rollback would remove what the resize added: upstream skips it too
        status, back = await patch_resize(api, "p", resize_patch(desired, original))
        assert status == 200, back
        assert resources_of(back) == resources_of(created)
        assert back["metadata"]["generation"] == 3


# -- doPodResizeReadAndReplaceTests, and a replace of an applied pod --------------------------


async def test_read_and_replace_through_the_subresource(apiserver: InProcessServer) -> None:
    """GET ``pods/P/resize`` is the pod; a PUT of it with new resources resizes it. Whatever
    else the body changes is ignored: the last-applied annotation kubectl rewrites, labels,
    the image, the status."""
    api, session = await make_api(apiserver)
    async with session:
        original = [Ctr("c1", cpu_req=ORIGINAL_CPU, mem_req=ORIGINAL_MEM)]
        body = {
            "metadata": {
                "name": "applied",
                "labels": {"app": "a"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            },
            "spec": {"containers": [c.container() for c in original]},
        }
        assert (await api.call("POST", PODS, body))[0] == 201
        status, via_resize = await api.call("GET", f"{PODS}/applied/resize")
        _, via_pod = await api.call("GET", f"{PODS}/applied")
        assert status == 200 and via_resize == via_pod
        replaced = copy.deepcopy(via_resize)
        replaced["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = (
            '{"changed": true}'
        )
        replaced["metadata"]["labels"] = {"app": "b"}
        replaced["spec"]["containers"][0]["image"] = "nginx"
        replaced["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": INCREASED_CPU, "memory": INCREASED_MEM}
        }
        replaced["status"] = {"phase": "Succeeded"}
        status, answer = await api.call("PUT", f"{PODS}/applied/resize", replaced)
        assert status == 200, answer
        assert answer["metadata"]["generation"] == 2
        assert answer["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": INCREASED_CPU, "memory": INCREASED_MEM}
        }
        assert answer["spec"]["containers"][0]["image"] == "busybox"
        assert answer["metadata"]["labels"] == {"app": "a"}
        assert answer["metadata"]["annotations"] == via_pod["metadata"]["annotations"]
        assert answer["status"] == via_pod["status"]


async def test_removing_a_request_by_patch_names_the_field(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create(api, "p", [Ctr("c1", cpu_req="100m", mem_req="64Mi")])
        patch = {"spec": {"containers": [{"name": "c1", "resources": {"requests": {"cpu": None}}}]}}
        status, answer = await patch_resize(api, "p", patch)
        assert status == 422
        assert answer["message"] == (
            'Pod "p" is invalid: spec.containers[0].resources.requests: Forbidden: resource '
            "requests cannot be removed"
        )
