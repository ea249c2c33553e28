"""The operator's Helm chart (``deploy/helm/inplace``) through the ``helm`` :mod:`.build` made:
rendered (``deploy/manifests/inplace.yaml`` is its default render, kept current by
``scripts/upstream manifest``) and installed on a test bed (``scripts/upstream up --operator``).

On the test bed the chart runs as on any cluster, with what the bed cannot give overridden in
``operator-values.yaml`` beside this module and on the command line:

* the pods' images are recorded, not pulled: inplace's node agent runs a container's command
  on the host, so the operator pods run this host's ``inplace`` (``python -m inplace`` of the
  interpreter running this) as root, on the host's root filesystem;
* so the chart's scratch volume (an emptyDir at ``/tmp``, which a pod there sees in place of
  the host's ``/tmp``) goes where it hides nothing that command reads: a checkout or its
  virtual environment may well live under ``/tmp`` (:func:`scratch_mount_path`);
* no Service traffic is routed: the API server calls the webhook at the node's address
  (``webhook.url``), and every pod shares the host's network, so the ports are free ones of the
  host's, the same for both replicas (the operator binds its webhook and health ports with
  ``SO_REUSEPORT``), and the metrics port is off (Prometheus' server cannot share one).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from .build import module_dir

__all__ = [
    "CHART",
    "MANIFEST",
    "NAMESPACE",
    "RELEASE",
    "ChartError",
    "Install",
    "install",
    "install_image",
    "operator_paths",
    "render",
    "scratch_mount_path",
    "uninstall",
    "write_manifest",
]

REPO = module_dir.parent
CHART = REPO / "deploy" / "helm" / "inplace"
MANIFEST = REPO / "deploy" / "manifests" / "inplace.yaml"
TESTBED_VALUES = Path(__file__).with_name("operator-values.yaml")
RELEASE = "inplace"
NAMESPACE = "inplace-system"
DEPLOYMENT = "inplace"
"""The chart's full name for release ``inplace``: the Deployment, Lease and webhook
configuration are all named so."""
SCRATCH_MOUNT_PATHS = ("/tmp", "/var/tmp", "/run/inplace-operator")
"""Where the bed may mount the operator's scratch volume, the chart's default first."""


class ChartError(Exception):
    """helm failed, or the operator did not become Available; the message says why."""


def _run(argv: list[str], timeout: float = 120) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise ChartError(f"{' '.join(argv[:3])} ... failed: {out.stderr.strip()}")
    return out.stdout


def render(helm: Path, *options: str, release: str = RELEASE, namespace: str = NAMESPACE) -> str:
    """``helm template`` of the chart: the manifests a ``helm install`` with `options` makes."""
    return _run([str(helm), "template", release, str(CHART), "--namespace", namespace, *options])


def write_manifest(helm: Path) -> Path:
    """``deploy/manifests/inplace.yaml``: the chart with its default values, for
    ``kubectl apply`` without Helm (into the ``inplace-system`` namespace)."""
    MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    MANIFEST.write_text(render(helm))
    return MANIFEST


def operator_paths() -> list[str]:
    """What the operator's pods read from the host: this interpreter (the path they run and,
    through ``realpath``, what it links to), its virtual environment and base installation,
    its ``sys.path`` (site-packages, an editable install's source), the ``inplace`` package
    and this checkout."""
    paths = [sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, str(REPO)]
    paths += [entry for entry in sys.path if entry]
    spec = importlib.util.find_spec("inplace")
    if spec is not None:
        paths += list(spec.submodule_search_locations or ())
    return paths


def scratch_mount_path(
    needed: Iterable[str], candidates: Sequence[str] = SCRATCH_MOUNT_PATHS
) -> str:
    """The first of ``candidates`` that holds none of ``needed``: on an agent's node the
    emptyDir is mounted over the host's directory of that name, and a pod sees nothing of
    what was beneath it (``exec failed: … No such file or directory`` for an interpreter
    there). Paths are compared as written and with symbolic links resolved."""
    held = {os.path.abspath(p) for p in needed} | {os.path.realpath(p) for p in needed}
    for candidate in candidates:
        mounts = {os.path.abspath(candidate), os.path.realpath(candidate)}
        if not any(os.path.commonpath([path, mount]) == mount for path in held for mount in mounts):
            return candidate
    raise ChartError(
        f"every place for the operator's scratch volume ({', '.join(candidates)}) would hide "
        f"what its pods run: {', '.join(sorted(held))}"
    )


@dataclass(frozen=True)
class Install:
    """The operator installed on a test bed."""

    release: str
    namespace: str
    deployment: str
    webhook_url: str


def install(
    helm: Path,
    kubeconfig: Path,
    *,
    node_address: str,
    ports: dict[str, int],
    options: Sequence[str] = (),
    timeout: float = 120,
) -> Install:
    """``helm install`` the chart with the test bed's overrides (and helm's `options`); return
    once the operator's Deployment is Available and each of its pods serves, else ChartError
    with its pods' state and logs."""
    url = f"https://{node_address}:{ports['webhook']}/mutate"
    scratch = scratch_mount_path(operator_paths())
    _helm_install(
        helm,
        kubeconfig,
        [
            "--values",
            str(TESTBED_VALUES),
            "--set-json",
            "command=" + json.dumps([sys.executable, "-m", "inplace"]),
            "--set",
            f"webhook.url={url}",
            "--set",
            f"webhook.port={ports['webhook']}",
            "--set",
            f"health.port={ports['health']}",
            "--set",
            "metrics.port=0",
            "--set",
            f"scratch.mountPath={scratch}",
            *options,
        ],
    )
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", NAMESPACE]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _available(kubectl) and _serving(kubectl, {ports["webhook"], ports["health"]}):
            return Install(RELEASE, NAMESPACE, DEPLOYMENT, url)
        time.sleep(0.5)
    raise ChartError(
        f"deployment {NAMESPACE}/{DEPLOYMENT} not Available within {timeout:.0f} s:\n"
        + _pods_report(kubectl)
    )


def _get(kubectl: list[str], *what: str) -> dict[str, Any] | None:
    out = subprocess.run(
        [*kubectl, "get", *what, "-o", "json"], capture_output=True, text=True, timeout=30
    )
    return dict(json.loads(out.stdout)) if out.returncode == 0 else None


def _available(kubectl: list[str]) -> bool:
    deployment = _get(kubectl, "deployment", DEPLOYMENT)
    if deployment is None:
        return False
    status = deployment.get("status") or {}
    available = any(
        c.get("type") == "Available" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    return available and status.get("readyReplicas", 0) == wanted


def _serving(kubectl: list[str], ports: set[int]) -> bool:
    """Each pod's process listens on the webhook and health ports. The agents run no probes
    (a running container is ready), so Available alone would count a replica that is about to
    fail; the process itself is on this host, and is asked."""
    pods = _get(kubectl, "pods", "-l", "app.kubernetes.io/component=operator")
    if not pods or not pods["items"]:
        return False
    for pod in pods["items"]:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if not statuses or "running" not in (statuses[0].get("state") or {}):
            return False
        pid = int(str(statuses[0].get("containerID", "")).removeprefix("inplace://") or 0)
        try:
            listening = {
                c.laddr.port
                for c in psutil.Process(pid).net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN
            }
        except (psutil.Error, ValueError):
            return False
        if not ports <= listening:
            return False
    return True


def _pods_report(kubectl: list[str]) -> str:
    """The operator's pods and the end of each one's log: why it is not ready."""

    def run(*args: str) -> str:
        out = subprocess.run([*kubectl, *args], capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip()

    lines = [run("get", "pods", "-o", "wide")]
    names = run("get", "pods", "-o", "jsonpath={.items[*].metadata.name}").split()
    for name in names:
        lines.append(f"--- {name}:")
        lines.append(run("logs", name, "--tail=8"))
    return "\n".join(lines)


def uninstall(helm: Path, kubeconfig: Path, *, timeout: float = 120) -> None:
    """``helm uninstall --cascade foreground``: the release's objects deleted (the
    Deployment once its pods are). Not ``--wait``: helm gives up on an object still
    terminating on a loaded machine; a caller waits for what it needs gone."""
    _run(
        [
            str(helm),
            "uninstall",
            RELEASE,
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            NAMESPACE,
            "--cascade",
            "foreground",
            "--timeout",
            f"{int(timeout)}s",
        ],
        timeout=timeout + 30,
    )


def _helm_install(
    helm: Path, kubeconfig: Path, options: Sequence[str], timeout: float = 120
) -> None:
    """``helm install`` of the chart as release :data:`RELEASE` in :data:`NAMESPACE`."""
    _run(
        [
            str(helm),
            "install",
            RELEASE,
            str(CHART),
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            NAMESPACE,
            "--create-namespace",
            *options,
        ],
        timeout=timeout + 30,
    )


def install_image(
    helm: Path,
    kubeconfig: Path,
    *,
    repository: str,
    tag: str,
    options: Sequence[str] = (),
    timeout: float = 180,
) -> Install:
    """``helm install`` the chart as a user does on a real cluster: only the image's
    repository and tag set (no bed-only value: no webhook URL, no root, no host command), on
    kubelet nodes that have the image. The kubelet runs the chart's probes, so helm's
    ``--wait`` (the Deployment Available) means each pod serves; the API server calls the
    webhook through its Service. ChartError with the pods' state and logs otherwise."""
    values = ["--set", f"image.repository={repository}", "--set", f"image.tag={tag}"]
    try:
        _helm_install(
            helm, kubeconfig, [*values, *options, "--wait", f"--timeout={int(timeout)}s"], timeout
        )
    except ChartError as exc:
        kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", NAMESPACE]
        raise ChartError(f"{exc}\n{_pods_report(kubectl)}") from exc
    return Install(RELEASE, NAMESPACE, DEPLOYMENT, f"service {DEPLOYMENT}-webhook")
