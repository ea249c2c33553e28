"""Who is calling: users, the static token file, and the authenticator chain.

Authentication is upstream's in miniature. A bearer token is looked up in the static token
file (upstream's ``--token-auth-file``: one token per component and for the admin, written
into the data dir by ``inplace up``), then offered to the other token authenticators (service
account tokens); a request with no credentials is ``system:anonymous`` in the group
``system:unauthenticated`` (upstream's ``--anonymous-auth``, on by default), which RBAC lets
read only ``/healthz``, ``/livez``, ``/readyz`` and ``/version``. Every authenticated user is
also in ``system:authenticated``. A bad token is a 401, whatever else the request carries.

What a user may do is decided by :mod:`inplace.apiserver.authz`.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from inplace.api.annotations import SIMULATED

log = logging.getLogger(__name__)

__all__ = [
    "ANONYMOUS_USER",
    "AUTHENTICATED_GROUP",
    "MASTERS_GROUP",
    "NODES_GROUP",
    "NODE_PREFIX",
    "SERVICE_ACCOUNTS_GROUP",
    "SERVICE_ACCOUNT_PREFIX",
    "SIMULATED_LABEL",
    "SIMULATOR_USER",
    "UNAUTHENTICATED_GROUP",
    "AudienceAwareTokenAuthenticator",
    "Authenticator",
    "InvalidToken",
    "TokenAuthenticator",
    "TokenFile",
    "TokenReviewResult",
    "User",
    "service_account_of",
    "service_account_user",
]

NODES_GROUP: Final = "system:nodes"
NODE_PREFIX: Final = "system:node:"
MASTERS_GROUP: Final = "system:masters"
AUTHENTICATED_GROUP: Final = "system:authenticated"
UNAUTHENTICATED_GROUP: Final = "system:unauthenticated"
ANONYMOUS_USER: Final = "system:anonymous"
SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP: Final = "system:serviceaccounts"
#: One identity for the process that serves every simulated node.
SIMULATOR_USER: Final = "system:node-simulator"
#: The dashboard's own identity (`inplace up` writes it a kubeconfig; RBAC grants it reads).
DASHBOARD_USER: Final = "system:inplace:dashboard"
SIMULATED_LABEL: Final = SIMULATED


@dataclass(frozen=True)
class User:
    """An authenticated identity (upstream ``user.Info``); `extra` holds (key, values) pairs."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    @property
    def node_name(self) -> str | None:
        if NODES_GROUP in self.groups and self.name.startswith(NODE_PREFIX):
            return self.name[len(NODE_PREFIX) :]
        return None

    def with_group(self, group: str) -> User:
        if group in self.groups:
            return self
        return User(self.name, (*self.groups, group), self.uid, self.extra)


def service_account_of(username: str) -> tuple[str, str] | None:
    """``system:serviceaccount:NS:NAME`` → (NS, NAME); anything else → None (upstream
    ``serviceaccount.SplitUsername``)."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def service_account_groups(namespace: str) -> tuple[str, ...]:
    """Upstream ``MakeGroupNames``: every service account, and those of its namespace."""
    return (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}")


def service_account_user(
    namespace: str,
    name: str,
    uid: str = "",
    extra: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> User:
    """The user a service account's token authenticates as."""
    return User(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}", service_account_groups(namespace), uid, extra
    )


class InvalidToken(Exception):
    """A token an authenticator recognises as its own but refuses (expired, revoked): a 401
    whatever the other authenticators say."""


class TokenAuthenticator(Protocol):
    """One way of recognising a bearer token (upstream ``authenticator.Token``)."""

    def authenticate_token(self, token: str) -> User | None:
        """The token's user, or None if this authenticator does not recognise it; raises
        :class:`InvalidToken` for one of its own it refuses."""


class AudienceAwareTokenAuthenticator(TokenAuthenticator, Protocol):
    """One whose tokens name their audiences (service account tokens)."""

    def authenticate_token_for(
        self, token: str, audiences: Sequence[str]
    ) -> tuple[User, tuple[str, ...]] | None:
        """The token's user and the `audiences` it is meant for (at least one, else
        :class:`InvalidToken`); None for a token that is not its own."""


@dataclass(frozen=True)
class TokenReviewResult:
    """What a TokenReview answers (upstream ``TokenReviewStatus``)."""

    user: User | None
    audiences: tuple[str, ...] = ()
    error: str = ""


class TokenFile:
    """Tokens in upstream's static token file format: `token,user,uid,"group1,group2"`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._users: dict[str, User] = {}
        self._loaded: tuple[int, int, int] | None = None
        """(inode, size, mtime_ns) of the file as last read."""
        if path.exists():
            self._load()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _load(self) -> None:
        signature = self._signature()
        users: dict[str, User] = {}
        for row in csv.reader(io.StringIO(self.path.read_text())):
            if len(row) < 2 or row[0].startswith("#"):
                continue
            groups = tuple(g for g in (row[3].split(",") if len(row) > 3 else []) if g)
            users[row[0]] = User(row[1], groups, row[2] if len(row) > 2 else "")
        self._users = users
        self._loaded = signature

    def token_for(self, name: str, groups: tuple[str, ...] = ()) -> str:
        """The token of user `name`, created (and saved) if it has none yet; its groups are
        set to `groups` (a data dir from an older version keeps working, with today's)."""
        for token, user in self._users.items():
            if user.name == name:
                if user.groups != groups:
                    self._users[token] = User(name, groups, user.uid)
                    self._save()
                return token
        token = secrets.token_urlsafe(32)
        self._users[token] = User(name, groups, name)
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
            writer.writerow([token, user.name, user.uid or user.name, ",".join(user.groups)])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(buffer.getvalue())
        tmp.replace(self.path)

    def reload(self) -> None:
        """Read the file again if it changed since it was read (an unknown token is looked
        up on every request that presents it: one stat, not a parse)."""
        signature = self._signature()
        if signature is not None and signature != self._loaded:
            self._load()

    def authenticate_token(self, token: str) -> User | None:
        user = self._users.get(token)
        if user is None:
            # The file may have been extended by `inplace up` for a new component.
            self.reload()
            user = self._users.get(token)
        return user

    def authenticate(self, header: str | None) -> User | None:
        """The user of an ``Authorization: Bearer`` header, or None."""
        if not header or not header.startswith("Bearer "):
            return None
        return self.authenticate_token(header[len("Bearer ") :].strip())


class Unauthorized(Exception):
    """Credentials were presented and none of the authenticators accepted them (401)."""


@dataclass
class Authenticator:
    """The authenticator chain: bearer tokens, else anonymous (upstream's request
    authenticator with ``AuthenticatedGroupAdder``)."""

    tokens: list[TokenAuthenticator]
    anonymous: bool = True

    def authenticate(self, authorization: str | None) -> User:
        """The request's user; raises :class:`Unauthorized` for credentials nobody accepts,
        or for none when anonymous requests are off."""
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized
            for authenticator in self.tokens:
                try:
                    user = authenticator.authenticate_token(token.strip())
                except InvalidToken as exc:
                    log.info("a token was refused: %s", exc)
                    raise Unauthorized from None
                if user is not None:
                    return user.with_group(AUTHENTICATED_GROUP)
            raise Unauthorized
        if not self.anonymous:
            raise Unauthorized
        return User(ANONYMOUS_USER, (UNAUTHENTICATED_GROUP,))

    def review(
        self, token: str, audiences: Sequence[str], api_audiences: Sequence[str]
    ) -> TokenReviewResult:
        """A TokenReview of `token` for `audiences` (the API server's, `api_audiences`, when
        none are asked for). A token that names no audience (the token file's) is good only
        for audiences the API server has (upstream's audience-agnostic wrapper)."""
        wanted = tuple(audiences) or tuple(api_audiences)
        for authenticator in self.tokens:
            try:
                if hasattr(authenticator, "authenticate_token_for"):
                    found = authenticator.authenticate_token_for(token, wanted)
                    if found is None:
                        continue
                    user, granted = found
                else:
                    plain = authenticator.authenticate_token(token)
                    if plain is None:
                        continue
                    granted = tuple(a for a in wanted if a in api_audiences)
                    if not granted:
                        continue
                    user = plain
            except InvalidToken as exc:
                return TokenReviewResult(None, error=str(exc) or "invalid bearer token")
            return TokenReviewResult(user.with_group(AUTHENTICATED_GROUP), granted)
        return TokenReviewResult(None)
