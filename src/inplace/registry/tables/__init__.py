"""Server-side Table responses (`meta.k8s.io/v1 Table`), so `kubectl get` prints what it prints
against a real cluster.

kubectl asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints the cells the
server computed, so READY, STATUS, RESTARTS and the rest are decided here. Each printer is a
port of upstream's `pkg/printers/internalversion/printers.go` (v1.32) working on the v1 JSON
we store; the VerticalPodAutoscaler follows its CRD's `additionalPrinterColumns`.

Like upstream's TableConvertor, rows always carry the wide (`-o wide`) cells too; the priority 1
columns are the ones kubectl hides unless asked.

One module per concern: `workloads`, `cluster`, `config` (ConfigMaps, Secrets,
ServiceAccounts), `rbac`, `services` (Services, Endpoints, EndpointSlices), `storage`
(PersistentVolumes, claims, StorageClasses) and `admissionregistration`; the columns,
`TablePrinter`, `to_table` and the pods' printer are in `inplace.api.tables`, shared with the
dashboard. A kind names its printer in its strategy (`inplace.registry.kinds`).
"""

from __future__ import annotations

from inplace.api.tables.pods import POD_TABLE
from inplace.api.tables.printer import (
    DEFAULT_TABLE,
    Column,
    TablePrinter,
    column_definitions,
    human_duration,
    to_table,
)
from inplace.registry.tables.cluster import (
    EVENT_TABLE,
    LEASE_TABLE,
    NAMESPACE_TABLE,
    NODE_TABLE,
    PRIORITY_CLASS_TABLE,
    VPA_TABLE,
)
from inplace.registry.tables.config import CONFIG_MAP_TABLE, SECRET_TABLE, SERVICE_ACCOUNT_TABLE
from inplace.registry.tables.rbac import (
    CLUSTER_ROLE_BINDING_TABLE,
    CLUSTER_ROLE_TABLE,
    ROLE_BINDING_TABLE,
    ROLE_TABLE,
)
from inplace.registry.tables.services import ENDPOINT_SLICE_TABLE, ENDPOINTS_TABLE, SERVICE_TABLE
from inplace.registry.tables.storage import (
    PERSISTENT_VOLUME_CLAIM_TABLE,
    PERSISTENT_VOLUME_TABLE,
    STORAGE_CLASS_TABLE,
)
from inplace.registry.tables.workloads import (
    CONTROLLER_REVISION_TABLE,
    CRON_JOB_TABLE,
    DAEMON_SET_TABLE,
    DEPLOYMENT_TABLE,
    JOB_TABLE,
    PDB_TABLE,
    REPLICA_SET_TABLE,
    STATEFUL_SET_TABLE,
)

__all__ = [
    "CLUSTER_ROLE_BINDING_TABLE",
    "CLUSTER_ROLE_TABLE",
    "CONFIG_MAP_TABLE",
    "CONTROLLER_REVISION_TABLE",
    "CRON_JOB_TABLE",
    "DAEMON_SET_TABLE",
    "DEFAULT_TABLE",
    "DEPLOYMENT_TABLE",
    "ENDPOINTS_TABLE",
    "ENDPOINT_SLICE_TABLE",
    "EVENT_TABLE",
    "JOB_TABLE",
    "LEASE_TABLE",
    "NAMESPACE_TABLE",
    "NODE_TABLE",
    "PDB_TABLE",
    "PERSISTENT_VOLUME_CLAIM_TABLE",
    "PERSISTENT_VOLUME_TABLE",
    "POD_TABLE",
    "PRIORITY_CLASS_TABLE",
    "REPLICA_SET_TABLE",
    "ROLE_BINDING_TABLE",
    "ROLE_TABLE",
    "SECRET_TABLE",
    "SERVICE_ACCOUNT_TABLE",
    "SERVICE_TABLE",
    "STATEFUL_SET_TABLE",
    "STORAGE_CLASS_TABLE",
    "VPA_TABLE",
    "Column",
    "TablePrinter",
    "column_definitions",
    "human_duration",
    "to_table",
]
