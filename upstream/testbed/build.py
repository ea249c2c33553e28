"""``scripts/upstream build``: the upstream components, built from their Go modules, cached.

The Go module beside this package (``upstream/go.mod``) pins one Kubernetes release and the
etcd it was tested with; this builds kube-apiserver, kube-controller-manager, kube-scheduler
and etcd from it, static (``CGO_ENABLED=0``) and with the release named in their version, into
a cache outside the repository keyed by everything that decides the binaries (go.mod, go.sum,
the Go version, the flags). A second run finds them there and returns at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Binaries", "BuildError", "build", "cache_root", "module_dir"]

module_dir = Path(__file__).resolve().parent.parent
"""``upstream/``: the Go module."""

_KUBERNETES = "k8s.io/kubernetes"
_ETCD = "go.etcd.io/etcd/server/v3"
_TARGETS = {
    "kube-apiserver": f"{_KUBERNETES}/cmd/kube-apiserver",
    "kube-controller-manager": f"{_KUBERNETES}/cmd/kube-controller-manager",
    "kube-scheduler": f"{_KUBERNETES}/cmd/kube-scheduler",
    "etcd": _ETCD,
}


class BuildError(Exception):
    """A build step failed; the message names the module and carries Go's own output."""


@dataclass(frozen=True)
class Binaries:
    """Where the built components are, and what they were built from."""

    directory: Path
    kubernetes: str
    """The pinned release, e.g. ``v1.36.3``."""
    etcd: str
    go: str

    def path(self, name: str) -> Path:
        return self.directory / name


def cache_root() -> Path:
    """``$INPLACE_UPSTREAM_CACHE``, else ``$XDG_CACHE_HOME/inplace/upstream`` (``~/.cache``)."""
    explicit = os.environ.get("INPLACE_UPSTREAM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inplace" / "upstream"


def _go() -> str:
    # PATH first; else where the official archive installs it (a shell's profile adds that
    # to PATH, a CI runner's environment may not)
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        raise BuildError(
            "the upstream test bed builds Kubernetes from its Go modules and needs Go ≥ 1.26 "
            "on PATH (Debian: apt-get install golang-1.26, or https://go.dev/dl); none found"
        )
    return go


def _required_version(module: str) -> str:
    for line in (module_dir / "go.mod").read_text().splitlines():
        words = line.split()
        if words[:1] == [module] and len(words) >= 2:
            return words[1]
        if words[:2] == ["require", module] and len(words) >= 3:
            return words[2]
    raise BuildError(f"upstream/go.mod does not require {module}")


def _go_version(go: str) -> str:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _ldflags(kubernetes: str) -> str:
    major, minor = kubernetes.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return " ".join(
        [
            "-s",
            "-w",
            f"-X {pkg}.gitVersion={kubernetes}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    )


def _key(go_version: str, ldflags: str) -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((module_dir / name).read_bytes())
    digest.update(go_version.encode())
    digest.update(ldflags.encode())
    return digest.hexdigest()[:16]


def build(*, log: bool = True) -> Binaries:
    """Build the four binaries unless the cache has them; return where they are. Concurrent
    callers (pytest workers) wait for one build instead of each starting its own."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(log)


def _build(log: bool) -> Binaries:
    go = _go()
    kubernetes = _required_version(_KUBERNETES)
    etcd = _required_version(_ETCD)
    go_version = _go_version(go)
    ldflags = _ldflags(kubernetes)
    directory = cache_root() / f"{kubernetes}-{_key(go_version, ldflags)}"
    stamp = directory / "build.json"
    binaries = Binaries(directory, kubernetes, etcd, go_version)
    if stamp.exists() and all((directory / name).exists() for name in _TARGETS):
        if log:
            _say(f"cached in {directory}: {_summary(binaries)}")
        return binaries
    directory.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=directory.parent))
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    started = time.monotonic()
    try:
        for name, package in _TARGETS.items():
            if log:
                _say(f"building {name} from {package} ...")
            one = time.monotonic()
            result = subprocess.run(
                [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(scratch / name), package],
                cwd=module_dir,
                env=env,
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                module = _ETCD if name == "etcd" else _KUBERNETES
                raise BuildError(
                    f"building {name} ({module} {etcd if name == 'etcd' else kubernetes}, "
                    f"package {package}) failed with {go_version}:\n"
                    f"{result.stderr.strip() or result.stdout.strip()}"
                )
            if log:
                _say(f"  {name}: {time.monotonic() - one:.0f} s")
        (scratch / "build.json").write_text(
            json.dumps(
                {
                    "kubernetes": kubernetes,
                    "etcd": etcd,
                    "go": go_version,
                    "seconds": round(time.monotonic() - started, 1),
                },
                indent=2,
            )
        )
        if directory.exists():
            shutil.rmtree(directory)
        scratch.rename(directory)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if log:
        _say(f"built in {time.monotonic() - started:.0f} s into {directory}: {_summary(binaries)}")
    return binaries


def _summary(binaries: Binaries) -> str:
    return (
        f"kube-apiserver, kube-controller-manager, kube-scheduler {binaries.kubernetes} "
        f"({_KUBERNETES} {binaries.kubernetes}), etcd {binaries.etcd} ({_ETCD} "
        f"{binaries.etcd}), {binaries.go}"
    )


def _say(text: str) -> None:
    print(f"upstream: {text}", file=sys.stderr, flush=True)
