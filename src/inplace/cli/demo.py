"""`inplace demo`: the whole story in one command, with real processes and real kubectl.

    inplace demo                 # a throw-away cluster, five acts, about a minute
    inplace demo --use-current   # against the cluster in $KUBECONFIG

It prints a timed narrative with every kubectl command it runs (and each manifest), so a
reader can repeat any step by hand, and checks that each act behaved as told:

(a) pods asking for 1Gi: a 500M ``inplace stress`` passes, a 1.5G one is OOM-killed;
(b) a running 1Gi pod is resized to 2Gi in place — its PID shown unchanged — and then the
    1.5G stress passes in that same pod (``kubectl exec``);
(c) the same spike with ``inplace.dev/oom-kill-disable``: paused at the limit (not killed),
    bumped by ``inplace.dev/memory-on-pause``, resumed, finished, no restart;
(d) a JVM-style container whose ``resizePolicy`` restarts it for memory is restarted exactly
    once;
(e) a Deployment resized in place through its template: same pods, same processes.

Exit status 0 only if every act did what it said. The stress is this package's own
``inplace stress``: the pods' command in acts (a) and (c), and in act (b) run with
``kubectl exec`` in the resized pod (in its cgroups, so it counts against the new limit), so
nothing but this package and kubectl is needed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["DemoFailure", "add_arguments", "main"]

NAMESPACE: Final = "inplace-demo"
ACT_TIMEOUT: Final = 90.0
PY: Final = sys.executable


class DemoFailure(Exception):
    """An act did not behave as told (the message says how)."""


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--use-current",
        action="store_true",
        help="play against the cluster in $KUBECONFIG instead of a throw-away one",
    )
    parser.add_argument(
        "--keep", action="store_true", help="leave the demo's pods and namespace behind"
    )
    parser.add_argument(
        "--acts",
        default="abcde",
        help="which acts to play, in order (default: abcde)",
    )
    return parser


# -- narration ---------------------------------------------------------------------------------


class Narrator:
    def __init__(self, out: Callable[[str], None] = print) -> None:
        self.started = time.monotonic()
        self.out = out

    def at(self) -> str:
        return f"[{time.monotonic() - self.started:6.1f}s]"

    def say(self, text: str) -> None:
        self.out(f"{self.at()} {text}")

    def act(self, title: str) -> None:
        self.out("")
        self.out(f"{self.at()} ━━ {title}")

    def ok(self, text: str) -> None:
        self.out(f"{self.at()}   ✓ {text}")

    def command(self, argv: Sequence[str], stdin: str | None = None) -> None:
        shown = "kubectl " + " ".join(shlex.quote(a) for a in argv)
        if stdin is None:
            self.out(f"{self.at()} $ {shown}")
            return
        self.out(f"{self.at()} $ {shown} <<'YAML'")
        for line in stdin.rstrip("\n").splitlines():
            self.out(f"           {line}")
        self.out("           YAML")


# -- kubectl -------------------------------------------------------------------------------------


class Kubectl:
    def __init__(self, narrator: Narrator, env: dict[str, str]) -> None:
        self.n = narrator
        self.env = env

    def run(
        self, *argv: str, stdin: str | None = None, show: bool = True, check: bool = True
    ) -> str:
        if show:
            self.n.command(argv, stdin)
        done = subprocess.run(
            ["kubectl", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise DemoFailure(f"kubectl {' '.join(argv)} failed: {done.stderr.strip()}")
        if show and done.stdout.strip():
            for line in done.stdout.rstrip("\n").splitlines():
                self.n.out(f"           {line}")
        return done.stdout

    def get(self, kind: str, name: str) -> dict[str, Any]:
        out = self.run("get", kind, name, "-n", NAMESPACE, "-o", "json", show=False)
        return dict(json.loads(out))

    def pods(self, selector: str) -> list[dict[str, Any]]:
        out = self.run("get", "pods", "-n", NAMESPACE, "-l", selector, "-o", "json", show=False)
        return list(json.loads(out)["items"])

    def events(self, name: str) -> list[dict[str, Any]]:
        out = self.run(
            "get",
            "events",
            "-n",
            NAMESPACE,
            "--field-selector",
            f"involvedObject.name={name}",
            "-o",
            "json",
            show=False,
        )
        return list(json.loads(out)["items"])


def wait_for(what: str, check: Callable[[], Any], timeout: float = ACT_TIMEOUT) -> Any:
    """Poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise DemoFailure(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def container_status(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def pid_of(pod: dict[str, Any]) -> int | None:
    cid = container_status(pod).get("containerID") or ""
    return int(cid.removeprefix("inplace://")) if cid.startswith("inplace://") else None


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def stress(size: str, hold: str = "2") -> list[str]:
    return [PY, "-m", "inplace", "stress", "--vm", "1", "--vm-bytes", size, "--vm-hold", hold]


def pod_manifest(
    name: str,
    command: list[str],
    memory: str,
    *,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
    resize_policy: list[dict[str, str]] | None = None,
) -> str:
    container: dict[str, Any] = {
        "name": "main",
        "image": "python",
        "command": command,
        **_env(),
        "resources": {
            "requests": {"cpu": "250m", "memory": memory},
            "limits": {"cpu": "500m", "memory": memory},
        },
    }
    if resize_policy is not None:
        container["resizePolicy"] = resize_policy
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    if annotations:
        meta["annotations"] = annotations
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 2,
            "containers": [container],
        },
    }
    return _yaml(body)


def _env() -> dict[str, Any]:
    """The pods run this very ``inplace`` (``python -m inplace stress``): when it is found
    through ``PYTHONPATH`` (a source checkout), the pods get the same."""
    path = os.environ.get("PYTHONPATH")
    return {"env": [{"name": "PYTHONPATH", "value": path}]} if path else {}


def _yaml(body: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(body, sort_keys=False, width=200))


def resize_patch(memory: str) -> str:
    size = {"memory": memory}
    resources = {"requests": size, "limits": size}
    body = {"spec": {"containers": [{"name": "main", "resources": resources}]}}
    return json.dumps(body, separators=(",", ":"))


# -- the acts ------------------------------------------------------------------------------------


class Demo:
    def __init__(self, kubectl: Kubectl, narrator: Narrator) -> None:
        self.k = kubectl
        self.n = narrator

    def finished(self, name: str) -> dict[str, Any] | None:
        pod = self.k.get("pod", name)
        return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

    def running(self, name: str) -> dict[str, Any] | None:
        pod = self.k.get("pod", name)
        state = container_status(pod).get("state") or {}
        return pod if pod["status"].get("phase") == "Running" and "running" in state else None

    def delete(self, *names: str) -> None:
        self.k.run("delete", "pod", "-n", NAMESPACE, *names, "--wait=true", "--timeout=60s")

    def act_a(self) -> None:
        self.n.act(
            "Act (a): pods asking for 1Gi. A 500M stress passes; a 1.5G stress is OOM-killed."
        )
        self.k.run("apply", "-f", "-", stdin=pod_manifest("stress-500m", stress("500M"), "1Gi"))
        self.k.run("apply", "-f", "-", stdin=pod_manifest("stress-1500m", stress("1500M"), "1Gi"))
        small = wait_for("stress-500m to finish", lambda: self.finished("stress-500m"))
        big = wait_for("stress-1500m to finish", lambda: self.finished("stress-1500m"))
        self.k.run("get", "pods", "-n", NAMESPACE)
        done = (container_status(small).get("state") or {}).get("terminated") or {}
        if small["status"]["phase"] != "Succeeded" or done.get("exitCode") != 0:
            raise DemoFailure(f"the 500M stress should pass in 1Gi, but: {done}")
        self.n.ok("500M in 1Gi: Completed, exit code 0")
        killed = (container_status(big).get("state") or {}).get("terminated") or {}
        if killed.get("reason") != "OOMKilled":
            raise DemoFailure(f"the 1.5G stress should be OOM-killed in 1Gi, but: {killed}")
        self.n.ok("1.5G in 1Gi: OOMKilled (exit code 137) — hours of work would be lost here")
        self.delete("stress-500m", "stress-1500m")

    def act_b(self) -> None:
        self.n.act(
            "Act (b): the running pod is resized to 2Gi in place, its PID unchanged; "
            "then the 1.5G stress passes."
        )
        command = ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
        self.k.run("apply", "-f", "-", stdin=pod_manifest("worker", command, "1Gi"))
        pod = wait_for("worker to run", lambda: self.running("worker"))
        pid = pid_of(pod)
        self.n.ok(f"worker runs as PID {pid} with 1Gi")
        self.k.run(
            "patch",
            "pod",
            "worker",
            "-n",
            NAMESPACE,
            "--subresource",
            "resize",
            "-p",
            resize_patch("2Gi"),
        )

        def resized() -> dict[str, Any] | None:
            pod = self.k.get("pod", "worker")
            limits = (container_status(pod).get("resources") or {}).get("limits") or {}
            return pod if limits.get("memory") == "2Gi" else None

        pod = wait_for("the resize to 2Gi", resized)
        jsonpath = (
            "{.status.containerStatuses[0].containerID} restarts="
            "{.status.containerStatuses[0].restartCount} "
            'limits={.status.containerStatuses[0].resources.limits.memory}{"\\n"}'
        )
        self.k.run("get", "pod", "worker", "-n", NAMESPACE, "-o", f"jsonpath={jsonpath}")
        if pid_of(pod) != pid or container_status(pod).get("restartCount") != 0:
            raise DemoFailure(
                f"the resize should keep PID {pid} and no restart: {container_status(pod)}"
            )
        self.n.ok(f"resized to 2Gi in place: still PID {pid}, 0 restarts")
        # kubectl exec runs the stress in the container's cgroups: its memory counts
        # against the pod's limit, now 2Gi.
        self.k.run("exec", "worker", "-n", NAMESPACE, "--", *stress("1500M"))
        pod = self.k.get("pod", "worker")
        if (
            self.running("worker") is None
            or pid_of(pod) != pid
            or container_status(pod).get("restartCount") != 0
        ):
            raise DemoFailure(
                f"worker should still run as PID {pid}, never restarted: {container_status(pod)}"
            )
        self.n.ok(f"1.5G in 2Gi: exit code 0, in the same pod (still PID {pid}, 0 restarts)")
        self.delete("worker")

    def act_c(self) -> None:
        self.n.act(
            "Act (c): the same spike with oom-kill-disable: paused, bumped, resumed, finished."
        )
        annotations = {
            "inplace.dev/oom-kill-disable": "true",
            "inplace.dev/memory-on-pause": "x2",
            "inplace.dev/memory-max": "4Gi",
        }
        manifest = pod_manifest("pauser", stress("1500M"), "1Gi", annotations=annotations)
        self.k.run("apply", "-f", "-", stdin=manifest)

        def paused_or_done() -> dict[str, Any] | None:
            pod = self.k.get("pod", "pauser")
            cond = condition(pod, "MemoryPaused")
            if cond and cond.get("status") == "True":
                return pod
            return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

        def saw_pause() -> list[dict[str, Any]]:
            return [e for e in self.k.events("pauser") if e.get("reason") == "MemoryPaused"]

        wait_for("pauser to reach its limit", paused_or_done)
        paused = wait_for("the MemoryPaused event", saw_pause)
        self.n.ok(f"paused, not killed: {paused[0].get('message')}")
        pod = wait_for("pauser to finish", lambda: self.finished("pauser"))
        self.k.run(
            "get", "events", "-n", NAMESPACE, "--field-selector", "involvedObject.name=pauser"
        )
        status = container_status(pod)
        done = (status.get("state") or {}).get("terminated") or {}
        limits = (status.get("resources") or {}).get("limits") or {}
        if done.get("exitCode") != 0 or status.get("restartCount") != 0:
            raise DemoFailure(f"pauser should finish without a restart, but: {status}")
        if limits.get("memory") != "2Gi":
            raise DemoFailure(f"pauser should have been bumped to 2Gi, but runs with {limits}")
        self.n.ok("bumped 1Gi → 2Gi by inplace.dev/memory-on-pause, resumed, Completed, 0 restarts")
        self.delete("pauser")

    def act_d(self) -> None:
        self.n.act(
            "Act (d): a JVM-style container that must restart for a new heap size restarts "
            "exactly once."
        )
        policy = [
            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
            {"resourceName": "memory", "restartPolicy": "RestartContainer"},
        ]
        command = ["sh", "-c", "echo started with pid $$$$; exec sleep 3600"]
        manifest = pod_manifest(
            "jvm", command, "512Mi", restart_policy="Always", resize_policy=policy
        )
        self.k.run("apply", "-f", "-", stdin=manifest)
        pod = wait_for("jvm to run", lambda: self.running("jvm"))
        before = pid_of(pod)
        self.k.run(
            "patch",
            "pod",
            "jvm",
            "-n",
            NAMESPACE,
            "--subresource",
            "resize",
            "-p",
            resize_patch("1Gi"),
        )

        def restarted() -> dict[str, Any] | None:
            pod = self.running("jvm")
            if pod is None or condition(pod, "PodResizeInProgress") is not None:
                return None
            limits = (container_status(pod).get("resources") or {}).get("limits") or {}
            return pod if limits.get("memory") == "1Gi" else None

        pod = wait_for("jvm to run at 1Gi", restarted)
        self.k.run("get", "pod", "jvm", "-n", NAMESPACE)
        count = container_status(pod).get("restartCount")
        if count != 1 or pid_of(pod) == before:
            raise DemoFailure(f"jvm should have restarted exactly once, restartCount={count}")
        self.n.ok(f"restarted exactly once for its memory (PID {before} → {pid_of(pod)})")
        self.delete("jvm")

    def act_e(self) -> None:
        self.n.act("Act (e): a Deployment resized in place through its template.")
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NAMESPACE},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "terminationGracePeriodSeconds": 2,
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "command": ["sleep", "3600"],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "128Mi"},
                                    "limits": {"cpu": "200m", "memory": "128Mi"},
                                },
                            }
                        ],
                    },
                },
            },
        }
        self.k.run("apply", "-f", "-", stdin=_yaml(deployment))

        def ready() -> list[dict[str, Any]] | None:
            pods = [p for p in self.k.pods("app=web") if self.running_pod(p)]
            return pods if len(pods) == 2 else None

        before = {p["metadata"]["name"]: pid_of(p) for p in wait_for("2 web pods", ready)}
        self.n.ok(f"running: {', '.join(f'{n} (PID {p})' for n, p in before.items())}")
        self.k.run(
            "set",
            "resources",
            "deployment/web",
            "-n",
            NAMESPACE,
            "--requests=memory=256Mi",
            "--limits=memory=256Mi",
        )

        def resized() -> list[dict[str, Any]] | None:
            pods = self.k.pods("app=web")
            at_size = [
                p
                for p in pods
                if ((container_status(p).get("resources") or {}).get("limits") or {}).get("memory")
                == "256Mi"
            ]
            return pods if len(pods) == 2 and len(at_size) == 2 else None

        pods = wait_for("the web pods at 256Mi", resized)
        self.k.run("get", "pods", "-n", NAMESPACE, "-l", "app=web")
        after = {p["metadata"]["name"]: pid_of(p) for p in pods}
        restarts = [container_status(p).get("restartCount") for p in pods]
        if after != before or any(restarts):
            raise DemoFailure(f"the web pods should keep their names and PIDs: {before} → {after}")
        replicasets = json.loads(
            self.k.run(
                "get", "replicasets", "-n", NAMESPACE, "-l", "app=web", "-o", "json", show=False
            )
        )["items"]
        if len(replicasets) != 1:
            raise DemoFailure(
                f"an in-place resize makes no new ReplicaSet, found {len(replicasets)}"
            )
        self.n.ok("same pods, same PIDs, 0 restarts, one ReplicaSet: resized in place")
        self.k.run("delete", "deployment", "web", "-n", NAMESPACE, "--wait=true", "--timeout=60s")

    @staticmethod
    def running_pod(pod: dict[str, Any]) -> bool:
        state = container_status(pod).get("state") or {}
        return pod["status"].get("phase") == "Running" and "running" in state


# -- the cluster ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def throwaway_cluster(narrator: Narrator, root: Path) -> Iterator[dict[str, str]]:
    """``inplace up`` in ``root`` (one node, 2 CPUs, 4Gi); stopped and removed afterwards."""
    data = root / "data"
    port = _free_port()
    argv = [
        PY,
        "-m",
        "inplace",
        "up",
        "--data-dir",
        str(data),
        "--port",
        str(port),
        "--nodes",
        "1",
        "--node-cpu",
        "2",
        "--node-memory",
        "4Gi",
    ]
    narrator.say(f"starting a throw-away cluster: inplace {' '.join(argv[3:])}")
    log = root / "up.log"
    with open(log, "wb") as out:
        up = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    env = {**os.environ, "KUBECONFIG": str(data / "kubeconfig.yaml")}
    try:

        def ready() -> bool:
            if up.poll() is not None:
                raise DemoFailure(f"inplace up exited early:\n{log.read_text()}")
            if "ready in" not in log.read_text():
                return False
            nodes = subprocess.run(
                ["kubectl", "get", "nodes", "-o", "json"], capture_output=True, text=True, env=env
            )
            if nodes.returncode != 0:
                return False
            items = json.loads(nodes.stdout)["items"]
            return any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for n in items
                for c in n["status"].get("conditions") or ()
            )

        wait_for("the cluster to be ready", ready, timeout=60)
        narrator.say(f"ready. To follow along: export KUBECONFIG={env['KUBECONFIG']}")
        yield env
    finally:
        if up.poll() is None:
            subprocess.run(
                ["kubectl", "delete", "pods", "--all", "-A", "--wait=true", "--timeout=60s"],
                capture_output=True,
                env=env,
                timeout=90,
            )
            up.send_signal(signal.SIGTERM)
            try:
                up.wait(30)
            except subprocess.TimeoutExpired:
                up.kill()
                up.wait()
        _unmount_under(root)


def _unmount_under(directory: Path) -> None:
    """Lazily unmount what the node agent left mounted in the throw-away data dir (pods'
    namespace pins outlive their agent by design), deepest first, so it can be removed."""
    prefix = str(directory.resolve())
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    points = {line.split(" ")[4] for line in lines if len(line.split(" ")) > 4}
    ours = [p for p in points if p == prefix or p.startswith(prefix + "/")]
    for point in sorted(ours, key=lambda p: -p.count("/")):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    narrator = Narrator(out)
    unknown = sorted(set(args.acts) - set("abcde"))
    if unknown or not args.acts:
        out(f"inplace demo: --acts takes letters from abcde, not {''.join(unknown) or 'nothing'}")
        return 2
    if shutil.which("kubectl") is None:
        out("inplace demo: kubectl is needed on PATH (https://kubernetes.io/docs/tasks/tools/)")
        return 2
    out("inplace demo: restart-free vertical scaling in five acts, with real processes")
    with tempfile.TemporaryDirectory(prefix="inplace-demo-", ignore_cleanup_errors=True) as tmp:
        scratch = Path(tmp)
        try:
            with contextlib.ExitStack() as stack:
                if args.use_current:
                    if not os.environ.get("KUBECONFIG"):
                        out("inplace demo: --use-current needs $KUBECONFIG")
                        return 2
                    env = dict(os.environ)
                else:
                    env = stack.enter_context(throwaway_cluster(narrator, scratch))
                kubectl = Kubectl(narrator, env)
                kubectl.run("create", "namespace", NAMESPACE, check=False)
                if not args.keep:
                    stack.callback(
                        kubectl.run,
                        "delete",
                        "namespace",
                        NAMESPACE,
                        "--wait=true",
                        "--timeout=90s",
                        show=False,
                        check=False,
                    )
                demo = Demo(kubectl, narrator)
                acts = {
                    "a": demo.act_a,
                    "b": demo.act_b,
                    "c": demo.act_c,
                    "d": demo.act_d,
                    "e": demo.act_e,
                }
                for letter in args.acts:
                    acts[letter]()
        except DemoFailure as exc:
            out("")
            narrator.say(f"✗ the demo failed: {exc}")
            return 1
    out("")
    narrator.say(f"✓ every act ({', '.join(args.acts)}) behaved as told")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = add_arguments(
        argparse.ArgumentParser(prog="inplace demo", description=(__doc__ or "").split("\n\n")[0])
    )
    return run(parser.parse_args(argv))
