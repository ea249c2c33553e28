"""Builds the container shim's native half (``src/inplace/node/shim/inplace-shim.c``) with
the package: ``pip install .`` puts the program beside the shim's Python in the wheel, and
``pip install -e .`` beside its source. Everything else is in pyproject.toml.

Without a C compiler the install stops and says which one it looked for; set
``INPLACE_NO_NATIVE_SHIM=1`` to install without the program (the shims then wait in Python,
~1.4 MiB more per container process)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

SOURCE = os.path.join("src", "inplace", "node", "shim", "inplace-shim.c")
PROGRAM = "inplace-shim"
COMPILERS = ("cc", "gcc", "clang")


def find_compiler() -> list[str]:
    """``$CC`` when set, else the first of cc, gcc, clang on the PATH."""
    if os.environ.get("CC"):
        return shlex.split(os.environ["CC"])
    for name in COMPILERS:
        if shutil.which(name):
            return [name]
    raise SystemExit(
        "inplace: building the container shim (src/inplace/node/shim/inplace-shim.c) needs a "
        f"C compiler: none of $CC, {', '.join(COMPILERS)} is on the PATH. Install one "
        "(Debian: apt-get install gcc libc6-dev) or set INPLACE_NO_NATIVE_SHIM=1 to install "
        "without it (each container's shim then stays a Python process)."
    )


def compile_shim(target_dir: str) -> str:
    """Compile the shim into ``target_dir``; its path."""
    os.makedirs(target_dir, exist_ok=True)
    target = os.path.join(target_dir, PROGRAM)
    command = [*find_compiler(), "-Os", "-Wall", "-Wextra", "-s", "-o", target, SOURCE]
    print("inplace: " + " ".join(command))
    try:
        subprocess.run(command, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"inplace: building the container shim failed: {exc}") from exc
    return target


class BuildWithShim(build_py):
    """``build_py``, then the shim's program: into the build tree, or (editable installs)
    beside its source, where the package is imported from."""

    def run(self) -> None:
        super().run()
        if os.environ.get("INPLACE_NO_NATIVE_SHIM"):
            print("inplace: INPLACE_NO_NATIVE_SHIM set: the container shim is not built")
            return
        if getattr(self, "editable_mode", False):
            compile_shim(os.path.dirname(SOURCE))
        else:
            compile_shim(os.path.join(self.build_lib, "inplace", "node", "shim"))


class WithProgram(Distribution):
    """A wheel holding a compiled program is for one platform, not ``py3-none-any``."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithShim}, distclass=WithProgram)
