"""What an application tells kclient about SASL: :class:`SaslConfig`.

The password and the token provider are secrets: they are left out of
``repr``/``str`` (shown as ``***``) and no kclient message ever includes them.
For command lines, :meth:`SaslConfig.from_env` and :meth:`SaslConfig.from_file`
read the password from an environment variable or a file so it never appears
in ``ps`` output or shell history.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping

import attrs

from kclient._secret import read_secret_file
from kclient.errors import ConfigError
from kclient.sasl.mechanism import (
    MECHANISMS,
    OAUTHBEARER,
    PLAIN,
    SCRAM_MECHANISMS,
    SaslClientMechanism,
)
from kclient.sasl.oauthbearer import OAuthBearerClient, validate_extensions
from kclient.sasl.plain import PlainClient
from kclient.sasl.scram import ScramClient

__all__ = ["SaslConfig", "TokenProvider"]

#: Returns a bearer token (e.g. a JWT), synchronously or as an awaitable.
TokenProvider = Callable[[], "str | Awaitable[str]"]


def _mechanism(value: str) -> str:
    return str(value).strip().upper()


def _extensions(value: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    return tuple(sorted(dict(value).items()))


@attrs.frozen(repr=False)
class SaslConfig:
    """SASL settings for every connection of a client.

    ``mechanism`` is one of ``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512``
    (these need ``username`` and ``password``) or ``OAUTHBEARER`` (needs
    ``token_provider``, called before every authentication, may be async;
    ``oauth_extensions`` are sent with the token).
    """

    mechanism: str = attrs.field(converter=_mechanism)
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    token_provider: TokenProvider | None = attrs.field(default=None, repr=False, eq=False)
    oauth_extensions: tuple[tuple[str, str], ...] = attrs.field(
        default=None, converter=_extensions
    )

    def __attrs_post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ConfigError(
                f"unsupported SASL mechanism {self.mechanism!r}; kclient supports "
                f"{', '.join(MECHANISMS)}"
            )
        if self.mechanism == OAUTHBEARER:
            if self.token_provider is None:
                raise ConfigError("SASL OAUTHBEARER needs a token_provider callback")
            validate_extensions(dict(self.oauth_extensions))
            return
        if not self.username:
            raise ConfigError(f"SASL {self.mechanism} needs a user name")
        if not self.password:
            raise ConfigError(f"SASL {self.mechanism} needs a password (it is empty or missing)")
        if self.oauth_extensions:
            raise ConfigError("oauth_extensions only apply to the OAUTHBEARER mechanism")

    @classmethod
    def from_env(
        cls,
        mechanism: str,
        username: str,
        variable: str,
        environ: Mapping[str, str] | None = None,
    ) -> SaslConfig:
        """Build a config whose password is the value of environment variable ``variable``."""
        env = os.environ if environ is None else environ
        value = env.get(variable)
        if not value:
            raise ConfigError(
                f"environment variable {variable} is not set or empty; export the SASL "
                "password in it (or use a password file)"
            )
        return cls(mechanism=mechanism, username=username, password=value)

    @classmethod
    def from_file(cls, mechanism: str, username: str, path: str | os.PathLike[str]) -> SaslConfig:
        """Build a config whose password is the content of ``path`` (one final newline removed)."""
        text = read_secret_file(path, "SASL password file")
        return cls(mechanism=mechanism, username=username, password=text)

    def create_client(self, token: str | None = None) -> SaslClientMechanism:
        """A fresh client state machine; OAUTHBEARER needs the ``token`` the provider returned."""
        if self.mechanism == PLAIN:
            assert self.username is not None and self.password is not None
            return PlainClient(self.username, self.password)
        if self.mechanism in SCRAM_MECHANISMS:
            assert self.username is not None and self.password is not None
            return ScramClient(self.mechanism, self.username, self.password)
        if token is None:
            raise ConfigError("SASL OAUTHBEARER needs the token returned by token_provider")
        return OAuthBearerClient(token, dict(self.oauth_extensions))

    def __repr__(self) -> str:
        parts = [f"mechanism={self.mechanism!r}"]
        if self.username is not None:
            parts.append(f"username={self.username!r}")
        if self.password is not None:
            parts.append("password='***'")
        if self.token_provider is not None:
            parts.append("token_provider='***'")
        if self.oauth_extensions:
            parts.append(f"oauth_extensions={[key for key, _ in self.oauth_extensions]!r}")
        return f"SaslConfig({', '.join(parts)})"

    __str__ = __repr__
