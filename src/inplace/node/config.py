"""The settings of one node agent (shared by its parts, its registration and ``inplace node``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .model import APPROVAL_HOLD

__all__ = ["AgentConfig"]


@dataclass
class AgentConfig:
    """Settings of one node agent."""

    node_name: str
    """The Node's name (also the Lease's)."""
    cpu_milli: int
    """Allocatable CPU in milli-cores (capacity equals allocatable: no reservations)."""
    memory_bytes: int
    """Allocatable memory in bytes."""
    data_dir: Path
    """Checkpoints live in ``data_dir/checkpoints``."""
    log_root: Path
    """Container logs: ``log_root/<namespace>_<pod>_<uid>/<container>/<restartCount>.log``."""
    max_pods: int = 110
    admit_without_scheduler: bool = False
    """Approve resizes on the agent's own ledger, as upstream's kubelet does without an
    arbitrating scheduler."""
    approval_hold: float = APPROVAL_HOLD
    """Seconds a status write that only reports a new generation may wait for the
    scheduler's approval of its growth, to go out with the allocation
    (:func:`inplace.node.model.approval_hold`; 0: never held)."""
    http_host: str = "127.0.0.1"
    """The IP the agent's endpoint listens on, reported as the Node's ``InternalIP``
    (``inplace node --address``)."""
    http_port: int = 0
    """Port of the agent's endpoint (0: pick one; published in ``daemonEndpoints``)."""
    tls_cert_file: Path | None = None
    """Serve the endpoint over HTTPS with this certificate (``--tls-cert-file``); None: plain
    HTTP, the API server authenticated by the node's bearer token (:mod:`.stats`)."""
    tls_private_key_file: Path | None = None
    """The key of ``tls_cert_file`` (``--tls-private-key-file``)."""
    client_ca_file: Path | None = None
    """With TLS, the only CA whose client certificates are accepted (``--client-ca-file``):
    the one that signs the API server's kubelet-client certificate."""
    lease_duration: int = 40
    lease_renew_every: float = 10.0
    node_status_every: float = 20.0
    usage_every: float = 5.0
    usage_history: float = 900.0
    workers: int = 16
    hidden_paths: tuple[Path, ...] = ()
    """Directories pods never see besides ``data_dir`` (``inplace up``: the cluster's data
    dir, with its keys and tokens): emptied in every pod's mount namespace."""
    copy_on_write: bool = True
    """A container's root is an overlay of the host's with its own writable layer; off (or
    refused by the kernel), the host's root read-only with writable ``/tmp``, ``/var/tmp``
    and ``/run``."""
    labels: dict[str, str] = field(default_factory=dict)
    """Extra Node labels (e.g. ``inplace.dev/simulated``)."""
