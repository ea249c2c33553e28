"""Bound service account tokens: issued by the TokenRequest API, checked on every request.

Upstream's ``pkg/serviceaccount`` (claims, the bound-token validator) and
``pkg/registry/core/serviceaccount/storage/token.go`` (TokenRequest), with upstream's
messages:

* ``POST .../serviceaccounts/NAME/token`` with a ``TokenRequest``: the audiences (default:
  the API server's own, ``https://kubernetes.default.svc.cluster.local``), the lifetime
  (default an hour, at least 10 minutes) and optionally the Pod (or Secret) the token is bound
  to; the answer carries the token and its ``expirationTimestamp``. A token bound to a pod and
  asked for with kubelet's 3607 seconds for the API server's audience lives a year but says,
  in its ``warnafter`` claim, when it should have been refreshed (upstream's
  ``--service-account-extend-token-expiration``, on by default).
* A request carrying such a token authenticates as ``system:serviceaccount:NS:NAME`` in
  ``system:serviceaccounts`` and ``system:serviceaccounts:NS``, with the pod's name and uid as
  extra, as long as it is signed by this server's key, not expired, meant for this server's
  audience, and its service account and bound pod still exist with the uids it names (a pod
  deleted more than a minute ago, or gone, invalidates it): a token that fails is a 401.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.api.validation.errors import FieldError, ValidationError, invalid
from inplace.apiserver.auth import InvalidToken, User, service_account_user
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError, bad_request, conflict, not_found
from inplace.apiserver.serviceaccounts.jwt import JWTError, SigningKey
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry

__all__ = [
    "API_AUDIENCE",
    "ISSUER",
    "ServiceAccountTokens",
    "TokenInvalid",
]

#: This server's issuer and audience (kubeadm's defaults).
ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCE: Final = ISSUER
DEFAULT_EXPIRATION: Final = 3600
MIN_EXPIRATION: Final = 10 * 60
MAX_EXPIRATION: Final = 1 << 32
#: kubelet's projected token lifetime, which upstream extends (and warns after).
WARN_ONLY_EXPIRATION: Final = 3607
EXTENDED_EXPIRATION: Final = 24 * 365 * 60 * 60
#: Upstream's jwt.DefaultLeeway.
LEEWAY: Final = 60
_CLAIMS: Final = "kubernetes.io"
_VERIFIED_CACHE: Final = 4096
_EXTRA_PREFIX: Final = "authentication.kubernetes.io/"


class TokenInvalid(InvalidToken):
    """A token of ours that no longer authenticates (upstream's validator errors)."""


@dataclass(frozen=True)
class _Kinds:
    service_accounts: Kind | None
    pods: Kind | None
    nodes: Kind | None
    secrets: Kind | None

    @classmethod
    def of(cls, registry: Registry) -> _Kinds:
        return cls(
            registry.by_kind("", "ServiceAccount"),
            registry.by_kind("", "Pod"),
            registry.by_kind("", "Node"),
            registry.by_kind("", "Secret"),
        )


def _ref(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {"name": str(meta.get("name") or ""), "uid": str(meta.get("uid") or "")}


class ServiceAccountTokens:
    """Issues tokens and authenticates them (a token authenticator of the chain)."""

    def __init__(
        self,
        key: SigningKey,
        cache: WatchCache,
        registry: Registry,
        *,
        audiences: Sequence[str] = (API_AUDIENCE,),
        clock: Any = time.time,
    ) -> None:
        self.key = key
        self.cache = cache
        self.kinds = _Kinds.of(registry)
        self.audiences = tuple(audiences)
        self.clock = clock
        #: Signatures already checked (a fifth of a millisecond each), least recently used
        #: first; what a token names is still looked up on every request.
        self._verified: OrderedDict[str, dict[str, Any]] = OrderedDict()

    # -- reading the objects a token names ------------------------------------------------------

    def _get(self, kind: Kind | None, name: str, namespace: str | None) -> Mapping[str, Any] | None:
        if kind is None or not name:
            return None
        entry = self.cache.get(kind, kind.storage_key(name, namespace), namespace)
        return entry.value if entry is not None else None

    # -- issuing --------------------------------------------------------------------------------

    def claims(
        self,
        account: Mapping[str, Any],
        *,
        audiences: Sequence[str],
        expiration: int,
        warn_after: int = 0,
        pod: Mapping[str, Any] | None = None,
        node: Mapping[str, Any] | None = None,
        secret: Mapping[str, Any] | None = None,
        now: int | None = None,
    ) -> dict[str, Any]:
        """Upstream ``token.Claims``."""
        issued = int(self.clock()) if now is None else now
        namespace = str(account["metadata"].get("namespace") or "")
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": _ref(account),
        }
        if pod is not None:
            private["pod"] = _ref(pod)
            if node is not None:
                private["node"] = _ref(node)
        elif secret is not None:
            private["secret"] = _ref(secret)
        elif node is not None:
            private["node"] = _ref(node)
        if warn_after:
            private["warnafter"] = issued + warn_after
        return {
            "aud": list(audiences),
            "exp": issued + expiration,
            "iat": issued,
            "iss": ISSUER,
            "jti": str(uuid.uuid4()),
            _CLAIMS: private,
            "nbf": issued,
            "sub": f"system:serviceaccount:{namespace}:{account['metadata']['name']}",
        }

    def request(
        self, namespace: str, name: str, body: Any, *, dry_run: bool = False
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """A TokenRequest for service account `namespace/name`: the answer (status filled
        in), and warnings. Raises upstream's errors."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a TokenRequest object")
        raw_meta = body.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if meta.get("name") and meta["name"] != name:
            raise _invalid(
                name,
                invalid(
                    "metadata.name",
                    meta["name"],
                    "must match the service account name if specified",
                ),
            )
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise _invalid(
                name,
                invalid(
                    "metadata.namespace",
                    meta["namespace"],
                    "must match the service account namespace if specified",
                ),
            )
        account = self._get(self.kinds.service_accounts, name, namespace)
        if account is None:
            raise not_found("serviceaccounts", "", name)
        spec = dict(body.get("spec") or {})
        audiences = [str(a) for a in spec.get("audiences") or []] or list(self.audiences)
        expiration = spec.get("expirationSeconds")
        expiration = DEFAULT_EXPIRATION if expiration is None else expiration
        if not isinstance(expiration, int) or isinstance(expiration, bool):
            raise _invalid("", invalid("spec.expirationSeconds", expiration, "must be an integer"))
        if expiration < MIN_EXPIRATION:
            raise _invalid(
                "",
                invalid(
                    "spec.expirationSeconds",
                    expiration,
                    f"may not specify a duration less than {MIN_EXPIRATION} seconds",
                ),
            )
        if expiration > MAX_EXPIRATION:
            raise _invalid(
                "",
                invalid(
                    "spec.expirationSeconds",
                    expiration,
                    "may not specify a duration larger than 2^32 seconds",
                ),
            )
        pod = node = secret = None
        ref = spec.get("boundObjectRef")
        if isinstance(ref, dict):
            kind, ref_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
            api_version = str(ref.get("apiVersion") or "")
            if api_version == "v1" and kind == "Pod":
                pod = self._get(self.kinds.pods, ref_name, namespace)
                if pod is None:
                    raise not_found("pods", "", ref_name)
                if (pod.get("spec") or {}).get("serviceAccountName") != name:
                    raise bad_request(
                        f'cannot bind token for serviceaccount "{name}" to pod running with '
                        "different serviceaccount name."
                    )
                node_name = (pod.get("spec") or {}).get("nodeName")
                node = self._get(self.kinds.nodes, str(node_name or ""), None)
                bound = pod
            elif api_version == "v1" and kind == "Node":
                node = self._get(self.kinds.nodes, ref_name, None)
                if node is None:
                    raise not_found("nodes", "", ref_name)
                bound = node
            elif api_version == "v1" and kind == "Secret":
                secret = self._get(self.kinds.secrets, ref_name, namespace)
                if secret is None:
                    raise not_found("secrets", "", ref_name)
                bound = secret
            else:
                group, _, version = api_version.rpartition("/")
                raise bad_request(
                    f"cannot bind token to object of type {group}/{version}, Kind={kind}"
                )
            if ref.get("uid") and ref["uid"] != (bound.get("metadata") or {}).get("uid"):
                raise conflict(
                    kind,
                    "",
                    ref_name,
                    f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                    "in record. The object might have been deleted and then recreated",
                )
        lifetime, warn_after = expiration, 0
        if pod is not None and expiration == WARN_ONLY_EXPIRATION and API_AUDIENCE in audiences:
            lifetime, warn_after = EXTENDED_EXPIRATION, expiration
        now = int(self.clock())
        token = (
            ""
            if dry_run
            else self.key.sign(
                self.claims(
                    account,
                    audiences=audiences,
                    expiration=lifetime,
                    warn_after=warn_after,
                    pod=pod,
                    node=node,
                    secret=secret,
                    now=now,
                )
            )
        )
        answer = {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": rfc3339(datetime.fromtimestamp(now, UTC)),
            },
            "spec": {**spec, "audiences": audiences, "expirationSeconds": expiration},
            "status": {
                "token": token,
                "expirationTimestamp": rfc3339(datetime.fromtimestamp(now + expiration, UTC)),
            },
        }
        return answer, ()

    # -- authenticating -------------------------------------------------------------------------

    def authenticate_token(self, token: str) -> User | None:
        """The token's user; None for a token that is not ours (another authenticator may
        know it); :class:`TokenInvalid` for one of ours that no longer authenticates."""
        found = self.authenticate_token_for(token, self.audiences)
        return found[0] if found is not None else None

    def authenticate_token_for(
        self, token: str, audiences: Sequence[str]
    ) -> tuple[User, tuple[str, ...]] | None:
        """:meth:`authenticate_token` for `audiences` (a TokenReview's): the user and the
        audiences of the token among them."""
        claims = self._verified.get(token)
        if claims is None:
            try:
                claims = self.key.verify(token)
            except JWTError:
                return None
            if claims.get("iss") != ISSUER:
                return None
            self._verified[token] = claims
            if len(self._verified) > _VERIFIED_CACHE:
                self._verified.popitem(last=False)
        else:
            self._verified.move_to_end(token)
        user = self.validate(claims, audiences)
        aud = claims.get("aud")
        token_audiences = [aud] if isinstance(aud, str) else list(aud or [])
        return user, tuple(a for a in audiences if a in token_audiences)

    def validate(self, claims: Mapping[str, Any], audiences: Sequence[str]) -> User:
        """Upstream's bound-token validator: time, audience, and the objects it names."""
        now = int(self.clock())
        aud = claims.get("aud")
        token_audiences = [aud] if isinstance(aud, str) else list(aud or [])
        if not set(token_audiences) & set(audiences):
            raise TokenInvalid(
                f"token audiences {_go_quoted(token_audiences)} is invalid for the target "
                f"audiences {_go_quoted(audiences)}"
            )
        if isinstance(claims.get("exp"), int) and now > claims["exp"] + LEEWAY:
            raise TokenInvalid("service account token has expired")
        if isinstance(claims.get("nbf"), int) and now < claims["nbf"] - LEEWAY:
            raise TokenInvalid("service account token is not valid yet")
        if isinstance(claims.get("iat"), int) and now < claims["iat"] - LEEWAY:
            raise TokenInvalid("service account token is issued in the future")
        private = claims.get(_CLAIMS)
        if not isinstance(private, Mapping):
            raise TokenInvalid("token has no kubernetes.io claims")
        namespace = str(private.get("namespace") or "")
        account_ref = private.get("serviceaccount") or {}
        account = self._get(
            self.kinds.service_accounts, str(account_ref.get("name") or ""), namespace
        )
        if account is None:
            raise TokenInvalid(f'serviceaccounts "{account_ref.get("name")}" not found')
        self._not_deleted(account, now)
        uid = (account.get("metadata") or {}).get("uid")
        if uid != account_ref.get("uid"):
            raise TokenInvalid(
                f"service account UID ({uid}) does not match claim ({account_ref.get('uid')})"
            )
        extra: list[tuple[str, tuple[str, ...]]] = []
        for key, kind in (("secret", self.kinds.secrets), ("pod", self.kinds.pods)):
            ref = private.get(key)
            if not isinstance(ref, Mapping):
                continue
            obj = self._get(kind, str(ref.get("name") or ""), namespace)
            if obj is None:
                raise TokenInvalid(f'{key}s "{ref.get("name")}" not found')
            self._not_deleted(obj, now)
            if (obj.get("metadata") or {}).get("uid") != ref.get("uid"):
                raise TokenInvalid(
                    f"{key} UID ({(obj.get('metadata') or {}).get('uid')}) does not match claim "
                    f"({ref.get('uid')})"
                )
            if key == "pod":
                extra += [
                    (_EXTRA_PREFIX + "pod-name", (str(ref.get("name")),)),
                    (_EXTRA_PREFIX + "pod-uid", (str(ref.get("uid")),)),
                ]
        node = private.get("node")
        if isinstance(node, Mapping):
            extra += [
                (_EXTRA_PREFIX + "node-name", (str(node.get("name")),)),
                (_EXTRA_PREFIX + "node-uid", (str(node.get("uid")),)),
            ]
        if claims.get("jti"):
            extra.append((_EXTRA_PREFIX + "credential-id", (f"JTI={claims['jti']}",)))
        return service_account_user(
            namespace, str(account_ref.get("name")), str(uid or ""), tuple(sorted(extra))
        )

    @staticmethod
    def _not_deleted(obj: Mapping[str, Any], now: int) -> None:
        """Upstream: an object deleted more than a leeway ago invalidates its tokens."""
        stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
        if not isinstance(stamp, str):
            return
        try:
            deleted = parse_rfc3339(stamp)
        except ValueError:
            return
        if deleted.timestamp() < now - LEEWAY:
            raise TokenInvalid("service account token has been invalidated")


def _go_quoted(values: Sequence[str]) -> str:
    """Go's ``%q`` of a string slice: ``["a" "b"]``."""
    return "[" + " ".join(orjson.dumps(v).decode() for v in values) + "]"


def _invalid(name: str, error: FieldError) -> StatusError:
    validation = ValidationError("TokenRequest", name, [error], group="authentication.k8s.io")
    return StatusError(422, validation.message(), body=validation.status())
