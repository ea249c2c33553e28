"""The shim's pure parts: paths resolved inside a root, mount points made without touching
what they would cover; a real filter and identity applied by the shim's ``exec``; and the
start protocol's ack, without which the shim kills a workload no agent recorded."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from inplace.node import shim as shim_program
from inplace.node.seccomp import compile_profile, runtime_default_profile
from inplace.node.shim.kernel import SetupError
from inplace.node.shim.paths import ensure_path, resolve_in_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "etc").mkdir(parents=True)
    (r / "run").mkdir()
    (r / "var").mkdir()
    (r / "var" / "run").symlink_to("/run")
    (r / "escape").symlink_to("../../..")
    (r / "loop").symlink_to("loop")
    return r


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/etc/config", "etc/config"),
        ("etc/../etc/./x", "etc/x"),
        ("/var/run/secrets", "run/secrets"),  # an absolute symlink restarts at the root
        ("/../../etc", "etc"),
        ("/escape/etc", "etc"),  # .. never leaves the root
        ("/", ""),
    ],
)
def test_resolve_in_root(root: Path, path: str, expected: str) -> None:
    assert resolve_in_root(str(root), path) == str(root / expected).rstrip("/")


def test_symlink_loops_are_refused(root: Path) -> None:
    with pytest.raises(SetupError, match="too many levels"):
        resolve_in_root(str(root), "/loop/x")


def test_ensure_path_shadows_directories_it_does_not_own(root: Path) -> None:
    shadowed: list[str] = []
    owned = {str(root)}
    target = ensure_path(
        str(root), "/var/run/secrets/token", is_file=False, owned=owned, shadow=shadowed.append
    )
    assert target == str(root / "run" / "secrets" / "token")
    assert shadowed == [str(root / "run")]  # the host's /run would be written: shadow it once
    assert (root / "run" / "secrets" / "token").is_dir()
    top = ensure_path(str(root), "/data/file", is_file=True, owned=owned, shadow=shadowed.append)
    assert Path(top).is_file() and shadowed == [str(root / "run")]  # the root is owned
    assert ensure_path(
        str(root), "/etc", is_file=False, owned=owned, shadow=shadowed.append
    ) == str(root / "etc")


def run_exec(
    tmp_path: Path, launch: dict[str, Any], *argv: str
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(launch))
    return subprocess.run(
        shim_program.command("exec", str(path), *argv),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def launch_for(uid: int, caps: list[int], seccomp: str | None) -> dict[str, Any]:
    return {
        "working_dir": "/",
        "user": {"uid": uid, "gid": uid, "groups": [uid, 2000]},
        "capabilities": {
            "bounding": caps,
            "effective": caps,
            "permitted": caps,
            "inheritable": [],
            "ambient": [],
        },
        "no_new_privs": True,
        "seccomp": seccomp,
        "env": {"PATH": "/usr/bin:/bin"},
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="changing user needs root")
def test_exec_applies_identity_capabilities_and_seccomp(tmp_path: Path) -> None:
    bpf = compile_profile(runtime_default_profile([0, 10]), tmp_path / "bpf")
    out = run_exec(tmp_path, launch_for(65534, [0, 10], bpf), "cat", "/proc/self/status")
    assert out.returncode == 0, out.stderr
    status = dict(line.split(":\t", 1) for line in out.stdout.splitlines() if ":\t" in line)
    assert status["Uid"].split() == ["65534"] * 4
    assert sorted(status["Groups"].split()) == ["2000", "65534"]
    assert int(status["CapBnd"], 16) == 1 | 1 << 10
    assert int(status["CapEff"], 16) == 0
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing user needs root")
def test_exec_sets_home_as_runc_does(tmp_path: Path) -> None:
    """HOME, unless the environment has one, from the passwd the process sees once in its
    sandbox (here the host's): its user's home, ``/`` for a user without an entry."""
    stranger = next(uid for uid in range(12345, 20000) if not _has_passwd_entry(uid))

    def home(uid: int, env: dict[str, str]) -> str:
        out = run_exec(
            tmp_path, {**launch_for(uid, [], None), "env": env}, "sh", "-c", "echo $HOME"
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    path = {"PATH": "/usr/bin:/bin"}
    assert home(0, path) == pwd.getpwuid(0).pw_dir
    assert home(stranger, path) == "/"
    assert home(stranger, {**path, "HOME": ""}) == "/"
    assert home(stranger, {**path, "HOME": "/data"}) == "/data"


def _has_passwd_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_runtime_default_refuses_namespaces_without_sys_admin(tmp_path: Path) -> None:
    everything = list(range(22))  # includes SYS_ADMIN (21): only the filter can refuse
    default = compile_profile(runtime_default_profile([0, 10]), tmp_path / "bpf")
    blocked = run_exec(tmp_path, launch_for(0, everything, default), "unshare", "-m", "true")
    assert blocked.returncode != 0 and "Operation not permitted" in blocked.stderr
    allowed = run_exec(tmp_path, launch_for(0, everything, None), "unshare", "-m", "true")
    assert allowed.returncode == 0, allowed.stderr


def _shim_started_by_hand(
    tmp_path: Path, waiter: str
) -> tuple[subprocess.Popen[bytes], int, int, Path]:
    """A shim driven through its protocol by the test (as the agent does): returns the shim,
    the go pipe's write end, the workload's pid and the fifo that lets the workload exit 7."""
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    go_r, go_w = os.pipe()
    report_r, report_w = os.pipe()
    shim = subprocess.Popen(
        [
            *shim_program.command("shim", str(go_r), str(report_w)),
            *(str(tmp_path / "exit.json"), "-", waiter, "sh", "-c", f"read x < {fifo}; exit 7"),
        ],
        pass_fds=(go_r, report_w),
        start_new_session=True,
    )
    os.close(go_r)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as report:
        assert report.readline().split()[0] == b"child"
        os.write(go_w, b"go")  # (the agent would move the child into its cgroup first)
        words = report.read().split()
    assert words[0] == b"pid", words
    return shim, go_w, int(words[1]), fifo


@pytest.mark.parametrize("acked", [True, False])
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_workload_its_agent_never_recorded_is_killed(
    tmp_path: Path, acked: bool, native: bool
) -> None:
    """An agent killed after the workload started but before it recorded it leaves a workload
    no agent will ever stop (its successor starts the container again): found by the chaos
    storm as a cgroup that could not be removed. The agent acks with ``ok``; a go pipe closed
    without it makes the shim kill the workload."""
    assert shim_program.native_program(), "pip install -e . builds the shim's native half"
    shim, go_w, pid, fifo = _shim_started_by_hand(
        tmp_path, shim_program.NATIVE_PROGRAM if native else "-"
    )
    try:
        if acked:
            os.write(go_w, b"ok")
        os.close(go_w)
        if acked:
            with open(fifo, "w") as release:  # blocks until the workload reads: it is alive
                release.write("x\n")
        assert shim.wait(timeout=30) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        shim.wait(timeout=30)
    status = json.loads((tmp_path / "exit.json").read_text())
    assert status["pid"] == pid
    if acked:
        assert (status["exit_code"], status["signal"]) == (7, None)
    else:
        assert (status["exit_code"], status["signal"]) == (137, signal.SIGKILL)
