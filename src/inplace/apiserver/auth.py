"""Who is calling (bearer tokens) and what they may do.

Authentication is a static token file, as upstream's `--token-auth-file`: one token per
component, written into the data dir on first start. Authorization is upstream's shape in
miniature: the admin and the control-plane components may do anything; a node agent
(`system:node:<name>`, group `system:nodes`) may read everything but write only its own Node,
its own Lease, the pods bound to it, and events — as the NodeRestriction admission plugin
enforces upstream.
"""

from __future__ import annotations

import csv
import io
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inplace.api.annotations import SIMULATED
from inplace.apiserver.routing import RequestInfo

NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"
MASTERS_GROUP = "system:masters"
#: One identity for the process that serves every simulated node.
SIMULATOR_USER = "system:node-simulator"
SIMULATED_LABEL = SIMULATED


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()

    @property
    def node_name(self) -> str | None:
        if NODES_GROUP in self.groups and self.name.startswith(NODE_PREFIX):
            return self.name[len(NODE_PREFIX) :]
        return None


class TokenFile:
    """Tokens in upstream's static token file format: `token,user,uid,"group1,group2"`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._users: dict[str, User] = {}
        if path.exists():
            self._load()

    def _load(self) -> None:
        users: dict[str, User] = {}
        for row in csv.reader(io.StringIO(self.path.read_text())):
            if len(row) < 2 or row[0].startswith("#"):
                continue
            groups = tuple(g for g in (row[3].split(",") if len(row) > 3 else []) if g)
            users[row[0]] = User(row[1], groups)
        self._users = users

    def token_for(self, name: str, groups: tuple[str, ...] = ()) -> str:
        """The token of user `name`, created (and saved) if it has none yet."""
        for token, user in self._users.items():
            if user.name == name:
                return token
        token = secrets.token_urlsafe(32)
        self._users[token] = User(name, groups)
        self._save()
        return token

    def token_of(self, name: str) -> str | None:
        """The token of user `name` if it has one (never creates one): what the API server
        presents to a node agent on that node's behalf."""
        for attempt in range(2):
            for token, user in self._users.items():
                if user.name == name:
                    return token
            if attempt == 0:
                self.reload()
        return None

    def _save(self) -> None:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        for token, user in self._users.items():
            writer.writerow([token, user.name, user.name, ",".join(user.groups)])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(buffer.getvalue())
        tmp.replace(self.path)

    def reload(self) -> None:
        if self.path.exists():
            self._load()

    def authenticate(self, header: str | None) -> User | None:
        if not header or not header.startswith("Bearer "):
            return None
        presented = header[len("Bearer ") :].strip()
        user = self._users.get(presented)
        if user is None:
            # The file may have been extended by `inplace up` for a new component.
            self.reload()
            user = self._users.get(presented)
        return user


_READ_VERBS = {"get", "list", "watch"}


def authorize(
    user: User,
    info: RequestInfo,
    *,
    new: dict[str, Any] | None,
    old: dict[str, Any] | None,
    is_simulated_node: bool = False,
) -> str | None:
    """None if `user` may do the request, else the reason it may not (for the 403 message)."""
    if MASTERS_GROUP in user.groups or info.verb in _READ_VERBS:
        return None
    node = user.node_name
    simulator = user.name == SIMULATOR_USER
    if node is None and not simulator:
        return "no rule grants this"
    kind = info.kind.kind
    if kind == "Event":
        return None
    if kind == "Node":
        if simulator:
            return None if is_simulated_node else "the simulator may only write simulated nodes"
        return (
            None
            if info.name in (node, None) and _name_of(new, info) == node
            else (f'node "{node}" can only modify its own Node object')
        )
    if kind == "Lease":
        if info.namespace != "kube-node-lease":
            return "nodes may only write leases in namespace kube-node-lease"
        if simulator or _name_of(new, info) == node:
            return None
        return f'node "{node}" can only modify its own Lease'
    if kind == "Pod" and info.subresource in (None, "status") and info.verb != "create":
        if old is None and info.verb == "delete":
            # Upstream's NodeRestriction reads the pod first and returns its NotFound: a node
            # confirming a deletion someone else finished gets a 404, not a 403 it retries.
            return None
        bound = (old or {}).get("spec", {}).get("nodeName")
        if simulator:
            return None if is_simulated_node else "the simulator may only write simulated pods"
        if bound == node:
            return None
        return f'node "{node}" can only update pods bound to it'
    return "no rule grants this to a node"


def _name_of(obj: dict[str, Any] | None, info: RequestInfo) -> str | None:
    if info.name is not None:
        return info.name
    if obj is None:
        return None
    name = obj.get("metadata", {}).get("name")
    return name if isinstance(name, str) else None
