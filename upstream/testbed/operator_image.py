"""``scripts/image``: the operator's OCI image (what ``deploy/helm/inplace`` runs), written as
an OCI archive without a container daemon or a builder.

Three layers, bottom first, each cached outside the repository under a key of what decides it,
so a rebuild after a source change redoes only the last one and a run with nothing changed
returns in seconds:

1. **runtime**: Debian bookworm's Python 3.11 (``python3.11-minimal``,
   ``libpython3.11-stdlib`` and what they depend on), the ``nonroot`` user (65532), ``/tmp``
   (1777) and its home. The packages come from ``mmdebstrap --variant=extract``: apt resolves
   their dependencies against bookworm's own archive (the sources below, not the build host's
   apt configuration, which may be another release or distribution, nor its installed
   packages) and checks the archive's signatures, and *extract* unpacks the packages without
   installing them, so no dpkg is needed in the set and no maintainer script runs. ``apt-get
   download`` + ``dpkg-deb -x`` would need that dependency closure written by hand, against
   the host's sources. ``install-info`` is asked for only because it is the alternative that
   keeps dpkg out (readline-common depends on ``dpkg | install-info``); its files are then
   dropped, with the documentation (but the copyright files), locales and apt's state. Of what
   the skipped maintainer scripts would have done, one thing matters and is done here: the
   standard library's ``.pyc`` (python3.11-minimal's ``py3compile``). Trust roots come from
   certifi (layer 2) linked where OpenSSL looks, rather than from ``ca-certificates``, whose
   dependencies (debconf, perl) would be most of this layer. No apt, dpkg, perl or shell.
2. **dependencies**: of ``pyproject.toml``'s ``dependencies``, those ``inplace operator``
   imports (:data:`OPERATOR_DEPENDENCIES`, with pyproject's version bounds; the rest — the
   ``kubernetes`` client, numpy, matplotlib, … — serve ``inplace up``, the replay and the
   dashboard, and would be most of the image), and certifi, from PyPI, manylinux wheels only
   (no compiler; for glibc 2.36, bookworm's), into ``/usr/local/lib/python3.11/dist-packages``,
   which is on Debian's Python's path. ``tests/upstream/test_operator_image.py`` imports every
   module of the operator and of the controllers it runs inside the image.
3. **inplace**: the project's wheel, built with ``INPLACE_NO_NATIVE_SHIM=1`` (the operator runs
   no containers, so it needs neither the container shim's C half nor a compiler), and the
   ``inplace`` command.

Every ``.py`` gets its ``.pyc`` at build time, *unchecked-hash* ones: the root filesystem is
read-only at run time, and a layer's files all have mtime 0, so timestamp ``.pyc`` would be
stale at every start. The pip and ``compileall`` runs need a Python 3.11 with pip on the build
host (the same bytecode, and the same answers to the dependencies' markers). The cache keys name
the package lists and the suite, not what the archive serves today: ``--refresh`` rebuilds the
first two layers from today's packages (security updates). ``deploy/Containerfile`` builds the
same image with a builder.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import yaml

from .build import module_dir
from .oci import Image, layer_from_tree, write_archive

__all__ = ["Image", "ImageError", "app_version", "build_image", "image_cache", "main"]

repository = module_dir.parent
chart_file = repository / "deploy" / "helm" / "inplace" / "Chart.yaml"

SUITE = "bookworm"
DEBIAN_SOURCES = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
RUNTIME_PACKAGES = ("python3.11-minimal", "libpython3.11-stdlib", "media-types", "install-info")
PYTHON = "python3.11"
SITE_PACKAGES = "usr/local/lib/python3.11/dist-packages"
"""Where layers 2 and 3 install, relative to the root: on Debian's Python's path."""
GLIBC_MINOR = 36
"""bookworm's glibc is 2.36: the newest manylinux tag a dependency's wheel may carry."""
NONROOT = 65532
"""The chart's runAsUser and runAsGroup."""
HOME = "home/nonroot"
ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
    "LANG=C.UTF-8",
)

_DROPPED = (
    "dev/*",  # device nodes: the runtime makes /dev
    "var",  # apt's and dpkg's state: neither is in the image
    "etc/apt",
    "etc/dpkg",
    "etc/fstab",  # the build host's or a placeholder: the runtime mounts its own
    "etc/hostname",
    "etc/resolv.conf",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/bug",
    "usr/share/binfmts",
    "usr/lib/binfmt.d",
    "usr/lib/*/gconv",  # glibc's iconv character sets: Python's codecs are its own
    "usr/bin/install-info",  # only there to keep dpkg out (above)
    "usr/bin/ginstall-info",
    "usr/sbin/update-info-dir",
)
"""What of the runtime's packages the image leaves out: a path matching one of these (fnmatch),
and everything under it. Of ``usr/share/doc``, only the copyright files are kept."""
_PYC = ("--invalidation-mode", "unchecked-hash")
_RECIPE = 1
"""Part of every cache key: bump it to rebuild the layers after a change to how they are made."""
_ARCHITECTURES = {"x86_64": ("amd64", "x86_64"), "aarch64": ("arm64", "aarch64")}
"""The machine → (Debian's and OCI's name for it, manylinux's)."""
_PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md")
"""Besides ``src/``, what building the wheel reads."""
_NOT_SOURCES = ("__pycache__", "*.pyc", "*.egg-info", "inplace-shim")
"""In a checkout's ``src/`` but not sources: caches, an editable install's metadata and its
compiled shim (setup.py's ``PROGRAM``)."""
_TRUSTED: dict[str, Any] = (
    {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
)
"""Extract Debian's absolute symlinks as they are (Python 3.14's default filter refuses them)."""

_Say = Callable[[str], None]


class ImageError(Exception):
    """A step of the build failed; the message says which and carries the tool's output."""


def image_cache() -> Path:
    """``$XDG_CACHE_HOME/inplace/images`` (``~/.cache``): the layers and the default archive."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inplace" / "images"


def app_version() -> str:
    """The chart's appVersion, which tags the image; it must be the package's version."""
    version = str(yaml.safe_load(chart_file.read_text())["appVersion"])
    package = _pyproject()["project"]["version"]
    if version != package:
        raise ImageError(
            f"{chart_file.relative_to(repository)} has appVersion {version} but pyproject.toml "
            f"has version {package}: the chart would run an image of another version"
        )
    return version


def build_image(
    *, name: str | None = None, output: Path | None = None, refresh: bool = False, log: bool = True
) -> Image:
    """Build the operator's image, ``inplace:<appVersion>`` unless ``name`` says otherwise, into
    the OCI archive ``output`` (default: ``inplace-<appVersion>.tar`` in :func:`image_cache`).
    Concurrent callers wait for one another. ``refresh`` rebuilds the cached runtime and
    dependency layers."""
    version = app_version()
    name = name or f"inplace:{version}"
    cache = image_cache()
    output = (output or cache / f"inplace-{version}.tar").absolute()
    arch, wheel_arch = _architecture()
    say = _say if log else _quiet
    started = time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock, _umask(0o022):
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = _python()
        layers = [
            _runtime_layer(cache, python, arch, refresh, say),
            _dependencies_layer(cache, python, wheel_arch, refresh, say),
            _project_layer(cache, python, say),
        ]
        image = write_archive(
            output,
            name=name,
            layers=layers,
            entrypoint=["inplace"],
            cmd=["--help"],
            env=ENV,
            user=f"{NONROOT}:{NONROOT}",
            labels={
                "org.opencontainers.image.title": "inplace",
                "org.opencontainers.image.description": "inplace's operator: inplace operator",
                "org.opencontainers.image.version": version,
            },
            architecture=arch,
        )
    say(f"wrote {image.name} to {image.path} in {time.monotonic() - started:.0f} s")
    return image


# -- the layers -----------------------------------------------------------------------------


def _runtime_layer(cache: Path, python: str, arch: str, refresh: bool, say: _Say) -> Path:
    key = _key(SUITE, DEBIAN_SOURCES, RUNTIME_PACKAGES, arch, _DROPPED, NONROOT, HOME, _PYC)

    def make(stage: Path, scratch: Path) -> None:
        if shutil.which("mmdebstrap") is None:
            raise ImageError(
                "the image's Python comes from Debian's packages, which mmdebstrap unpacks: "
                "it is not on PATH (Debian: apt-get install mmdebstrap)"
            )
        say(f"unpacking {', '.join(RUNTIME_PACKAGES)} and their dependencies ({SUITE})")
        packages = scratch / "packages.tar"
        _run(
            [
                "mmdebstrap",
                "--variant=extract",
                f"--architectures={arch}",
                f"--include={','.join(RUNTIME_PACKAGES)}",
                SUITE,
                str(packages),
                *DEBIAN_SOURCES,
            ],
            what="mmdebstrap",
        )
        _unpack(packages, stage)
        for directory in ("dev", "proc", "sys", HOME):
            (stage / directory).mkdir(parents=True, exist_ok=True)
        (stage / "tmp").mkdir(exist_ok=True)
        (stage / "tmp").chmod(0o1777)
        (stage / "etc" / "passwd").write_text(
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"nonroot:x:{NONROOT}:{NONROOT}:nonroot:/{HOME}:/usr/sbin/nologin\n"
        )
        (stage / "etc" / "group").write_text(f"root:x:0:\nnonroot:x:{NONROOT}:\n")
        _compile(python, stage, stage / "usr" / "lib" / "python3.11")

    owned = {HOME: (NONROOT, NONROOT)}
    return _cached(cache, "runtime", key, make, refresh=refresh, say=say, owned=owned)


OPERATOR_DEPENDENCIES = (
    "aiohttp",
    "orjson",
    "pyyaml",
    "cryptography",
    "prometheus-client",
    "uvloop",
)
"""The distributions ``inplace operator`` imports (uvloop where it is installed: its event loop
is faster), by their normalized names."""


def operator_dependencies() -> list[str]:
    """pyproject's requirements of :data:`OPERATOR_DEPENDENCIES`, as written there (bounds,
    markers), and certifi for the trust roots; fails if one is no longer a dependency."""
    found = {}
    for requirement in _pyproject()["project"]["dependencies"]:
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
        found[re.sub(r"[-_.]+", "-", name).lower()] = requirement
    missing = [name for name in OPERATOR_DEPENDENCIES if name not in found]
    if missing:
        raise ImageError(f"pyproject.toml no longer depends on {', '.join(missing)}")
    return [found[name] for name in OPERATOR_DEPENDENCIES] + ["certifi"]


def _dependencies_layer(
    cache: Path, python: str, wheel_arch: str, refresh: bool, say: _Say
) -> Path:
    dependencies = operator_dependencies()
    key = _key(dependencies, PYTHON, GLIBC_MINOR, wheel_arch, SITE_PACKAGES, _PYC)

    def make(stage: Path, scratch: Path) -> None:
        say(f"installing {len(dependencies)} dependencies and theirs from PyPI for {PYTHON}")
        target = stage / SITE_PACKAGES
        # pip takes a manylinux tag as it is, not as "this glibc or older": name them all
        platforms = [f"manylinux_2_{minor}_{wheel_arch}" for minor in range(GLIBC_MINOR, 16, -1)]
        platforms += [f"manylinux{legacy}_{wheel_arch}" for legacy in ("2014", "2010", "1")]
        _pip(
            python,
            "install",
            "--no-compile",
            "--no-warn-conflicts",  # they would be with the build host's packages
            f"--target={target}",
            "--only-binary=:all:",
            *(f"--platform={tag}" for tag in platforms),
            "--python-version=3.11",
            "--implementation=cp",
            "--abi=cp311",
            *dependencies,
        )
        shutil.rmtree(target / "bin", ignore_errors=True)  # their commands, for the host's Python
        if not (target / "certifi" / "cacert.pem").is_file():
            raise ImageError("certifi is no longer among the dependencies: no trust roots")
        # where OpenSSL (Debian's is built with OPENSSLDIR /usr/lib/ssl) and others look
        bundle = stage / "etc" / "ssl" / "certs" / "ca-certificates.crt"
        bundle.parent.mkdir(parents=True)
        bundle.symlink_to(f"/{SITE_PACKAGES}/certifi/cacert.pem")
        openssl = stage / "usr" / "lib" / "ssl" / "cert.pem"
        openssl.parent.mkdir(parents=True)
        openssl.symlink_to("/etc/ssl/certs/ca-certificates.crt")
        _compile(python, stage, target)

    return _cached(cache, "dependencies", key, make, refresh=refresh, say=say)


def _project_layer(cache: Path, python: str, say: _Say) -> Path:
    project = _pyproject()["project"]
    module, function = project["scripts"]["inplace"].split(":")
    sources = _source_files()
    key = _key(_digest(sources), module, function, PYTHON, SITE_PACKAGES, _PYC)

    def make(stage: Path, scratch: Path) -> None:
        say(f"building inplace {project['version']}'s wheel from {repository}")
        # a copy: building in the checkout would leave build/ and an egg-info in it
        source = scratch / "source"
        for relative in sources:
            (source / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repository / relative, source / relative)
        wheels = scratch / "wheels"
        _pip(
            python,
            "wheel",
            "--no-deps",
            f"--wheel-dir={wheels}",
            str(source),
            env={"INPLACE_NO_NATIVE_SHIM": "1"},
        )
        (wheel,) = wheels.glob("inplace-*.whl")
        target = stage / SITE_PACKAGES
        _pip(python, "install", "--no-compile", "--no-deps", f"--target={target}", str(wheel))
        shutil.rmtree(target / "bin", ignore_errors=True)  # pip's, for the host's Python
        _forget_wheel_path(target)
        command = stage / "usr" / "local" / "bin" / "inplace"
        command.parent.mkdir(parents=True)
        command.write_text(
            f"#!/usr/bin/{PYTHON}\nimport sys\n\nfrom {module} import {function}\n\n"
            f"sys.exit({function}())\n"
        )
        command.chmod(0o755)
        _compile(python, stage, target)

    return _cached(cache, "inplace", key, make, refresh=False, say=say)


def _cached(
    cache: Path,
    kind: str,
    key: str,
    make: Callable[[Path, Path], None],
    *,
    refresh: bool,
    say: _Say,
    owned: Mapping[str, tuple[int, int]] | None = None,
) -> Path:
    """The layer ``kind-key.tar`` from the cache, or made by ``make(stage, scratch)`` (the tree
    to tar, a directory for anything else) and cached in place of the kind's older ones."""
    layers = cache / "layers"
    layer = layers / f"{kind}-{key}.tar"
    if layer.exists() and not refresh:
        say(f"{kind} layer: cached, {_mib(layer.stat().st_size)} ({layer.name})")
        return layer
    layers.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f".{kind}-", dir=layers) as directory:
        scratch = Path(directory)
        stage = scratch / "root"
        stage.mkdir()
        make(stage, scratch)
        layer_from_tree(stage, scratch / "layer.tar", owned=owned)
        for older in layers.glob(f"{kind}-*.tar"):
            older.unlink()
        (scratch / "layer.tar").rename(layer)
    seconds = time.monotonic() - started
    say(f"{kind} layer: {_mib(layer.stat().st_size)} in {seconds:.0f} s ({layer.name})")
    return layer


# -- steps ----------------------------------------------------------------------------------


def _forget_wheel_path(site_packages: Path) -> None:
    """pip records where the wheel was (``direct_url.json``): a scratch path of the build host,
    different at every build. Without it the same sources make the same layer."""
    for record in site_packages.glob("inplace-*.dist-info/RECORD"):
        (record.parent / "direct_url.json").unlink()
        entry = f"{record.parent.name}/direct_url.json,"
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(line for line in lines if not line.startswith(entry)))


def _unpack(packages: Path, root: Path) -> None:
    """Extract mmdebstrap's tarball under ``root``, less what the image leaves out."""
    with tarfile.open(packages) as tar:
        members = [
            member
            for member in tar
            if not (member.ischr() or member.isblk() or member.isfifo())
            and _kept(member.name.removeprefix("./").rstrip("/"))
        ]
        tar.extractall(root, members=members, numeric_owner=True, **_TRUSTED)


def _kept(path: str) -> bool:
    parts = path.split("/")
    if parts[:3] == ["usr", "share", "doc"]:
        return len(parts) <= 4 or parts[4:] == ["copyright"]
    return not any(
        fnmatch("/".join(parts[:depth]), pattern)
        for depth in range(1, len(parts) + 1)
        for pattern in _DROPPED
    )


def _compile(python: str, stage: Path, directory: Path) -> None:
    """``.pyc`` for the ``.py`` files under ``directory``, naming them by their path in the
    image. Symlinks are skipped: an absolute one would compile the build host's file."""
    files = sorted(
        str(path) for path in directory.rglob("*.py") if path.is_file() and not path.is_symlink()
    )
    _run(
        [python, "-m", "compileall", "-q", *_PYC, "-s", str(stage), "-p", "/", "-i", "-"],
        what=f"compiling the .py under /{directory.relative_to(stage)}",
        input="\n".join(files) + "\n",
    )


def _pip(python: str, *args: str, env: Mapping[str, str] | None = None) -> None:
    quiet = ("--quiet", "--disable-pip-version-check", "--no-input")
    _run(
        [python, "-m", "pip", *quiet, *args],
        what=f"pip {args[0]}",
        env={**os.environ, "PIP_ROOT_USER_ACTION": "ignore", **(env or {})},
    )


def _run(
    command: list[str], *, what: str, env: Mapping[str, str] | None = None, input: str = ""
) -> None:
    result = subprocess.run(command, input=input, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        output = (result.stderr.strip() + "\n" + result.stdout.strip()).strip()
        raise ImageError(f"{what} failed (exit {result.returncode}):\n{output[-4000:]}")


def _python() -> str:
    """A Python 3.11 with pip: this one, else ``python3.11`` on PATH."""
    candidates = [sys.executable] if sys.version_info[:2] == (3, 11) else []
    candidates += [found] if (found := shutil.which(PYTHON)) else []
    for candidate in candidates:
        if subprocess.run([candidate, "-m", "pip", "--version"], capture_output=True).returncode:
            continue
        return candidate
    raise ImageError(
        f"the image's packages are installed and compiled by a {PYTHON} with pip (the image's "
        f"Python); none found (this is {sys.version.split()[0]}; Debian: apt-get install "
        "python3.11 python3-pip)"
    )


def _architecture() -> tuple[str, str]:
    machine = platform.machine()
    if machine not in _ARCHITECTURES:
        raise ImageError(f"no image for {machine}: only for {', '.join(_ARCHITECTURES)}")
    return _ARCHITECTURES[machine]


def _source_files() -> list[str]:
    """The wheel's inputs, relative to the repository, sorted."""
    files = list(_PROJECT_FILES)
    for directory, dirnames, filenames in os.walk(repository / "src"):
        dirnames[:] = sorted(name for name in dirnames if not _not_source(name))
        base = Path(directory).relative_to(repository)
        files += [str(base / name) for name in sorted(filenames) if not _not_source(name)]
    return files


def _not_source(name: str) -> bool:
    return any(fnmatch(name, pattern) for pattern in _NOT_SOURCES)


def _digest(files: list[str]) -> str:
    digest = hashlib.sha256()
    for relative in files:
        content = (repository / relative).read_bytes()
        digest.update(f"{relative}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps([_RECIPE, *parts]).encode()).hexdigest()[:16]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((repository / "pyproject.toml").read_text())


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    """Files and directories the build makes readable by the image's user, whatever the
    caller's umask."""
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _say(text: str) -> None:
    print(f"image: {text}", file=sys.stderr, flush=True)


def _quiet(text: str) -> None:
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/image",
        description="Write the operator's OCI image archive (no container daemon needed).",
    )
    parser.add_argument(
        "--name", metavar="REF", help="the image's reference (default: inplace:<appVersion>)"
    )
    parser.add_argument(
        "--output",
        metavar="PATH",
        type=Path,
        help="the archive (default: ~/.cache/inplace/images/inplace-<appVersion>.tar)",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="rebuild the cached Debian and PyPI layers from today's packages",
    )
    args = parser.parse_args(argv)
    try:
        image = build_image(name=args.name, output=args.output, refresh=args.refresh)
    except ImageError as exc:
        print(f"image: {exc}", file=sys.stderr)
        return 1
    print(f"archive: {image.path} ({image.path.stat().st_size} bytes)")
    print(f"image:   {image.name} ({image.manifest_digest})")
    print(f"size:    {image.size} bytes ({_mib(image.size)}), its layers uncompressed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
