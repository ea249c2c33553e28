"""``scripts/upstream build``: the upstream components, built from their Go modules, cached.

The Go module beside this package (``upstream/go.mod``) pins one Kubernetes release and the
etcd it was tested with; this builds kube-apiserver, kube-controller-manager, kube-scheduler,
the kubelet and etcd from it, static (``CGO_ENABLED=0``) and with the release named in their
version. Every other component comes from a module of its own, because its release requires
other versions of the modules the pinned Kubernetes uses, and one module would build one of
them at the other's versions:

* ``upstream/helm``: Helm, which installs the operator's chart;
* ``upstream/node/containerd``: containerd, its runc shim (``containerd-shim-runc-v2``) and
  ``ctr``, the release containerd's RELEASES.md pairs with the pinned Kubernetes;
* ``upstream/node/runc``: runc, with cgo and the ``seccomp`` tag (Debian's libseccomp-dev):
  without seccomp every sandbox asking for the runtime's default profile fails;
* ``upstream/node/cni``: the CNI plugins of the bed's pod network (bridge, host-local,
  loopback, portmap);
* ``upstream/node/crictl``: crictl, to look at a node's containerd as an operator would.

Other releases than the pinned one (the newest the proxy serves and the oldest the operator
claims) are modules of their own under ``upstream/versions/`` (their control plane and
kubelet, and where the pinned containerd is not paired with that release, the containerd
that is); :meth:`Binaries.for_release` gives a bed those.

Each module's binaries are cached in a directory of their own outside the repository, keyed
by what decides them (the module's go.mod and go.sum, the Go version, the flags): a change to
one module rebuilds that one, and a second run finds them all and returns at once.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Binaries", "BuildError", "build", "cache_root", "helm_module_dir", "module_dir"]

module_dir = Path(__file__).resolve().parent.parent
"""``upstream/``: the Go module of the control plane."""

helm_module_dir = module_dir / "helm"
"""``upstream/helm/``: the Go module of Helm."""

node_module_dir = module_dir / "node"
"""``upstream/node/``: one Go module per node component (containerd, runc, cni, crictl)."""

_KUBERNETES = "k8s.io/kubernetes"
_ETCD = "go.etcd.io/etcd/server/v3"
_HELM = "helm.sh/helm/v4"
_CONTAINERD = "github.com/containerd/containerd/v2"
_RUNC = "github.com/opencontainers/runc"
_CNI = "github.com/containernetworking/plugins"
_CRICTL = "sigs.k8s.io/cri-tools"


@dataclass(frozen=True)
class _Target:
    """One binary: its main package and the module that publishes it."""

    package: str
    module: str


@dataclass(frozen=True)
class _Group:
    """The binaries built in one Go module, with the flags they share."""

    name: str
    directory: Path
    version_of: str
    """The module whose version names the group's cache directory."""
    targets: dict[str, _Target]
    ldflags: Callable[[str], str]
    """The link flags, given the version of ``version_of``."""
    cgo: bool = False
    tags: tuple[str, ...] = field(default=())
    release: str = ""
    """For another release than the pinned one: its name (``v1.33``), else empty."""


class BuildError(Exception):
    """A build step failed; the message names the module and carries Go's own output."""


@dataclass(frozen=True)
class Binaries:
    """Where the built components are, and what they were built from."""

    directories: dict[str, Path]
    """Each binary's cache directory, by binary name."""
    versions: dict[str, str]
    """Each module's version, by module path."""
    go: str
    releases: dict[str, tuple[dict[str, Path], dict[str, str]]] = field(default_factory=dict)
    """Other releases (``v1.33`` …): their binaries' directories and modules' versions."""

    def for_release(self, release: str) -> Binaries:
        """The same binaries, but the control plane, the kubelet and (where it has its own)
        containerd of ``release`` (``v1.37``, ``v1.33``; empty: the pinned one)."""
        if not release:
            return self
        if release not in self.releases:
            raise BuildError(
                f"release {release} was not asked of build() (build(releases=[{release!r}]))"
            )
        directories, versions = self.releases[release]
        return Binaries({**self.directories, **directories}, {**self.versions, **versions}, self.go)

    @property
    def kubernetes(self) -> str:
        """The pinned release, e.g. ``v1.36.3``."""
        return self.versions[_KUBERNETES]

    @property
    def etcd(self) -> str:
        return self.versions[_ETCD]

    @property
    def helm(self) -> str:
        return self.versions[_HELM]

    @property
    def containerd(self) -> str:
        return self.versions[_CONTAINERD]

    def path(self, name: str) -> Path:
        """A binary by name: ``kube-apiserver`` … ``kubelet``, ``etcd``, ``helm``,
        ``containerd``, ``containerd-shim-runc-v2``, ``ctr``, ``runc``, ``crictl``, and the
        CNI plugins ``bridge``, ``host-local``, ``loopback``, ``portmap``."""
        return self.directories[name] / name

    @property
    def cni_bin_dir(self) -> Path:
        """The directory holding the CNI plugins (containerd's ``bin_dirs``)."""
        return self.directories["bridge"]


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


def _required_version(module: str, directory: Path = module_dir) -> str:
    go_mod = directory / "go.mod"
    for line in go_mod.read_text().splitlines():
        words = line.split()
        if words[:1] == [module] and len(words) >= 2:
            return words[1]
        if words[:2] == ["require", module] and len(words) >= 3:
            return words[2]
    raise BuildError(f"{go_mod.relative_to(module_dir.parent)} does not require {module}")


def _go_version(go: str) -> str:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _kubernetes_ldflags(kubernetes: str) -> str:
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


def _helm_ldflags(helm: str) -> str:
    """What Helm's Makefile sets for a tagged release: the version, no ``unreleased``
    metadata, a clean tree. Its ``gitCommit`` (``git rev-parse HEAD``) stays empty: the
    module proxy serves the tag's source, not its commit."""
    pkg = f"{_HELM}/internal/version"
    return " ".join(
        [
            "-w",
            "-s",
            f"-X {pkg}.version={helm}",
            f"-X {pkg}.metadata=",
            f"-X {pkg}.gitTreeState=clean",
        ]
    )


def _version_ldflags(variable: str) -> Callable[[str], str]:
    """``-X variable=version``, as each project's Makefile sets it for a release."""
    return lambda version: f"-s -w -X {variable}={version}"


_CNI_PLUGINS = {
    "bridge": "plugins/main/bridge",
    "host-local": "plugins/ipam/host-local",
    "loopback": "plugins/main/loopback",
    "portmap": "plugins/meta/portmap",
}

_GROUPS = (
    _Group(
        "kubernetes",
        module_dir,
        _KUBERNETES,
        {
            name: _Target(f"{_KUBERNETES}/cmd/{name}", _KUBERNETES)
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
        }
        | {"etcd": _Target(_ETCD, _ETCD)},
        _kubernetes_ldflags,
    ),
    _Group(
        "helm",
        helm_module_dir,
        _HELM,
        {"helm": _Target(f"{_HELM}/cmd/helm", _HELM)},
        _helm_ldflags,
    ),
    _Group(
        "containerd",
        node_module_dir / "containerd",
        _CONTAINERD,
        {
            name: _Target(f"{_CONTAINERD}/cmd/{name}", _CONTAINERD)
            for name in ("containerd", "containerd-shim-runc-v2", "ctr")
        },
        _version_ldflags(f"{_CONTAINERD}/version.Version"),
    ),
    _Group(
        "runc",
        node_module_dir / "runc",
        _RUNC,
        {"runc": _Target(_RUNC, _RUNC)},
        _version_ldflags("main.version"),
        cgo=True,
        tags=("seccomp",),
    ),
    _Group(
        "cni",
        node_module_dir / "cni",
        _CNI,
        {name: _Target(f"{_CNI}/{package}", _CNI) for name, package in _CNI_PLUGINS.items()},
        _version_ldflags(
            "github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion"
        ),
    ),
    _Group(
        "crictl",
        node_module_dir / "crictl",
        _CRICTL,
        {"crictl": _Target(f"{_CRICTL}/cmd/crictl", _CRICTL)},
        _version_ldflags(f"{_CRICTL}/pkg/version.Version"),
    ),
)


def _release_groups(release: str, containerd: str = "") -> tuple[_Group, ...]:
    """Another release's control plane and kubelet (``upstream/versions/<release>``), and
    its own containerd when ``containerd`` names a module directory there."""
    directory = module_dir / "versions" / release
    kubernetes = _Group(
        f"kubernetes-{release}",
        directory,
        _KUBERNETES,
        {
            name: _Target(f"{_KUBERNETES}/cmd/{name}", _KUBERNETES)
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
        },
        _kubernetes_ldflags,
        release=release,
    )
    if not containerd:
        return (kubernetes,)
    return (
        kubernetes,
        _Group(
            f"containerd-{release}",
            directory / containerd,
            _CONTAINERD,
            {
                name: _Target(f"{_CONTAINERD}/cmd/{name}", _CONTAINERD)
                for name in ("containerd", "containerd-shim-runc-v2", "ctr")
            },
            _version_ldflags(f"{_CONTAINERD}/version.Version"),
            release=release,
        ),
    )


RELEASES = ("v1.37", "v1.33")
"""Releases the operator is also tested on: the newest the module proxy serves, and the
oldest it claims (1.33: in-place resize beta, ``pods/resize``)."""

_GROUPS += _release_groups("v1.37") + _release_groups("v1.33", containerd="containerd")


def _key(group: _Group, go_version: str, ldflags: str) -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((group.directory / name).read_bytes())
    digest.update(go_version.encode())
    digest.update(ldflags.encode())
    digest.update(f"cgo={group.cgo} tags={','.join(group.tags)}".encode())
    return digest.hexdigest()[:16]


def build(*, log: bool = True, releases: Sequence[str] = ()) -> Binaries:
    """Build every group of the pinned release, and of each of ``releases`` (``v1.37``, …:
    :data:`RELEASES`), whose binaries the cache lacks; return where they all are. Each
    group has its own lock: concurrent callers (pytest workers) wait for one build of a
    group instead of each starting their own, and never for a group they did not ask for."""
    unknown = set(releases) - set(RELEASES)
    if unknown:
        raise BuildError(f"unknown release(s) {sorted(unknown)}; known: {list(RELEASES)}")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    go = _go()
    go_version = _go_version(go)
    directories: dict[str, Path] = {}
    versions: dict[str, str] = {}
    built: dict[str, tuple[dict[str, Path], dict[str, str]]] = {}
    for group in _GROUPS:
        if group.release and group.release not in releases:
            continue
        mine = built.setdefault(group.release, ({}, {})) if group.release else None
        into_dirs, into_versions = mine if mine else (directories, versions)
        for target in group.targets.values():
            into_versions[target.module] = _required_version(target.module, group.directory)
        with open(root / f".lock-{group.name}", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            directory = _build_group(group, go, go_version, into_versions, log)
        into_dirs.update((name, directory) for name in group.targets)
    return Binaries(directories, versions, go_version, built)


def _build_group(
    group: _Group, go: str, go_version: str, versions: dict[str, str], log: bool
) -> Path:
    version = versions[group.version_of]
    ldflags = group.ldflags(version)
    directory = cache_root() / f"{group.name}-{version}-{_key(group, go_version, ldflags)}"
    stamp = directory / "build.json"
    if stamp.exists() and all((directory / name).exists() for name in group.targets):
        if log:
            _say(f"cached in {directory}: {_summary(group, versions)}")
        return directory
    if group.cgo:
        _require_cgo(group)
    directory.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=directory.parent))
    env = {
        **os.environ,
        "CGO_ENABLED": "1" if group.cgo else "0",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
    }
    started = time.monotonic()
    seconds: dict[str, float] = {}
    try:
        for name, target in group.targets.items():
            if log:
                _say(f"building {name} from {target.package} ...")
            one = time.monotonic()
            command = [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(scratch / name)]
            if group.tags:
                command += ["-tags", ",".join(group.tags)]
            result = subprocess.run(
                [*command, target.package],
                cwd=group.directory,
                env=env,
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                raise BuildError(
                    f"building {name} ({target.module} {versions[target.module]}, "
                    f"package {target.package}) failed with {go_version}:\n"
                    f"{result.stderr.strip() or result.stdout.strip()}"
                )
            seconds[name] = round(time.monotonic() - one, 1)
            if log:
                _say(f"  {name}: {seconds[name]:.0f} s")
        (scratch / "build.json").write_text(
            json.dumps(
                {
                    "versions": {t.module: versions[t.module] for t in group.targets.values()},
                    "go": go_version,
                    "seconds": round(time.monotonic() - started, 1),
                    "binaries": seconds,
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
        _say(
            f"built in {time.monotonic() - started:.0f} s into {directory}: "
            f"{_summary(group, versions)}"
        )
    return directory


def _require_cgo(group: _Group) -> None:
    """runc's cgo needs a C compiler and, with the seccomp tag, libseccomp's headers; say
    which package gives each rather than let cgo fail deep in its output."""
    if not any(shutil.which(name) for name in ("cc", "gcc")):
        raise BuildError(
            f"{group.name} is built with cgo and needs a C compiler (Debian: apt-get install gcc)"
        )
    if "seccomp" in group.tags and not Path("/usr/include/seccomp.h").exists():
        raise BuildError(
            f"{group.name} is built with seccomp and needs libseccomp's headers "
            "(Debian: apt-get install libseccomp-dev); /usr/include/seccomp.h is missing"
        )


def _summary(group: _Group, versions: dict[str, str]) -> str:
    modules = sorted({target.module for target in group.targets.values()})
    return (
        ", ".join(group.targets)
        + " ("
        + ", ".join(f"{module} {versions[module]}" for module in modules)
        + ")"
    )


def _say(text: str) -> None:
    print(f"upstream: {text}", file=sys.stderr, flush=True)
