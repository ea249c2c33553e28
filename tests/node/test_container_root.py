"""A container's own root and PID namespace, built by the real shim in a real pod sandbox
(root only, no cluster): writes land in the container's layer, never on the host; PID 1 is
the container's init; ``/proc/sys`` is read-only unless privileged; with the copy-on-write
root off, the host's root is read-only with a writable ``/tmp``, and the layer says why."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inplace.node import shim as shim_program
from inplace.node.shim.containerroot import FALLBACK_NOTE, STAGING_FALLBACK

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and mounts need root")

PROBE = "/etc/inplace-container-root-probe"
SCRATCH = "/tmp/inplace-container-root-tmp"
SYSCTL = "/proc/sys/kernel/printk_ratelimit"
"""Written with its own value: a no-op only a writable ``/proc/sys`` accepts."""
SCRIPT = f"""
echo "pid $$"
echo "pid1 $(cat /proc/1/comm)"
echo "hostname $(hostname)"
if echo layered > {PROBE}; then echo "etc $(cat {PROBE})"; else echo "etc refused"; fi
if echo scratch > {SCRATCH}; then echo "tmp ok"; else echo "tmp refused"; fi
v=$(cat {SYSCTL})
if echo "$v" > {SYSCTL}; then echo "sysctl written"; else echo "sysctl refused"; fi
echo "data $(ls -A {{data}} | wc -l)"
if [ -e {STAGING_FALLBACK} ]; then echo "staging shown"; else echo "staging absent"; fi
"""


def tool(*args: str) -> str:
    out = subprocess.run(shim_program.command(*args), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture
def pod(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A pinned pod sandbox (mount, UTS and IPC namespaces) hiding ``tmp_path/data``."""
    data = tmp_path / "data"
    (data / "pod").mkdir(parents=True)
    plan = {
        "root": str(data / "pod" / "root"),
        "pin": str(data / "pins" / "pod"),
        "hostname": "boxed",
        "ipc": True,
        "hide": [str(data)],
        "tmpfs": {},
        "mounts": [],
    }
    Path(plan["root"]).mkdir()
    (data / "pod" / "sandbox.json").write_text(json.dumps(plan))
    tool("sandbox", str(data / "pod" / "sandbox.json"))
    try:
        yield {"data": data, "pins": {"mnt": plan["pin"], "uts": f"{plan['pin']}.uts"}}
    finally:
        tool("unpin", f"{plan['pin']}.ipc", f"{plan['pin']}.uts", plan["pin"])
        tool("release", str(data / "pins"))


def run_container(pod: dict[str, Any], **rootfs: Any) -> tuple[dict[str, str], Path]:
    """Run the probes through the shim's protocol (as the agent does); what they printed,
    by first word, and the container's layer."""
    data: Path = pod["data"]
    layer = data / "pod" / "layers" / "main"
    launch = {
        "namespaces": pod["pins"],
        "pid_namespace": "container",
        "rootfs": {"layer": str(layer), "hide": [str(data)], **rootfs},
        "working_dir": "/",
        "env": {"PATH": "/usr/bin:/bin"},
    }
    launch_path = data / "launch.json"
    launch_path.write_text(json.dumps(launch))
    log = data / "main.log"
    go_r, go_w = os.pipe()
    report_r, report_w = os.pipe()
    with open(log, "wb") as out:
        shim = subprocess.Popen(
            [
                *shim_program.command("shim", str(go_r), str(report_w)),
                *(str(data / "exit.json"), str(launch_path), shim_program.NATIVE_PROGRAM),
                *("sh", "-c", SCRIPT.replace("{data}", str(data))),
            ],
            pass_fds=(go_r, report_w),
            start_new_session=True,
            stdout=out,
            stderr=out,
        )
    os.close(go_r)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as report:
        assert report.readline().split()[0] == b"child"
        os.write(go_w, b"go")
        words = report.read().split()
    assert words[0] == b"pid", words
    os.write(go_w, b"ok")
    os.close(go_w)
    assert shim.wait(timeout=30) == 0
    status = json.loads((data / "exit.json").read_text())
    assert status["exit_code"] == 0 and status["pid"] == int(words[1]), status
    lines = log.read_text().splitlines()
    return {line.split(" ", 1)[0]: line.partition(" ")[2] for line in lines if line}, layer


def test_a_container_writes_its_own_layer_in_its_own_pid_namespace(pod: dict[str, Any]) -> None:
    seen, layer = run_container(pod)
    assert seen["etc"] == "layered"
    assert not Path(PROBE).exists()  # the host's /etc is untouched
    uppers = list((layer / "upper").glob(f"*/{Path(PROBE).name}"))
    assert [p.read_text() for p in uppers] == ["layered\n"]
    # PID 1: the container's init, the shim's native half (exec'd before the workload runs)
    assert seen["pid"] == "2" and seen["pid1"] == "inplace-shim"
    assert seen["hostname"] == "boxed"
    assert seen["sysctl"] == "refused"
    assert seen["data"] == "0"  # the cluster's data stays hidden
    assert not (layer / FALLBACK_NOTE).exists()
    # a restarted container starts from a clean layer
    again, _ = run_container(pod)
    assert again["etc"] == "layered" and len(list((layer / "upper").glob("*/*probe"))) == 1


def test_a_root_is_built_where_volumes_cover_every_hidden_directory(pod: dict[str, Any]) -> None:
    """An emptyDir at /tmp over a node whose data is under /tmp: no hidden directory exists in
    the pod, so the root is staged in the pod's own root, where no container sees it."""
    seen, _ = run_container(pod, hide=[str(pod["data"] / "covered")])
    assert seen["etc"] == "layered" and seen["pid"] == "2"
    assert not Path(PROBE).exists()
    assert seen["staging"] == "absent"
    assert seen["data"] == "0"


def test_read_only_root_filesystem_keeps_only_volumes_writable(pod: dict[str, Any]) -> None:
    """``readOnlyRootFilesystem``: the host's directories read-only, no layer written to and
    no scratch ``/tmp`` (upstream gives none either); not the kernel's fallback, so no note."""
    seen, layer = run_container(pod, read_only=True)
    assert seen["etc"] == "refused" and seen["tmp"] == "refused"
    assert seen["sysctl"] == "refused" and seen["pid"] == "2"
    assert not Path(PROBE).exists() and not Path(SCRATCH).exists()
    assert not (layer / FALLBACK_NOTE).exists()


def test_privileged_may_write_proc_sys(pod: dict[str, Any]) -> None:
    seen, _ = run_container(pod, privileged=True)
    assert seen["sysctl"] == "written" and seen["etc"] == "layered"
    assert not Path(PROBE).exists()


def test_without_copy_on_write_the_root_is_read_only(pod: dict[str, Any]) -> None:
    seen, layer = run_container(pod, copy_on_write=False)
    assert seen["etc"] == "refused" and seen["tmp"] == "ok"
    assert not Path(PROBE).exists() and not Path(SCRATCH).exists()
    assert "turned off" in (layer / FALLBACK_NOTE).read_text()
