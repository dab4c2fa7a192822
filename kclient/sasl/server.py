"""Server-side credential checks, for the emulated broker.

:class:`CredentialStore` turns a ``user -> password`` list into what a SCRAM
server keeps (salt, iteration count, stored key, server key per mechanism)
and forgets the passwords; PLAIN logins are checked against the SCRAM-SHA-256
credential, so no password stays in memory after the store is built.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping

import attrs

from kclient.errors import ConfigError
from kclient.sasl.mechanism import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_MECHANISMS,
    SCRAM_SHA_256,
    SaslServerMechanism,
)
from kclient.sasl.oauthbearer import OAuthBearerServer
from kclient.sasl.plain import PlainServer
from kclient.sasl.scram import DEFAULT_ITERATIONS, ScramCredential, ScramServer

__all__ = ["CredentialStore", "TokenValidator"]

#: ``validate(token, extensions) -> principal or None`` for OAUTHBEARER servers.
TokenValidator = Callable[[str, Mapping[str, str]], "str | None"]


@attrs.frozen(repr=False)
class CredentialStore:
    """Per-mechanism SCRAM credentials for a set of users (no passwords kept)."""

    scram: Mapping[str, Mapping[str, ScramCredential]]

    @classmethod
    def from_passwords(
        cls, users: Mapping[str, str], iterations: int = DEFAULT_ITERATIONS
    ) -> CredentialStore:
        """Derive SCRAM-SHA-256 and SCRAM-SHA-512 credentials for every ``user: password``."""
        if not isinstance(users, Mapping):
            raise ConfigError("SASL users must be a mapping of user name to password")
        scram: dict[str, dict[str, ScramCredential]] = {}
        for mechanism in SCRAM_MECHANISMS:
            per_user: dict[str, ScramCredential] = {}
            for user, password in users.items():
                if not user or not isinstance(user, str) or not isinstance(password, str):
                    raise ConfigError("SASL user names and passwords must be non-empty strings")
                per_user[user] = ScramCredential.from_password(
                    mechanism, password, iterations=iterations
                )
            scram[mechanism] = per_user
        return cls(scram=scram)

    @property
    def users(self) -> tuple[str, ...]:
        """The user names, sorted."""
        return tuple(sorted(self.scram.get(SCRAM_SHA_256, {})))

    def verify_plain(self, username: str, password: str) -> bool:
        """Check a PLAIN login by re-deriving the SCRAM-SHA-256 stored key."""
        credential = self.scram.get(SCRAM_SHA_256, {}).get(username)
        if credential is None:
            return False
        salted = hashlib.pbkdf2_hmac(
            "sha256", password.encode("utf-8"), credential.salt, credential.iterations
        )
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        return hmac.compare_digest(hashlib.sha256(client_key).digest(), credential.stored_key)

    def server_mechanism(
        self, mechanism: str, token_validator: TokenValidator | None = None
    ) -> SaslServerMechanism:
        """A fresh server-side state machine for ``mechanism``."""
        if mechanism == PLAIN:
            return PlainServer(self.verify_plain)
        if mechanism in SCRAM_MECHANISMS:
            return ScramServer(mechanism, self.scram.get(mechanism, {}))
        if mechanism == OAUTHBEARER and token_validator is not None:
            return OAuthBearerServer(token_validator)
        raise ConfigError(f"no server-side support for SASL mechanism {mechanism!r}")

    def __repr__(self) -> str:
        return f"CredentialStore(users={list(self.users)!r}, credentials=***)"
