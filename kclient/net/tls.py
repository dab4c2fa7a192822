"""TLS settings for broker connections.

Verification is on by default: the broker's certificate must chain to a trusted
CA (the system's, or ``ca_file``) and match the host name (or ``server_name``).
"""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import attrs

from kclient._inputfile import MAX_SETTINGS_INPUT, opened_input_path
from kclient._secret import check_key_password, without_panics
from kclient.errors import ConfigError
from kclient.options import Option, Text

__all__ = ["PreparedTls", "TlsConfig", "TlsOption", "client_ssl_context",
           "load_client_certificate", "prepare_tls"]


def _optional_path(value: str | Path | None) -> str | None:
    return None if value is None else str(value)


class _PasswordNeeded(Exception):
    pass


def _opened(path: str, option: str) -> contextlib.AbstractContextManager[str]:
    """``path`` opened under kclient's input rule, for :mod:`ssl` to load (see
    :func:`~kclient._inputfile.opened_input_path`); refusals name ``option``."""
    return opened_input_path(path, Text(Option(option)), limit=MAX_SETTINGS_INPUT)


def load_client_certificate(context: ssl.SSLContext, cert_file: str, key_file: str | None,
                            password: str | None, *, password_option: str | Text) -> None:
    """Load a client certificate and its key into ``context``, never prompting.

    OpenSSL asks on the terminal for the password of an encrypted key unless it is
    given a password callback, and a client library must never block on that: a
    callback is always passed.  Without ``password`` an encrypted key is a
    :class:`ConfigError` saying to give one (``password_option`` names how); every
    other failure (missing file, not PEM, wrong password, key not matching the
    certificate) is a :class:`ConfigError` naming the files.
    """
    asked = False

    def give_password() -> str:
        nonlocal asked
        asked = True
        if password is None:
            raise _PasswordNeeded
        return password

    key_text = key_file if key_file is not None else cert_file
    check_key_password(password, password_option)
    try:
        with contextlib.ExitStack() as files:
            # Under kclient's input rule, as the CA file (TlsConfig.context).
            cert_path = files.enter_context(_opened(cert_file, "TlsConfig.cert_file"))
            key_path = None if key_file is None else files.enter_context(
                _opened(key_file, "TlsConfig.key_file"))
            without_panics(lambda: context.load_cert_chain(cert_path, key_path, give_password),
                           lambda: ConfigError(f"TLS: cannot load client certificate "
                                               f"{cert_file} (key {key_text}): the TLS library "
                                               "failed"))
    except _PasswordNeeded:
        raise ConfigError(Text(f"TLS: the private key in {key_text} is encrypted; give its "
                               "password with ", password_option)) from None
    except ValueError as exc:  # a password over OpenSSL's 1,024-byte limit
        raise ConfigError(f"TLS: cannot use the password for the key in {key_text}: "
                          f"{exc}") from None
    except OSError as exc:  # ssl.SSLError is an OSError
        if asked:
            reason = "wrong password for the encrypted key, or the key is damaged"
        else:
            reason = (getattr(exc, "reason", None) or exc.strerror
                      or type(exc).__name__).replace("_", " ").lower()
        raise ConfigError(f"TLS: cannot load client certificate {cert_file} (key "
                          f"{key_text}): {reason}; check the files are PEM, that the key "
                          "belongs to the certificate, and the key password") from None


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
        """A client :class:`ssl.SSLContext` built from these settings.

        Each call builds a new context (reading the files again); a client builds
        one and shares it (:func:`prepare_tls`).  Errors name the options they
        concern (:attr:`~kclient.KClientError.options`).
        """
        try:
            with contextlib.ExitStack() as files:
                # Each file under kclient's input rule (a FIFO or device is refused,
                # never opened): ssl reads the very file that was checked.
                ca_file = None if self.ca_file is None else files.enter_context(
                    _opened(self.ca_file, "TlsConfig.ca_file"))
                ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ConfigError(Text(f"TLS: cannot load the CA file {self.ca_file} (",
                                   Option("TlsConfig.ca_file"), f"): {reason}; check the "
                                   "path and that it holds PEM certificates")) from None
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file is not None:
            load_client_certificate(ctx, self.cert_file, self.key_file, self.key_password,
                                    password_option=Text(Option("TlsConfig.key_password")))
        elif self.key_file is not None:
            raise ConfigError(Text("TLS: ", Option("TlsConfig.key_file"), " given without ",
                                   Option("TlsConfig.cert_file"), "; give both for a "
                                   "client certificate"))
        return ctx


@attrs.frozen
class PreparedTls:
    """A TLS setup built once and shared by every connection of a client.

    ``context`` is the :class:`ssl.SSLContext` (its CA bundle and client
    certificate already loaded), ``server_name`` the name to verify and send in
    SNI instead of the host connected to (``None``: the host).
    """

    context: ssl.SSLContext
    server_name: str | None = None


TlsOption = TlsConfig | PreparedTls | ssl.SSLContext | bool | None


def prepare_tls(tls: TlsOption) -> PreparedTls | None:
    """Build the TLS setup for ``tls`` once; ``None`` for plaintext.

    ``None``/``False``: plaintext; ``True``: the system's default verification;
    a :class:`TlsConfig` is built (a :class:`ConfigError` if its files are
    unusable, naming the options); a ready :class:`ssl.SSLContext`
    or :class:`PreparedTls` is used as given.
    """
    if tls is None or tls is False:
        return None
    if isinstance(tls, PreparedTls):
        return tls
    if tls is True:
        return PreparedTls(ssl.create_default_context())
    if isinstance(tls, ssl.SSLContext):
        return PreparedTls(tls)
    if isinstance(tls, TlsConfig):
        return PreparedTls(tls.context(), tls.server_name)
    raise ConfigError(Text(Option("tls"), " must be a TlsConfig, an ssl.SSLContext, "
                           f"True or None, not {type(tls).__name__}"))


def client_ssl_context(tls: TlsOption) -> tuple[ssl.SSLContext | None, str | None]:
    """The SSL context and server name override for ``tls`` (see :func:`prepare_tls`)."""
    prepared = prepare_tls(tls)
    if prepared is None:
        return None, None
    return prepared.context, prepared.server_name
