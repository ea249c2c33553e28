"""The dashboard against a real `inplace up`, in a real Chromium (Playwright).

One cluster for the module (one node of 1 CPU and 1Gi, so a resize can be Deferred), the
dashboard that `inplace up` starts and prints, a pod whose process prints its PID and holds
some memory, and real kubectl. What issue 13 asks to see:

* every page loads; a wrong token gets 401;
* a resize made with kubectl shows the new limit and a resize marker on the pod's chart,
  without a reload (the bound on the wait is a hang guard; the measured time is printed and
  saved with the screenshots);
* a Deferred resize shows its reason, on the pod and on the cluster page, and completes when
  room appears;
* the kubectl line the form prints does exactly what the form's button does, and the button
  resizes the pod in place (same PID, no restart);
* `inplace up` restarts a dashboard that dies, at the same URL and token.

Screenshots of every page are saved as test artifacts (see tests/dashboard/browser.py).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from playwright.sync_api import Page, expect

from tests.conftest import Cluster, start_cluster
from tests.dashboard.browser import (
    CELLS,
    OVERFLOW,
    TITLE_UNDER_POINTER,
    artifacts,
    assert_shown_whole,
    chromium_sync,
)
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

HANG_GUARD_MS = 20_000
"""How long a page may take to show a change before the test fails: a hang guard only."""

Mi = 2**20

WORKER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "worker", "namespace": "default", "labels": {"app": "worker"}},
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "command": [
                    "sh",
                    "-c",
                    "echo pid $$$$; exec python3 -c "
                    "'import time; b = bytearray(40 * 2**20); time.sleep(3600)'",
                ],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "200m", "memory": "128Mi"},
                },
            }
        ]
    },
}


WEB = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx",
                        "command": ["sleep", "3600"],
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ]
            },
        },
    },
}


DASH_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "dash-deployment", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "dash"}},
        "template": {
            "metadata": {"labels": {"app": "dash"}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "nginx",
                        "command": ["sleep", "3600"],
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ]
            },
        },
    },
}


@dataclass
class Dash:
    cluster: Cluster
    url: str

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, **kw)

    def pod(self, name: str) -> dict[str, Any] | None:
        result = self.kubectl("get", "pod", name, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    def open(self, page: Page, route: str) -> None:
        response = page.goto(self.url)
        assert response is not None and response.ok
        page.goto(f"{self.base}/#{route}")


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
            return bool(response.read() == b"ok")
    except OSError:
        return False


@pytest.fixture(scope="module")
def dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dash]:
    data_dir = tmp_path_factory.mktemp("dashboard-cluster") / "data"
    cluster = start_cluster(data_dir, None, "--node-cpu", "1", "--node-memory", "1Gi")
    try:
        found = re.search(
            r"✓ dashboard on (http://127\.0\.0\.1:\d+/\?token=\S+)", cluster.output.read_text()
        )
        assert found, cluster.output.read_text()
        running = Dash(cluster, found.group(1))
        wait_until(lambda: _healthy(running.base), timeout=60, what="the dashboard answers")
        running.kubectl("apply", "-f", "-", input=json.dumps(WORKER))
        wait_until(
            lambda: (running.pod("worker") or {}).get("status", {}).get("phase") == "Running",
            timeout=60,
            what="worker running",
        )
        yield running
    finally:
        cluster.stop()


def worker_pid(dash: Dash) -> int:
    """The worker's host PID (its container ID); it prints its own, 2 in its PID namespace."""
    logs = dash.kubectl("logs", "worker").stdout.split()
    assert logs[:2] == ["pid", "2"], logs
    pod = dash.pod("worker")
    assert pod is not None
    return int(pod["status"]["containerStatuses"][0]["containerID"].removeprefix("inplace://"))


def memory_limit_in_cgroup(pid: int) -> int:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            limit = Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.limit_in_bytes"
            return int(limit.read_text())
    raise AssertionError(f"no memory cgroup for {pid}")


def resize_patch(memory_request: str, memory_limit: str) -> str:
    return json.dumps(
        {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "resources": {
                            "requests": {"memory": memory_request},
                            "limits": {"memory": memory_limit},
                        },
                    }
                ]
            }
        }
    )


def test_every_page_loads_and_a_wrong_token_gets_401(dash: Dash) -> None:
    dash.kubectl("apply", "-f", "-", input=json.dumps(WEB))
    with chromium_sync() as browser:
        page = browser.new_page()
        response = page.goto(f"{dash.base}/?token=wrong")
        assert response is not None and response.status == 401
        expect(page.locator("body")).to_contain_text("needs its token")

        dash.open(page, "/cluster")
        node = page.locator("#nodes tbody tr", has_text="node-1")
        expect(node).to_contain_text("allocatable 1", timeout=HANG_GUARD_MS)
        expect(node).to_contain_text("allocatable 1Gi")

        dash.open(page, "/pods")
        row = page.locator("#pods tbody tr[data-key='default/worker']")
        expect(row).to_contain_text("Running", timeout=HANG_GUARD_MS)
        expect(row.locator("svg.spark polyline")).to_have_count(2, timeout=HANG_GUARD_MS)
        page.screenshot(path=artifacts() / "pods.png", full_page=True)

        dash.open(page, "/workloads")
        web = page.locator("#workloads tbody tr[data-key='Deployment/default/web']")
        expect(web).to_contain_text("Deployment default/web", timeout=HANG_GUARD_MS)
        expect(web).to_contain_text("2 current", timeout=HANG_GUARD_MS)
        # The workload controllers resize the Deployment's pods in place; the row follows.
        dash.kubectl("set", "resources", "deployment", "web", "--requests=cpu=20m,memory=24Mi")
        expect(web).to_contain_text("2 current", timeout=HANG_GUARD_MS)
        expect(web).to_contain_text("PodsResized=True", timeout=HANG_GUARD_MS)
        pods = json.loads(dash.kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)
        assert [p["metadata"]["generation"] for p in pods["items"]] == [2, 2]  # resized, not new
        page.screenshot(path=artifacts() / "workloads.png", full_page=True)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{dash.base}/api/view?view=pods", timeout=5)
    assert refused.value.code == 401
    dash.kubectl("delete", "deployment", "web", "--wait=true")


def test_the_pods_table_gives_names_the_room_they_need(dash: Dash) -> None:
    """Issue 25: a Deployment's pods (dash-deployment-7d9f8c6b5-x2x9q...) on node-1 have their
    whole names on a 1400-pixel window and on a 1024-pixel one (wrapped), and on hover."""
    dash.kubectl("apply", "-f", "-", input=json.dumps(DASH_DEPLOYMENT))

    def dash_pods() -> set[str]:
        listed = json.loads(dash.kubectl("get", "pods", "-l", "app=dash", "-o", "json").stdout)
        running = {
            p["metadata"]["name"]
            for p in listed["items"]
            if p.get("status", {}).get("phase") == "Running"
        }
        return running if len(running) == 3 else set()

    wait_until(lambda: bool(dash_pods()), timeout=60, what="dash-deployment's pods running")
    pods = dash_pods() | {"worker"}
    assert all(re.fullmatch(r"dash-deployment-[0-9a-z]+-[0-9a-z]{5}", p) for p in pods - {"worker"})
    try:
        for width in (1400, 1024):
            with chromium_sync(width=width, height=800) as browser:
                page = browser.new_page()
                dash.open(page, "/pods")
                for pod in pods:
                    row = page.locator(f"#pods tbody tr[data-key='default/{pod}']")
                    expect(row).to_contain_text("Running", timeout=HANG_GUARD_MS)
                    expect(row.locator("svg.spark")).to_have_count(2, timeout=HANG_GUARD_MS)
                names = page.evaluate(CELLS, "#pods tbody th")
                nodes = page.evaluate(CELLS, "#pods tbody tr > :nth-child(4)")
                page.screenshot(path=artifacts() / f"pods-{width}.png")
                # whole at both widths (too narrow for one line, a name wraps), and its
                # whole text on hover
                assert_shown_whole(names, pods)
                assert_shown_whole(nodes, {"node-1"})
                assert page.evaluate(OVERFLOW) == 0
                longest = max(pods, key=len)
                page.locator("#pods tbody th", has_text=longest).hover()
                assert page.evaluate(TITLE_UNDER_POINTER) == longest

                page.get_by_role("link", name="Cluster").click()
                expect(page.locator("#nodes tbody tr")).to_contain_text(
                    "allocatable", timeout=HANG_GUARD_MS
                )
                assert_shown_whole(page.evaluate(CELLS, "#nodes tbody th .name"), {"node-1"})
                assert page.evaluate(OVERFLOW) == 0
    finally:
        dash.kubectl("delete", "deployment", "dash-deployment", "--wait=true")
        wait_until(
            lambda: not dash.kubectl("get", "pods", "-l", "app=dash", "-o", "name").stdout,
            timeout=60,
            what="dash-deployment's pods gone",
        )


def test_a_kubectl_resize_shows_on_the_chart_without_a_reload(dash: Dash) -> None:
    with chromium_sync() as browser:
        page = browser.new_page()
        dash.open(page, "/pod/default/worker")
        limit = page.locator("[data-field=memory-limit]")
        expect(limit).to_have_text("128Mi", timeout=HANG_GUARD_MS)
        completed = page.locator("#markers tbody tr[data-kind=resize-completed]")
        before = completed.count()
        page.evaluate("window.stillTheSamePage = true")

        started = time.monotonic()
        dash.kubectl("patch", "pod", "worker", "--subresource", "resize", "-p",
                     resize_patch("96Mi", "256Mi"))  # fmt: skip
        expect(limit).to_have_text("256Mi", timeout=HANG_GUARD_MS)
        new_limit = time.monotonic() - started
        expect(completed).to_have_count(before + 1, timeout=HANG_GUARD_MS)
        marker = time.monotonic() - started
        expect(page.locator("[data-field=memory-applied]")).to_have_text("96Mi / 256Mi")

        chart = page.evaluate(
            "(() => { const c = inplaceDashboard.charts['main/memory'];"
            " return {limit: c.data.limit, markers: c.markers.map(m => m.kind)}; })()"
        )
        assert chart["limit"][-1] == 256 * Mi
        assert "resize-completed" in chart["markers"]
        assert page.evaluate("window.stillTheSamePage") is True  # no reload
        report = (
            f"kubectl resize -> new limit on the page after {new_limit:.2f}s, "
            f"resize marker after {marker:.2f}s\n"
        )
        (artifacts() / "live-update.txt").write_text(report)
        print(report)


def test_a_deferred_resize_shows_why_and_completes_when_room_appears(dash: Dash) -> None:
    hog = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hog", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "resources": {
                        "requests": {"cpu": "50m", "memory": "700Mi"},
                        "limits": {"cpu": "50m", "memory": "700Mi"},
                    },
                }
            ]
        },
    }
    dash.kubectl("apply", "-f", "-", input=json.dumps(hog))
    wait_until(
        lambda: (dash.pod("hog") or {}).get("status", {}).get("phase") == "Running",
        timeout=60,
        what="hog running",
    )
    with chromium_sync() as browser:
        page = browser.new_page()
        dash.open(page, "/pod/default/worker")
        expect(page.locator("[data-field=memory-limit]")).to_have_text(
            "256Mi", timeout=HANG_GUARD_MS
        )
        dash.kubectl("patch", "pod", "worker", "--subresource", "resize", "-p",
                     resize_patch("400Mi", "512Mi"))  # fmt: skip
        state = page.locator("#pod-resize")
        expect(state).to_contain_text("Resize Deferred", timeout=HANG_GUARD_MS)
        expect(state).to_contain_text("Insufficient memory")
        deferred = page.locator("#markers tbody tr[data-kind=resize-deferred]")
        expect(deferred.first).to_contain_text("Insufficient memory", timeout=HANG_GUARD_MS)
        expect(page.locator("[data-field=memory-applied]")).to_have_text("96Mi / 256Mi")

        page.get_by_role("link", name="Cluster").click()
        waiting = page.locator("#waiting tbody tr", has_text="default/worker")
        expect(waiting).to_contain_text("Deferred", timeout=HANG_GUARD_MS)
        expect(waiting).to_contain_text("Insufficient memory")
        page.screenshot(path=artifacts() / "cluster.png", full_page=True)

        dash.open(page, "/pods?state=Deferred")
        rows = page.locator("#pods tbody tr")
        expect(rows).to_have_count(1, timeout=HANG_GUARD_MS)
        expect(rows.first).to_contain_text("worker")

        dash.kubectl("delete", "pod", "hog", "--wait=true")
        dash.open(page, "/pod/default/worker")
        expect(page.locator("[data-field=memory-applied]")).to_have_text(
            "400Mi / 512Mi", timeout=HANG_GUARD_MS
        )
        expect(state).to_have_text("No resize in flight.")


def test_the_form_prints_the_exact_kubectl_line_and_its_button_resizes(dash: Dash) -> None:
    pid = worker_pid(dash)
    with chromium_sync() as browser:
        page = browser.new_page()
        dash.open(page, "/pod/default/worker")
        expect(page.locator("[data-field=memory-limit]")).to_have_text(
            "512Mi", timeout=HANG_GUARD_MS
        )
        limit_field = page.get_by_label("Memory limit")
        expect(limit_field).to_have_value("512Mi")
        command = page.locator("#kubectl-command")
        button = page.get_by_role("button", name="Apply resize")
        expect(button).to_be_disabled()
        markers = page.locator("#markers tbody tr[data-kind=resize-completed]")
        before = markers.count()

        # the printed line, run in a shell, does what the form describes
        limit_field.fill("600Mi")
        expect(command).to_contain_text("--subresource resize", timeout=HANG_GUARD_MS)
        expect(page.locator("#resize-check")).to_contain_text("the API server accepts this resize")
        line = command.inner_text()
        assert line == (
            "kubectl patch pod worker -n default --subresource resize -p "
            """'{"spec":{"containers":[{"name":"main","resources":{"limits":{"memory":"600Mi"}}}]}}'"""
        )
        subprocess.run(["bash", "-c", line], env=dash.cluster.env(), check=True, timeout=60)
        expect(page.locator("[data-field=memory-applied]")).to_have_text(
            "400Mi / 600Mi", timeout=HANG_GUARD_MS
        )

        # a size the API server refuses is said before anything is sent
        limit_field.fill("300Mi")
        expect(page.locator("#resize-check")).to_contain_text(
            "must be less than or equal to memory limit", timeout=HANG_GUARD_MS
        )

        # the button, with the dashboard's (the user's) identity
        limit_field.fill("700Mi")
        expect(button).to_be_enabled(timeout=HANG_GUARD_MS)
        button.click()
        expect(page.locator("#resize-result")).to_contain_text("resize sent", timeout=HANG_GUARD_MS)
        expect(page.locator("[data-field=memory-applied]")).to_have_text(
            "400Mi / 700Mi", timeout=HANG_GUARD_MS
        )
        expect(markers).to_have_count(before + 2, timeout=HANG_GUARD_MS)
        page.screenshot(path=artifacts() / "pod.png", full_page=True)

    pod = dash.pod("worker")
    assert pod is not None
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert worker_pid(dash) == pid  # the same process, resized in place
    assert memory_limit_in_cgroup(pid) == 700 * Mi


def dashboard_process(cluster: Cluster) -> psutil.Process | None:
    for child in psutil.Process(cluster.process.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.cmdline()[1:4] == ["-m", "inplace", "dashboard"]:
                return child
    return None


def test_inplace_up_restarts_a_dashboard_that_dies_at_the_same_url(dash: Dash) -> None:
    first = dashboard_process(dash.cluster)
    assert first is not None
    first.kill()
    first.wait(30)

    def replaced() -> bool:
        now = dashboard_process(dash.cluster)
        return now is not None and now.pid != first.pid and _healthy(dash.base)

    wait_until(replaced, timeout=60, what="a new dashboard process")
    token = dash.url.split("token=", 1)[1]
    request = urllib.request.Request(
        f"{dash.base}/api/view?view=pods", headers={"Authorization": f"Bearer {token}"}
    )

    def listed() -> bool:
        with urllib.request.urlopen(request, timeout=10) as response:
            rows = json.loads(response.read())["rows"]
        return any(row["key"] == "default/worker" for row in rows)

    wait_until(listed, timeout=60, what="the same URL and token serve the pods again")
    assert "dashboard exited" in dash.cluster.output.read_text()
