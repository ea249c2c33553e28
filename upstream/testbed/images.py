"""The images a kubelet node of the test bed needs, made here: nothing can be pulled.

* The sandbox image: ``pause`` compiled (static) from the bed's Kubernetes release's own
  ``build/pause/linux/pause.c``, with that release's ``build/pause/Makefile`` flags and tag,
  as its Dockerfile lays it out (``/pause``, user 65535), named ``registry.k8s.io/pause:TAG``.
  Each node's containerd pins exactly that name as its sandbox image (it looks the name up
  before every ``RunPodSandbox`` and would otherwise try to pull it); for the pinned release
  it is containerd 2.3's own default, 3.10.2.
* A workload image: Debian's ``busybox-static`` (one static binary and its applets as
  links), so a test pod has a shell, ``sleep``, ``dd`` and an HTTP server.

Both are cached beside the built binaries, keyed by what they are made from.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .build import BuildError, cache_root, module_dir
from .oci import Image, file_layer, layer_from_tree, write_archive

__all__ = ["WORKLOAD_IMAGE", "NodeImages", "node_images"]

WORKLOAD_IMAGE = "inplace.test/busybox:1.35"
"""Debian 12's busybox (1.35). Tests name it with ``imagePullPolicy: IfNotPresent``."""

_BUSYBOX = Path("/bin/busybox")


@dataclass(frozen=True)
class NodeImages:
    """The archives a node imports into its containerd."""

    sandbox: Image
    workload: Image

    @property
    def all(self) -> tuple[Image, ...]:
        return (self.sandbox, self.workload)


def _kubernetes_source(kubernetes: str) -> Path:
    """The pinned release's source in the module cache (downloaded by the build)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{kubernetes}"],
        cwd=module_dir,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise BuildError(f"go mod download k8s.io/kubernetes@{kubernetes}: {out.stderr.strip()}")
    return Path(json.loads(out.stdout)["Dir"])


def _pause(kubernetes: str, directory: Path) -> Image:
    source = _kubernetes_source(kubernetes) / "build" / "pause"
    makefile = (source / "Makefile").read_text()
    match = re.search(r"^TAG \?= (\S+)$", makefile, re.MULTILINE)
    if match is None:
        raise BuildError(f"k8s.io/kubernetes {kubernetes}'s build/pause/Makefile names no TAG")
    tag = match.group(1)
    name = f"registry.k8s.io/pause:{tag}"
    archive = directory / f"pause-{tag}.tar"
    if archive.exists():
        return _image(archive, name)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise BuildError("the sandbox image's pause.c needs a C compiler (apt-get install gcc)")
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        binary = Path(scratch) / "pause"
        # build/pause/Makefile: CFLAGS = -Os -Wall -Werror -static -DVERSION=v$(TAG)-$(REV)
        command = [cc, "-Os", "-Wall", "-Werror", "-static", f"-DVERSION=v{tag}"]
        result = subprocess.run(
            [*command, "-o", str(binary), str(source / "linux" / "pause.c")],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise BuildError(
                f"compiling pause.c (static) failed; a static libc is in Debian's libc6-dev:\n"
                f"{result.stderr.strip()}"
            )
        layer = file_layer(Path(scratch) / "layer.tar", {"pause": (binary.read_bytes(), 0o755)})
        return write_archive(
            archive,
            name=name,
            layers=[layer],
            entrypoint=["/pause"],
            user="65535:65535",
        )


def _busybox(directory: Path) -> Image:
    if not _BUSYBOX.exists():
        raise BuildError(
            "the bed's workload image is Debian's busybox-static: apt-get install busybox-static"
        )
    digest = hashlib.sha256(_BUSYBOX.read_bytes()).hexdigest()[:12]
    archive = directory / f"busybox-{digest}.tar"
    if archive.exists():
        return _image(archive, WORKLOAD_IMAGE)
    applets = subprocess.run(
        [str(_BUSYBOX), "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split()
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        root = Path(scratch) / "rootfs"
        (root / "bin").mkdir(parents=True)
        shutil.copy2(_BUSYBOX, root / "bin" / "busybox")
        for applet in applets:
            link = root / applet
            if applet == "bin/busybox" or link.exists():
                continue
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
        for name in ("tmp", "etc", "root", "proc", "sys", "dev"):
            (root / name).mkdir(exist_ok=True)
        (root / "tmp").chmod(0o1777)
        (root / "etc" / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        )
        (root / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
        layer = layer_from_tree(root, Path(scratch) / "layer.tar")
        return write_archive(
            archive,
            name=WORKLOAD_IMAGE,
            layers=[layer],
            cmd=["sh"],
            env=["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
        )


def _image(archive: Path, name: str) -> Image:
    """A cached archive as :func:`~.oci.write_archive` described it."""
    digest = json.loads(_member(archive, "index.json"))["manifests"][0]["digest"]
    manifest = json.loads(_member(archive, "blobs/sha256/" + digest.split(":", 1)[1]))
    return Image(archive, name, digest, sum(layer["size"] for layer in manifest["layers"]))


def _member(archive: Path, name: str) -> bytes:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile(name)
        if handle is None:
            raise BuildError(f"{archive} has no {name}")
        return handle.read()


def node_images(kubernetes: str) -> NodeImages:
    """The sandbox and workload images' archives, made once per machine."""
    directory = cache_root() / "images"
    directory.mkdir(parents=True, exist_ok=True)
    return NodeImages(sandbox=_pause(kubernetes, directory), workload=_busybox(directory))
