"""`inplace demo` as a new user runs it: a fresh virtual environment, the README's command.

The checkout is copied (pip builds in the source tree), a virtual environment is made with
``python -m venv``, and the README's "run it" command runs in a shell whose ``PATH`` starts
with the environment's ``bin`` and which has no ``PYTHONPATH`` (nothing leaks from the
developer's setup). It must exit 0: the package installs from source with everything it
ships (schemas, the shim and its native half built from C, the dashboard's files), and
every act of the demo behaved as told. The whole test takes about 100 s here: installing
from pip's cache about 50, the demo about as long (on a clean machine pip downloads the
dependencies first).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/memory"),
    reason="the demo's acts check real memory limits: needs root and cgroup v1",
)


def readme_run_command() -> str:
    """The first ``sh`` block after "Run it" in the README."""
    text = (ROOT / "README.md").read_text()
    start = text.index("Run it")
    match = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert match is not None, "the README has no command under 'Run it'"
    return match.group(1).strip()


def test_readme_says_demo() -> None:
    assert "inplace demo" in readme_run_command()


@pytest.mark.timeout(1500)  # a hang guard: under load the install alone can take minutes
def test_the_demo_from_a_fresh_virtual_environment(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    checkout = tmp_path / "checkout"
    shutil.copytree(
        ROOT,
        checkout,
        ignore=shutil.ignore_patterns(
            ".git",
            "__pycache__",
            "*.egg-info",
            "build",
            "dist",
            ".*_cache",
            ".hypothesis",
            "inplace-shim",  # the shim's native half as an editable install built it
        ),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUBECONFIG")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", readme_run_command()],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard: installing and the demo take a few minutes
    )
    took = time.monotonic() - started
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"README's command failed after {took:.0f}s:\n{tail}"
    assert "every act (a, b, c, d, e) behaved as told" in done.stdout, tail
    assert (venv / "bin" / "inplace").exists()
    # pip built the container shim's native half from its source, and the demo's pods ran
    # under it (the package refuses to install without a C compiler)
    programs = list(venv.glob("lib/python*/site-packages/inplace/node/shim/inplace-shim"))
    assert len(programs) == 1 and os.access(programs[0], os.X_OK), programs
    print(f"README's command (fresh venv install + demo) took {took:.0f}s")
