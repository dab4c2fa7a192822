"""TLS settings for broker connections.

Verification is on by default: the broker's certificate must chain to a trusted
CA (the system's, or ``ca_file``) and match the host name (or ``server_name``).
"""

from __future__ import annotations

import ssl
from pathlib import Path

import attrs

from kclient.errors import ConfigError

__all__ = ["TlsConfig", "TlsOption", "client_ssl_context"]


def _optional_path(value: str | Path | None) -> str | None:
    return None if value is None else str(value)


@attrs.frozen(repr=False)
class TlsConfig:
    """How to secure broker connections with TLS.

    ``ca_file`` is a PEM bundle of CAs to trust (the system store when omitted);
    ``cert_file``/``key_file`` a client certificate for mutual TLS (``key_password``
    if the key is encrypted); ``server_name`` the name to verify and send in SNI
    when it differs from the host connected to; ``verify=False`` turns off both
    certificate and host name checks (only for tests against throwaway brokers).
    """

    ca_file: str | None = attrs.field(default=None, converter=_optional_path)
    cert_file: str | None = attrs.field(default=None, converter=_optional_path)
    key_file: str | None = attrs.field(default=None, converter=_optional_path)
    key_password: str | None = None
    server_name: str | None = None
    verify: bool = True

    def __repr__(self) -> str:
        hidden = "<hidden>" if self.key_password is not None else None
        return (f"TlsConfig(ca_file={self.ca_file!r}, cert_file={self.cert_file!r}, "
                f"key_file={self.key_file!r}, key_password={hidden!r}, "
                f"server_name={self.server_name!r}, verify={self.verify!r})")

    def context(self) -> ssl.SSLContext:
        """A client :class:`ssl.SSLContext` built from these settings."""
        try:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"TLS: cannot load CA file {self.ca_file!r}: {exc}; check the "
                              "path and that it holds PEM certificates") from None
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file is not None:
            try:
                ctx.load_cert_chain(self.cert_file, self.key_file, self.key_password)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"TLS: cannot load client certificate {self.cert_file!r} "
                                  f"(key {self.key_file!r}): {type(exc).__name__}; check the "
                                  "files and the key password") from None
        elif self.key_file is not None:
            raise ConfigError("TLS: key_file given without cert_file; give both for a client "
                              "certificate")
        return ctx


TlsOption = TlsConfig | ssl.SSLContext | bool | None


def client_ssl_context(tls: TlsOption) -> tuple[ssl.SSLContext | None, str | None]:
    """The SSL context and server name override for ``tls``.

    ``None``/``False``: plaintext; ``True``: the system's default verification;
    a :class:`TlsConfig` or a ready :class:`ssl.SSLContext` as given.
    """
    if tls is None or tls is False:
        return None, None
    if tls is True:
        return ssl.create_default_context(), None
    if isinstance(tls, ssl.SSLContext):
        return tls, None
    if isinstance(tls, TlsConfig):
        return tls.context(), tls.server_name
    raise ConfigError(f"tls must be a TlsConfig, an ssl.SSLContext, True or None, "
                      f"not {type(tls).__name__}")
