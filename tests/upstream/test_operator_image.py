"""The operator's image (``scripts/image``, ``upstream/testbed/operator_image.py``): an OCI
archive that ``ctr images import`` and skopeo read, whose entrypoint runs ``inplace operator`` as
the Helm chart runs it (user and group 65532, a read-only root filesystem, an in-memory
``/tmp``) on Debian's Python 3.11, with no package manager in it.

The image is unpacked into a temporary root and run there with ``chroot`` inside a mount
namespace of its own (``unshare --mount``; the mounts are private to it and end with it), so
no container runtime is needed. The layers are cached (``~/.cache/inplace/images``): the first
build on a machine takes about a minute, later ones seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testbed.operator_image import OPERATOR_DEPENDENCIES, Image, ImageError, build_image

NAME = "registry.example/inplace:probe"
USER = 65532
CHART_FLAGS = (
    "--namespace",
    "--identity",
    "--lease-name",
    "--webhook-port",
    "--webhook-service",
    "--webhook-url",
    "--webhook-configuration",
    "--secret",
    "--own-user",
    "--exclude-namespace",
    "--controllers",
    "--vpa",
    "--rescue",
    "--metrics-port",
    "--health-port",
    "--log-level",
    "--log-format",
)
"""Every flag deploy/helm/inplace/templates/deployment.yaml may pass to ``inplace operator``."""

SITE_PACKAGES = Path("usr/local/lib/python3.11/dist-packages")

_ENTER = (
    'root=$1; shift; mount --bind "$root" "$root" && mount -o remount,bind,ro "$root" && '
    'mount -t tmpfs -o mode=1777,size=16m tmpfs "$root/tmp" && '
    f'exec chroot --userspec={USER}:{USER} "$root" "$@"'
)
"""In the new mount namespace: the root read-only, a tmpfs on /tmp (the chart's emptyDir), then
the command as the chart's runAsUser and runAsGroup."""


@dataclass(frozen=True)
class Built:
    image: Image
    layout: dict[str, Any]
    index: dict[str, Any]
    manifest: dict[str, Any]
    config: dict[str, Any]
    blobs: dict[str, tuple[str, int]]
    """Each blob's sha256 as computed from its bytes, and its size, by its file name."""


@pytest.fixture(scope="module")
def built() -> Iterator[Built]:
    with tempfile.TemporaryDirectory(prefix="inplace-image-") as directory:
        try:
            image = build_image(name=NAME, output=Path(directory) / "inplace.tar", log=False)
        except ImageError as exc:
            pytest.fail(f"cannot build the operator's image: {exc}")
        with tarfile.open(image.path) as archive:
            blobs = {
                member.name.removeprefix("blobs/sha256/"): (
                    hashlib.file_digest(_file(archive, member.name), "sha256").hexdigest(),
                    member.size,
                )
                for member in archive.getmembers()
                if member.isfile() and member.name.startswith("blobs/sha256/")
            }
            index = _json(archive, "index.json")
            manifest = _json(archive, _blob(index["manifests"][0]["digest"]))
            config = _json(archive, _blob(manifest["config"]["digest"]))
            layout = _json(archive, "oci-layout")
        yield Built(image, layout, index, manifest, config, blobs)


@pytest.fixture(scope="module")
def rootfs(built: Built) -> Iterator[Path]:
    """The image's layers unpacked in order, owners kept (so as root)."""
    if os.geteuid() != 0:
        pytest.fail("running the image needs root (chroot, mount namespaces, owners 65532)")
    trusted: dict[str, Any] = (
        {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    )
    with tempfile.TemporaryDirectory(prefix="inplace-rootfs-") as directory:
        root = Path(directory)
        root.chmod(0o755)  # a runtime's rootfs directory; TemporaryDirectory makes it 0700
        with tarfile.open(built.image.path) as archive:
            for layer in built.manifest["layers"]:
                with tarfile.open(fileobj=_file(archive, _blob(layer["digest"])), mode="r|") as tar:
                    tar.extractall(root, numeric_owner=True, **trusted)
        yield root


def run_in_image(
    root: Path, config: dict[str, Any], *command: str
) -> subprocess.CompletedProcess[str]:
    """``command`` in the unpacked image with its environment, as the chart runs it."""
    env = dict(entry.split("=", 1) for entry in config["config"]["Env"])
    result = subprocess.run(
        ["unshare", "--mount", "--fork", "sh", "-c", _ENTER, "sh", str(root), *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert str(root) not in Path("/proc/self/mountinfo").read_text(), "a mount outlived its run"
    return result


def test_the_archive_is_an_oci_layout_under_the_name_asked(built: Built) -> None:
    assert built.layout == {"imageLayoutVersion": "1.0.0"}
    (entry,) = built.index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == NAME
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "probe"
    assert entry["digest"] == built.image.manifest_digest
    assert all(name == digest for name, (digest, _) in built.blobs.items()), "a blob's name lies"
    for descriptor in (entry, built.manifest["config"], *built.manifest["layers"]):
        name = descriptor["digest"].removeprefix("sha256:")
        assert built.blobs.get(name, ("", -1))[1] == descriptor["size"], descriptor
    assert built.config["rootfs"]["diff_ids"] == [
        layer["digest"] for layer in built.manifest["layers"]
    ]
    assert built.image.size == sum(layer["size"] for layer in built.manifest["layers"])
    config = built.config["config"]
    assert config["Entrypoint"] == ["inplace"]
    assert config["User"] == f"{USER}:{USER}"
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]
    assert built.config["os"] == "linux"


def test_the_root_has_python_a_nonroot_user_and_no_package_manager(rootfs: Path) -> None:
    assert (rootfs / "usr/bin/python3.11").is_file()
    command = rootfs / "usr/local/bin/inplace"
    assert command.read_text().startswith("#!/usr/bin/python3.11\n")
    assert command.stat().st_mode & 0o111 == 0o111
    for absent in ("usr/bin/dpkg", "usr/bin/apt-get", "usr/bin/perl", "bin/sh", "var/lib/dpkg"):
        assert not (rootfs / absent).exists(), absent
    assert f"nonroot:x:{USER}:{USER}:" in (rootfs / "etc/passwd").read_text()
    assert f"nonroot:x:{USER}:" in (rootfs / "etc/group").read_text()
    tmp = (rootfs / "tmp").stat()
    assert (stat.S_IMODE(tmp.st_mode), tmp.st_uid) == (0o1777, 0)
    home = (rootfs / "home/nonroot").stat()
    assert (home.st_uid, home.st_gid) == (USER, USER)
    assert (rootfs / "usr/share/doc/libc6/copyright").is_file()
    assert not (rootfs / "usr/share/doc/libc6/changelog.Debian.gz").exists()


def test_every_module_has_its_pyc_compiled_for_a_read_only_root(rootfs: Path) -> None:
    """Unchecked-hash ``.pyc`` beside every ``.py`` of the project, the dependencies and the
    standard library: a read-only root cannot take them at run time, and a layer's mtimes
    (all 0) would make timestamp ones stale."""
    sources = [
        *(rootfs / SITE_PACKAGES / "inplace").rglob("*.py"),
        *(rootfs / SITE_PACKAGES / "aiohttp").rglob("*.py"),
        *(rootfs / "usr/lib/python3.11/asyncio").rglob("*.py"),
        rootfs / "usr/lib/python3.11/os.py",
    ]
    assert len(sources) > 100
    for source in sources:
        compiled = source.parent / "__pycache__" / f"{source.stem}.cpython-311.pyc"
        assert compiled.is_file(), f"no .pyc for {source.relative_to(rootfs)}"
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b01, f"{compiled.relative_to(rootfs)} is not unchecked-hash"


def test_the_entrypoint_runs_the_operator_as_nonroot_on_a_read_only_root(
    built: Built, rootfs: Path
) -> None:
    out = run_in_image(
        rootfs, built.config, *built.config["config"]["Entrypoint"], "operator", "--help"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: inplace operator")
    missing = [flag for flag in CHART_FLAGS if flag not in out.stdout]
    assert not missing, f"inplace operator --help lacks the chart's {missing}"


def test_its_python_imports_the_operator_and_trusts_public_roots(
    built: Built, rootfs: Path
) -> None:
    probe = """
import importlib, json, os, pathlib, pkgutil, ssl, sys
import inplace.operator, inplace.operator.main, aiohttp, orjson, cryptography
import inplace.controllers
# every module of the operator and of the controllers it runs: the image carries only the
# dependencies the operator imports
for package in ("operator", "controllers.workloadresize", "controllers.release",
                "controllers.vpa", "controllers.rescue"):
    root = importlib.import_module(f"inplace.{package}")
    for module in pkgutil.walk_packages(root.__path__, f"inplace.{package}."):
        importlib.import_module(module.name)
pathlib.Path("/tmp/written").write_text("the chart's emptyDir")
print(json.dumps({
    "ids": [os.getuid(), os.getgid()],
    "read_only": bool(os.statvfs("/").f_flag & os.ST_RDONLY),
    "version": list(sys.version_info[:2]),
    "no_bytecode_written": sys.flags.dont_write_bytecode,
    "home": str(pathlib.Path.home()),
    "roots": ssl.create_default_context().cert_store_stats()["x509_ca"],
    "operator": inplace.operator.__file__,
}))
"""
    out = run_in_image(rootfs, built.config, "python3.11", "-c", probe)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["ids"] == [USER, USER]
    assert found["read_only"] is True
    assert found["version"] == [3, 11]
    assert found["no_bytecode_written"] == 1
    assert found["home"] == "/home/nonroot"
    assert found["roots"] > 100, "certifi's bundle is not where OpenSSL looks"
    assert found["operator"] == f"/{SITE_PACKAGES}/inplace/operator/__init__.py"


def _blob(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def _file(archive: tarfile.TarFile, name: str) -> Any:
    handle = archive.extractfile(name)
    assert handle is not None, f"{name} is not a file in the archive"
    return handle


def _json(archive: tarfile.TarFile, name: str) -> dict[str, Any]:
    return dict(json.load(_file(archive, name)))


def test_the_containerfile_installs_the_same_dependencies() -> None:
    """``deploy/Containerfile`` (no builder here runs it) names the operator's dependencies
    itself: they must be :data:`OPERATOR_DEPENDENCIES`."""
    text = (Path(__file__).resolve().parents[2] / "deploy" / "Containerfile").read_text()
    match = re.search(r'^ARG DEPENDENCIES="([^"]*)"$', text, re.MULTILINE)
    assert match, "deploy/Containerfile names no DEPENDENCIES"
    assert tuple(match.group(1).split()) == OPERATOR_DEPENDENCIES
