"""The vertical pod autoscaler end to end: real `inplace up`, real kubectl, real processes.

One cluster for the module (checkpoints every 3 s so the restart test is short):

* a Deployment whose process grows its memory past its request, under a VPA in
  ``InPlaceOrRecreate``: the pod is resized in place (same pod, same PID, no restart) to the
  recommendation, and ``kubectl get vpa`` shows it;
* ``Off``: a recommendation, and nothing changes, not even for a new pod;
* ``Initial``: the running pod keeps its size, a new pod starts at the recommendation with
  upstream's ``vpaUpdates``/``vpaObservedContainers`` annotations;
* a container OOM-killed at its limit: the limit is raised at once (the reaction);
* a Burstable pod at ``limit = request``: shrunk with its limit at twice the request (the
  headroom), then a burst past the request is not a kill, and the request follows it;
* a targetRef that does not exist, or of a kind not served: ``ConfigUnsupported``;
* a StatefulSet's pod resized in place by its VPA; a one-replica Deployment under the
  default ``minReplicas`` left alone, its VPA saying why (``BelowMinReplicas``);
* the controller manager killed: the restarted one recommends the same from checkpoints
  (upstream's status, and the OOM floor in their annotations);
* upstream's ``hamster.yaml`` example, unchanged: recommended, and its pods recreated at the
  recommendation (``Recreate``: eviction, then admission).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from inplace.api.annotations import CHECKPOINT_ANNOTATIONS, MEMORY_FLOOR
from inplace.api.quantity import Quantity
from inplace.api.timestamps import parse_rfc3339
from inplace.controllers.vpa.settings import variant
from tests.conftest import Cluster, start_cluster
from tests.poll import wait_until

UPDATE_THRESHOLD = variant("inplace")[1].update_threshold
"""How far off the controller manager's preset lets a pod's request be before resizing it."""

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

MiB = 2**20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("vpa") / "data"
    running = start_cluster(data_dir, None, "--no-dashboard", "--vpa-checkpoint-interval", "3s")
    try:
        yield running
    finally:
        running.stop()


def grower(
    name: str,
    *,
    grow_to_mib: int,
    limit: str | None = None,
    pause: bool = False,
    kind: str = "Deployment",
    step_seconds: float = 0.1,
    burst_mib: int = 0,
) -> str:
    """A Deployment (or another ``kind`` with a replica count) of one pod whose process
    allocates ``grow_to_mib`` MiB in 10 MiB steps ``step_seconds`` apart, prints its PID,
    then sleeps; it requests 50m and 100Mi. ``pause``: paused at its memory limit instead of
    OOM-killed (``inplace.dev/oom-kill-disable``). ``burst_mib``: once the named pipe
    ``/tmp/burst`` is written to (``kubectl exec``), that many MiB more at once, and
    ``burst`` printed."""
    limits = f"\n            limits: {{memory: {limit}}}" if limit else ""
    annotations = '\n      annotations: {"inplace.dev/oom-kill-disable": "true"}' if pause else ""
    service = f'\n  serviceName: "{name}"' if kind == "StatefulSet" else ""
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata:
  name: "{name}"
spec:{service}
  replicas: 1
  selector:
    matchLabels: {{app: "{name}"}}
  template:
    metadata:
      labels: {{app: "{name}"}}{annotations}
    spec:
      containers:
      - name: app
        image: python
        command:
        - python3
        - -c
        - |
          import os, time
          print("pid", os.getpid(), flush=True)
          chunks = []
          def take(mib):
              chunk = bytearray(mib * 2**20)
              for i in range(0, len(chunk), 4096):
                  chunk[i] = 1
              chunks.append(chunk)
          for _ in range({grow_to_mib // 10}):
              take(10)
              time.sleep({step_seconds})
          if {burst_mib}:
              os.mkfifo("/tmp/burst")
              open("/tmp/burst").read()  # until a writer opens it and closes it
              take({burst_mib})
              print("burst", flush=True)
          time.sleep(3600)
        resources:
            requests: {{cpu: 50m, memory: 100Mi}}{limits}
"""


def wait_grown(pid: int, mib: int) -> None:
    """Until the grower ``pid`` holds its ``mib`` MiB. A VPA made earlier may, on a loaded
    machine, see part of the growth and resize the pod to that first: a right answer, but not
    the one a test of "resized to what it uses" waits for."""
    wait_until(
        lambda: psutil.Process(pid).memory_info().rss >= mib * MiB,
        timeout=60,
        interval=0.2,
        what=f"the grower holding {mib} MiB",
    )


def vpa(
    name: str,
    mode: str,
    *,
    kind: str = "Deployment",
    target: str | None = None,
    min_replicas: int | None = 1,
) -> str:
    minimum = "" if min_replicas is None else f", minReplicas: {min_replicas}"
    return f"""
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: "{name}"
spec:
  targetRef: {{apiVersion: apps/v1, kind: {kind}, name: "{target or name}"}}
  updatePolicy: {{updateMode: "{mode}"{minimum}}}
"""


def get(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def pods_of(cluster: Cluster, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get(cluster, "pods", "-l", f"app={app}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running_pod(cluster: Cluster, app: str) -> dict[str, Any] | None:
    pods = pods_of(cluster, app)
    if len(pods) != 1:
        return None
    statuses = pods[0]["status"].get("containerStatuses") or []
    if statuses and all("running" in cs["state"] for cs in statuses):
        return pods[0]
    return None


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond["type"] == ctype:
            return dict(cond)
    return None


def target_of(cluster: Cluster, name: str) -> dict[str, str] | None:
    obj = get(cluster, "vpa", name)
    recs = ((obj.get("status") or {}).get("recommendation") or {}).get("containerRecommendations")
    return dict(recs[0]["target"]) if recs else None


def memory_request(pod: dict[str, Any]) -> Quantity:
    return Quantity.parse(pod["spec"]["containers"][0]["resources"]["requests"]["memory"])


def pid_of(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["containerID"].removeprefix("inplace://"))


def test_in_place_or_recreate_resizes_the_running_pod(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=grower("grow", grow_to_mib=300))
    first = wait_until(lambda: running_pod(cluster, "grow"), timeout=60, what="pod running")
    pid = pid_of(first)
    wait_grown(pid, 300)
    cluster.kubectl("apply", "-f", "-", input=vpa("grow", "InPlaceOrRecreate"))

    def resized_to_target() -> dict[str, Any] | None:
        pod = running_pod(cluster, "grow")
        target = target_of(cluster, "grow")
        if pod is None or target is None or memory_request(pod) <= Quantity.parse("100Mi"):
            return None
        actual = pod["status"]["containerStatuses"][0].get("resources") or {}
        if Quantity.parse(actual["requests"]["memory"]) != memory_request(pod):
            return None  # not yet applied by the node
        # The inplace preset's target moves by a few bytes every pass (its rise margin fades)
        # and its updater resizes only past 5% off: the target as of the resize is within that
        # band of the current one, not equal to it.
        wanted = Quantity.parse(target["memory"]).value()
        have = memory_request(pod).value()
        return pod if abs(have - wanted) <= UPDATE_THRESHOLD * wanted else None

    pod = wait_until(resized_to_target, timeout=120, interval=1, what="resized to the target")
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]
    assert pid_of(pod) == pid and psutil.pid_exists(pid)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert memory_request(pod) >= Quantity.parse("300Mi")
    table = cluster.kubectl("get", "vpa", "grow").stdout.splitlines()
    assert table[0].split() == ["NAME", "MODE", "CPU", "MEM", "PROVIDED", "AGE"]
    row = table[1].split()
    assert row[:2] == ["grow", "InPlaceOrRecreate"] and row[4] == "True"
    assert Quantity.parse(row[3]) >= Quantity.parse("300Mi")
    reasons = [
        e["reason"]
        for e in get(
            cluster, "events", "--field-selector", f"involvedObject.name={pod['metadata']['name']}"
        )["items"]
    ]
    assert "InPlaceResizedByVPA" in reasons
    cluster.kubectl("delete", "deployment,vpa", "grow", "--wait=true", timeout=90)


def test_a_stateful_set_is_resized_in_place_and_a_held_vpa_says_why(cluster: Cluster) -> None:
    """A VPA on a StatefulSet finds its pod by the set's selector and resizes it in place;
    meanwhile a one-replica Deployment under the default ``minReplicas: 2`` is not updated,
    and its VPA says so, naming ``updatePolicy.minReplicas``."""
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input="---".join(
            [
                grower("db", grow_to_mib=300, kind="StatefulSet"),
                grower("single", grow_to_mib=300),
                vpa("single", "InPlaceOrRecreate", min_replicas=None),
            ]
        ),
    )
    first = wait_until(lambda: running_pod(cluster, "db"), timeout=60, what="db-0 running")
    pid = pid_of(first)
    cluster.kubectl("apply", "-f", "-", input=vpa("db", "InPlaceOrRecreate", kind="StatefulSet"))

    def resized() -> dict[str, Any] | None:
        pod = running_pod(cluster, "db")
        target = target_of(cluster, "db")
        if pod is None or target is None or memory_request(pod) <= Quantity.parse("100Mi"):
            return None
        actual = pod["status"]["containerStatuses"][0].get("resources") or {}
        return pod if Quantity.parse(actual["requests"]["memory"]) == memory_request(pod) else None

    pod = wait_until(resized, timeout=120, interval=1, what="db-0 resized to the target")
    assert pod["metadata"]["name"] == "db-0"
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]
    assert pid_of(pod) == pid and psutil.pid_exists(pid)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0

    def held() -> dict[str, Any] | None:
        events = get(
            cluster, "events", "--field-selector", "involvedObject.kind=VerticalPodAutoscaler"
        )["items"]
        return next(
            (
                e
                for e in events
                if e["reason"] == "BelowMinReplicas" and e["involvedObject"]["name"] == "single"
            ),
            None,
        )

    event = wait_until(held, timeout=90, interval=1, what="BelowMinReplicas on the VPA")
    assert event["type"] == "Warning"
    assert "fewer than minReplicas 2" in event["message"]
    assert "spec.updatePolicy.minReplicas" in event["message"]
    single = running_pod(cluster, "single")
    assert single is not None and memory_request(single) == Quantity.parse("100Mi")
    cluster.kubectl("delete", "statefulset,vpa", "db", "--wait=true", timeout=90)
    cluster.kubectl("delete", "deployment,vpa", "single", "--wait=true", timeout=90)


def test_off_and_initial_leave_running_pods_alone(cluster: Cluster) -> None:
    """Both at once (one wait for both): a recommendation, no running pod changed; a new pod
    gets it under Initial only."""
    manifests = [grower(app, grow_to_mib=300) + "---" + vpa(app, mode) for app, mode in MODES]
    cluster.kubectl("apply", "-f", "-", input="---".join(manifests))
    first = {
        app: wait_until(lambda a=app: running_pod(cluster, a), timeout=60, what=f"{app} running")
        for app, _ in MODES
    }
    for app, _ in MODES:
        wait_until(
            lambda a=app: (
                (t := target_of(cluster, a))
                and Quantity.parse(t["memory"]) >= Quantity.parse("300Mi")
            ),
            timeout=60,
            interval=1,
            what=f"{app}: the recommendation covers the usage",
        )
    time.sleep(12)  # past an updater pass (10 s): had anything acted, it would show now
    for app, _ in MODES:
        pod = running_pod(cluster, app)
        assert pod is not None and pod["metadata"]["uid"] == first[app]["metadata"]["uid"]
        assert memory_request(pod) == Quantity.parse("100Mi")
        cluster.kubectl("delete", "pod", pod["metadata"]["name"], "--wait=true", timeout=90)
    fresh = {
        app: wait_until(lambda a=app: running_pod(cluster, a), timeout=60, what=f"new {app} pod")
        for app, _ in MODES
    }
    assert memory_request(fresh["off"]) == Quantity.parse("100Mi")
    assert "vpaUpdates" not in (fresh["off"]["metadata"].get("annotations") or {})
    annotations = fresh["initial"]["metadata"].get("annotations") or {}
    assert annotations["vpaUpdates"].startswith("Pod resources updated by initial: container 0: ")
    assert "memory request" in annotations["vpaUpdates"]
    assert annotations["vpaObservedContainers"] == "app"
    assert memory_request(fresh["initial"]) >= Quantity.parse("300Mi")
    for app, _ in MODES:
        cluster.kubectl("delete", "deployment,vpa", app, "--wait=true", timeout=90)


MODES = (("off", "Off"), ("initial", "Initial"))


def memory_limit(pod: dict[str, Any]) -> Quantity:
    return Quantity.parse(pod["spec"]["containers"][0]["resources"]["limits"]["memory"])


def test_a_burst_within_the_headroom_is_not_a_kill_and_the_request_follows(
    cluster: Cluster,
) -> None:
    """A Burstable pod written with ``limit = request`` (100Mi) using ~60Mi: the VPA shrinks
    its request and gives its limit the headroom (twice the request). Then its process takes
    40Mi more at once, past the new request and past what a limit kept at the request would
    allow: it is not killed (same PID, no restart), and the VPA grows the request over it."""
    workload = grower("burst", grow_to_mib=40, limit="100Mi", burst_mib=40)
    cluster.kubectl("apply", "-f", "-", input=workload + "---" + vpa("burst", "InPlace"))
    first = wait_until(lambda: running_pod(cluster, "burst"), timeout=60, what="pod running")
    pid = pid_of(first)

    def headroom() -> dict[str, Any] | None:
        pod = running_pod(cluster, "burst")
        if pod is None or memory_request(pod) >= Quantity.parse("100Mi"):
            return None
        actual = pod["status"]["containerStatuses"][0].get("resources") or {}
        applied = actual.get("limits", {}).get("memory") == str(memory_limit(pod))
        doubled = memory_limit(pod).value() == 2 * memory_request(pod).value()
        return pod if applied and doubled else None

    shrunk = wait_until(headroom, timeout=90, interval=1, what="shrunk, with the headroom")
    before = memory_request(shrunk).value()
    name = shrunk["metadata"]["name"]
    cluster.kubectl("exec", name, "--", "python3", "-c", "open('/tmp/burst', 'w').close()")

    def grown() -> dict[str, Any] | None:
        pod = running_pod(cluster, "burst")
        return pod if pod is not None and memory_request(pod).value() > before * 1.4 else None

    pod = wait_until(grown, timeout=60, interval=1, what="the request grown over the burst")
    assert "burst" in cluster.kubectl("logs", name).stdout
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]
    assert pid_of(pod) == pid and psutil.pid_exists(pid)
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0 and "terminated" not in (status.get("lastState") or {})
    assert memory_limit(pod).value() == 2 * memory_request(pod).value()
    cluster.kubectl("delete", "deployment,vpa", "burst", "--wait=true", timeout=90)


def test_an_oom_kill_raises_the_limit_at_once(cluster: Cluster) -> None:
    """Limit 200Mi, the process wants 300Mi: killed; the VPA bumps the memory (the limit
    keeps its ratio to the request) and resizes the pod in place, until it fits."""
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=grower("oom", grow_to_mib=300, limit="200Mi")
        + "---"
        + vpa("oom", "InPlaceOrRecreate"),
    )

    def limit_raised() -> dict[str, Any] | None:
        pods = pods_of(cluster, "oom")
        if len(pods) != 1:
            return None
        limit = pods[0]["spec"]["containers"][0]["resources"].get("limits", {}).get("memory")
        return pods[0] if limit and Quantity.parse(limit) > Quantity.parse("300Mi") else None

    pod = wait_until(limit_raised, timeout=120, interval=0.5, what="the limit raised")
    statuses = pod["status"].get("containerStatuses") or [{}]
    assert (statuses[0].get("lastState") or {}).get("terminated", {}).get("reason") == "OOMKilled"
    settled = wait_until(lambda: running_pod(cluster, "oom"), timeout=60, what="running again")
    assert settled["metadata"]["uid"] == pod["metadata"]["uid"]  # the same pod, not a new one
    cluster.kubectl("delete", "deployment,vpa", "oom", "--wait=true", timeout=90)


@pytest.mark.skipif(
    not os.path.isdir("/sys/fs/cgroup/memory"), reason="the pause under test is cgroup v1's"
)
def test_a_pause_at_the_limit_is_answered_in_place(cluster: Cluster) -> None:
    """Paused at 200Mi instead of killed: the VPA (not the memory-pause responder) raises
    the memory in place; the same process resumes and reaches its 300Mi."""
    manifest = grower("pause", grow_to_mib=300, limit="200Mi", pause=True)
    cluster.kubectl("apply", "-f", "-", input=manifest + "---" + vpa("pause", "InPlaceOrRecreate"))
    first = wait_until(lambda: running_pod(cluster, "pause"), timeout=60, what="pod running")
    pid = pid_of(first)

    def raised() -> dict[str, Any] | None:
        pod = running_pod(cluster, "pause")
        if pod is None:
            return None
        limit = pod["spec"]["containers"][0]["resources"].get("limits", {}).get("memory")
        return pod if limit and Quantity.parse(limit) > Quantity.parse("300Mi") else None

    pod = wait_until(raised, timeout=120, interval=0.5, what="the limit raised")
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]
    assert pid_of(pod) == pid and psutil.pid_exists(pid)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    wait_until(
        lambda: (p := running_pod(cluster, "pause")) and condition(p, "MemoryPaused") is None,
        timeout=60,
        interval=0.5,
        what="no longer paused",
    )
    reasons = {
        e["reason"]
        for e in get(
            cluster, "events", "--field-selector", f"involvedObject.name={pod['metadata']['name']}"
        )["items"]
    }
    assert "MemoryPaused" in reasons  # the node paused it (it grows 10 MiB every 0.1 s)
    assert "InPlaceResizedByVPA" in reasons and "MemoryBumped" not in reasons
    cluster.kubectl("delete", "deployment,vpa", "pause", "--wait=true", timeout=90)


def test_a_target_that_cannot_be_read_is_config_unsupported(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=vpa("nowhere", "Auto", target="does-not-exist"))
    cluster.kubectl(
        "apply", "-f", "-", input=vpa("rc", "Auto", kind="ReplicationController", target="web")
    )

    def unsupported(name: str) -> dict[str, Any] | None:
        return condition(get(cluster, "vpa", name), "ConfigUnsupported")

    cond = wait_until(lambda: unsupported("nowhere"), timeout=60, interval=1, what="condition")
    assert cond["status"] == "True"
    assert (
        cond["message"]
        == "Cannot read targetRef. Reason: Deployment default/does-not-exist does not exist"
    )
    cond = wait_until(lambda: unsupported("rc"), timeout=60, interval=1, what="condition")
    assert cond["message"].startswith(
        "Cannot read targetRef. Reason: Unhandled targetRef apps/v1 / ReplicationController / web"
    )
    provided = condition(get(cluster, "vpa", "nowhere"), "RecommendationProvided")
    assert provided is not None and provided["status"] == "False"
    cluster.kubectl("delete", "vpa", "nowhere", "rc")


def _controller_manager(cluster: Cluster) -> psutil.Process:
    for child in psutil.Process(cluster.process.pid).children():
        with contextlib.suppress(psutil.Error):
            if "controller-manager" in " ".join(child.cmdline()):
                return child
    raise AssertionError("no controller manager")


def test_history_survives_a_restart(cluster: Cluster) -> None:
    # Growing to 200Mi under a 150Mi limit: OOM-killed (the VPA is Off, so it stays so). The
    # inplace recommender puts a floor under the recommendation at the bumped size (250Mi),
    # which the checkpoint carries beside upstream's status.
    workload = grower("keep", grow_to_mib=200, limit="150Mi")
    cluster.kubectl("apply", "-f", "-", input=workload + "---" + vpa("keep", "Off"))
    wait_until(
        lambda: (
            (t := target_of(cluster, "keep"))
            and Quantity.parse(t["memory"]) >= Quantity.parse("200Mi")
        ),
        timeout=60,
        interval=1,
        what="a recommendation",
    )
    # No more usage: the history stops growing; a checkpoint written after that holds it all.
    cluster.kubectl("scale", "deployment", "keep", "--replicas=0")
    wait_until(lambda: not pods_of(cluster, "keep"), timeout=60, what="pods gone")
    stopped = time.time()

    def checkpoint_after_stop() -> bool:
        found = cluster.kubectl("get", "vpacheckpoint", "keep-app", "-o", "json", check=False)
        if found.returncode != 0:  # not written yet (the first is due 3 s after the OOM)
            return False
        stamp = json.loads(found.stdout)["status"]["lastUpdateTime"]
        return parse_rfc3339(stamp).timestamp() > stopped + 1

    wait_until(checkpoint_after_stop, timeout=30, interval=0.5, what="a fresh checkpoint")
    # A pass after the pods went has seen every sample: NoPodsMatched says so.
    wait_until(
        lambda: condition(get(cluster, "vpa", "keep"), "NoPodsMatched"),
        timeout=30,
        interval=0.5,
        what="NoPodsMatched",
    )
    before = get(cluster, "vpa", "keep")["status"]["recommendation"]
    learned = _learned(get(cluster, "vpacheckpoint", "keep-app"))
    assert MEMORY_FLOOR in learned, "the recommender learned no floor from the OOM kill"
    manager = _controller_manager(cluster)
    os.kill(manager.pid, signal.SIGKILL)
    manager.wait(10)
    killed = time.time()
    # Forget what the status said: only the checkpoints can bring it back.
    cluster.kubectl(
        "patch",
        "vpa",
        "keep",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"recommendation": null, "conditions": null}}',
    )
    assert "recommendation" not in get(cluster, "vpa", "keep").get("status", {})
    after = wait_until(
        lambda: get(cluster, "vpa", "keep").get("status", {}).get("recommendation"),
        timeout=60,
        interval=0.5,
        what="the restarted recommender's recommendation",
    )
    # Bucket weights are saved rounded (upstream's checkpoint format): the CPU target is the
    # same bucket, its bounds, scaled by the history's length, within a percent. Memory is
    # the same: the histogram comes back from the status, the floor (at least 200Mi) from
    # the annotations. "The same" within a percent: the recommendation is in bytes and the
    # floor fades continuously (it halves in half an hour), so the seconds between the two
    # passes take a little off; without the annotations the floor would be missing.
    was_rec, now_rec = before["containerRecommendations"][0], after["containerRecommendations"][0]
    assert now_rec["target"]["cpu"] == was_rec["target"]["cpu"]
    memory = Quantity.parse(now_rec["target"]["memory"])
    assert memory >= Quantity.parse("200Mi")
    for field in ("target", "lowerBound", "upperBound"):
        was = Quantity.parse(was_rec[field]["memory"]).value()
        now = Quantity.parse(now_rec[field]["memory"]).value()
        assert abs(now - was) <= was // 100, (field, was_rec[field], now_rec[field])
    for bound in ("lowerBound", "upperBound"):
        was = Quantity.parse(was_rec[bound]["cpu"])
        now = Quantity.parse(now_rec[bound]["cpu"])
        assert abs(now.milli_value() - was.milli_value()) <= was.milli_value() // 100

    # The restarted recommender's checkpoints carry what it loaded, exactly.
    def checkpoint_after_restart() -> dict[str, Any] | None:
        obj: dict[str, Any] = get(cluster, "vpacheckpoint", "keep-app")
        stamp = obj["status"]["lastUpdateTime"]
        return obj if parse_rfc3339(stamp).timestamp() > killed + 1 else None

    rewritten = wait_until(
        checkpoint_after_restart, timeout=30, interval=0.5, what="a checkpoint after the restart"
    )
    assert _learned(rewritten) == learned
    cluster.kubectl("delete", "deployment,vpa", "keep", "--wait=true", timeout=90)


def _learned(checkpoint: dict[str, Any]) -> dict[str, str]:
    """The inplace recommender's annotations on a checkpoint (its learned jump and floor)."""
    annotations = checkpoint["metadata"].get("annotations") or {}
    return {k: v for k, v in annotations.items() if k in CHECKPOINT_ANNOTATIONS}


HAMSTER = """\
# This config creates a deployment with two pods, each requesting 100 millicores
# and trying to utilize slightly above 500 millicores (repeatedly using CPU for
# 0.5s and sleeping 0.5s).
# It also creates a corresponding Vertical Pod Autoscaler that adjusts the
# requests.
# Note that the update mode is left unset, so it defaults to "Auto" mode.
---
apiVersion: "autoscaling.k8s.io/v1"
kind: VerticalPodAutoscaler
metadata:
  name: hamster-vpa
spec:
  targetRef:
    apiVersion: "apps/v1"
    kind: Deployment
    name: hamster
  resourcePolicy:
    containerPolicies:
      - containerName: '*'
        minAllowed:
          cpu: 100m
          memory: 50Mi
        maxAllowed:
          cpu: 1
          memory: 500Mi
        controlledResources: ["cpu", "memory"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hamster
spec:
  selector:
    matchLabels:
      app: hamster
  replicas: 2
  template:
    metadata:
      labels:
        app: hamster
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534 # nobody
      containers:
        - name: hamster
          image: k8s.gcr.io/ubuntu-slim:0.1
          resources:
            requests:
              cpu: 100m
              memory: 50Mi
          command: ["/bin/sh"]
          args:
            - "-c"
            - "while true; do timeout 0.5s yes >/dev/null; sleep 0.5s; done"
"""
"""kubernetes/autoscaler's ``vertical-pod-autoscaler/examples/hamster.yaml``, as it is."""


def test_upstream_hamster_example(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=HAMSTER)
    try:

        def recreated() -> list[dict[str, Any]]:
            return [
                p
                for p in pods_of(cluster, "hamster")
                if "vpaUpdates" in (p["metadata"].get("annotations") or {})
            ]

        pods = wait_until(recreated, timeout=120, interval=1, what="a pod recreated by the VPA")
        annotations = pods[0]["metadata"]["annotations"]
        assert annotations["vpaUpdates"].startswith("Pod resources updated by hamster-vpa: ")
        assert annotations["vpaObservedContainers"] == "hamster"
        requests = pods[0]["spec"]["containers"][0]["resources"]["requests"]
        # The recommendation, within the policy's bounds: memory rose from 50Mi to at least
        # the pod minimum (64Mi in the inplace recommender, which `inplace up` runs; upstream's
        # is 250Mi), at most maxAllowed; cpu within [minAllowed, maxAllowed].
        assert (
            Quantity.parse("64Mi") <= Quantity.parse(requests["memory"]) <= Quantity.parse("500Mi")
        )
        assert Quantity.parse("100m") <= Quantity.parse(requests["cpu"]) <= Quantity.parse("1")
        reasons = [e["reason"] for e in get(cluster, "events")["items"]]
        assert "EvictedByVPA" in reasons
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=true", input=HAMSTER, timeout=90)
