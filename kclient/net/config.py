"""The configuration users already have: librdkafka / Java client keys to Client options.

:func:`client_options_from_config` turns a mapping such as
``{"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL",
"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": "..."}`` into keyword
arguments for :class:`kclient.Client` (``Client.from_config(mapping)`` does both).
:func:`read_properties` reads a Java ``.properties`` file, the format Kafka's own
tools take with ``--command-config``.

An application's whole configuration is welcome: keys kclient does not use
(``acks``, ``group.id``, ``linger.ms``...) are ignored with one debug line on
the ``kclient.net.config`` logger; ``unknown="warn"`` emits an
:class:`UnknownConfigWarning` instead (the command line uses that, so a typo in a
properties file shows), and ``unknown="error"`` raises
:class:`~kclient.errors.ConfigError` naming them.  Secret values
(``sasl.password``, ``sasl.jaas.config``, ``ssl.key.password``) never appear in
any message.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import re
import ssl
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_bytes
from kclient._secret import check_key_password, read_private_text, without_panics
from kclient._version import install_hint
from kclient.address import parse_bootstrap
from kclient.errors import ConfigError
from kclient.net.tls import TlsConfig
from kclient.sasl import SaslConfig

__all__ = [
    "KNOWN_KEYS",
    "MAX_MILLIS",
    "SECRET_KEYS",
    "STORE_KEYS",
    "UnknownConfigWarning",
    "client_options_from_config",
    "merge_config",
    "parse_jaas",
    "parse_properties",
    "read_properties",
]

log = logging.getLogger(__name__)

#: Keys whose values are secrets: never shown.
SECRET_KEYS = frozenset({"sasl.password", "sasl.jaas.config", "ssl.key.password",
                         "ssl.truststore.password", "ssl.keystore.password"})
#: The Java clients' key and trust stores (``ssl.truststore.*`` / ``ssl.keystore.*``).
#: PKCS12 stores are read with the ``cryptography`` package (the ``pkcs12`` extra);
#: JKS stores are refused with the commands that export them to PKCS12 or PEM.
STORE_KEYS = ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
              "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type")
#: Every key :func:`client_options_from_config` understands.
KNOWN_KEYS = frozenset({
    "bootstrap.servers", "client.id", "security.protocol",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.jaas.config",
    "request.timeout.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    *STORE_KEYS,
})
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_JAAS_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256",
                                                                 "SCRAM-SHA-512"),
}
_BLANKS = re.compile(r"\s*")
# A quoted value is written as an unrolled loop (runs of plain characters between
# escapes): the same language as (?:[^"\\]|\\.)*, one step per run, not per character.
_JAAS_OPTION = re.compile(r'\s*([A-Za-z_][\w.]*)\s*=\s*(?:"([^"\\]*(?:\\.[^"\\]*)*)"|([^\s;"]+))')


class UnknownConfigWarning(UserWarning):
    """Configuration keys that kclient does not use (``unknown="warn"``)."""


def _shown(key: str, value: str) -> str:
    return "<hidden>" if key in SECRET_KEYS else repr(value)


#: The largest value of a ``*.ms`` key: Kafka's Java clients and librdkafka read
#: them as 32-bit integers (2147483647 ms, about 24.8 days).
MAX_MILLIS = 2**31 - 1
_WHOLE = re.compile(r"[+-]?[0-9]+")


def _millis(config: Mapping[str, str], key: str) -> float | None:
    text = config.get(key)
    if text is None:
        return None
    digits = str(text).strip()
    # ASCII digits only: Python's int() also takes "1_000" and other scripts' digits.
    if _WHOLE.fullmatch(digits) is None:
        raise ConfigError(f"{key}: expected a whole number of milliseconds, got "
                          f"{_short(_shown(key, text))}")
    if len(digits.lstrip("+-0")) > len(str(MAX_MILLIS)) or int(digits) > MAX_MILLIS:
        raise ConfigError(f"{key}: {_short(digits)} ms is out of range: at most {MAX_MILLIS} "
                          "ms (a 32-bit number, as in Kafka's clients)")
    value = int(digits)
    if value <= 0:
        raise ConfigError(f"{key}: must be more than 0 ms, got {value}")
    return value / 1000.0


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:37]}..."


def _skip_blanks(text: str, position: int) -> int:
    found = _BLANKS.match(text, position)
    return found.end() if found is not None else position


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Split a ``sasl.jaas.config`` line into its login module and its options.

    Only the structure is reported in errors, never the values (they hold the
    password).
    """
    body = text.strip()
    module, _, rest = body.partition(" ")
    rest = rest.strip()
    flag, _, rest = rest.partition(" ")
    if not module or flag not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError("sasl.jaas.config: expected '<LoginModule class> required "
                          "username=\"...\" password=\"...\";' (value not shown)")
    options: dict[str, str] = {}
    rest = rest.strip()
    end = len(rest)
    position = 0
    # Linear: each step moves past what it read (no slicing of the rest per option).
    while True:
        position = _skip_blanks(rest, position)
        if position == end or (rest[position] == ";" and _skip_blanks(rest, position + 1)
                               == end):
            break
        match = _JAAS_OPTION.match(rest, position)
        if match is None:
            raise ConfigError("sasl.jaas.config: cannot read the options after the login "
                              "module; write them as name=\"value\" (value not shown)")
        quoted, bare = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        options[match.group(1)] = value
        position = match.end()
    return module, options


def _sasl(config: Mapping[str, str], protocol: str) -> Any:
    mechanism = config.get("sasl.mechanism") or config.get("sasl.mechanisms")
    username = config.get("sasl.username")
    password = config.get("sasl.password")
    jaas = config.get("sasl.jaas.config")
    wants = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
    given = [k for k in ("sasl.mechanism", "sasl.mechanisms", "sasl.username",
                         "sasl.password", "sasl.jaas.config") if k in config]
    if not wants:
        if given:
            raise ConfigError(f"{', '.join(given)} given but security.protocol is {protocol}; "
                              "set security.protocol=SASL_PLAINTEXT or SASL_SSL")
        return None
    mechanism = (mechanism or "GSSAPI").strip().upper()  # Kafka's default mechanism
    if jaas is not None:
        module, options = parse_jaas(jaas)
        allowed = _JAAS_MODULES.get(module)
        if allowed is None:
            raise ConfigError(f"sasl.jaas.config: login module {module} is not supported; "
                              "kclient reads PlainLoginModule and ScramLoginModule lines")
        if mechanism not in allowed:
            raise ConfigError(f"sasl.jaas.config uses {module.rsplit('.', 1)[-1]} but "
                              f"sasl.mechanism is {mechanism}; use one of {', '.join(allowed)}")
        username = username or options.get("username")
        password = password or options.get("password")
    if mechanism == "GSSAPI":
        raise ConfigError(f"security.protocol={protocol} with sasl.mechanism GSSAPI (Kafka's "
                          "default) is not supported; set sasl.mechanism to PLAIN, "
                          "SCRAM-SHA-256 or SCRAM-SHA-512")
    if not username or not password:
        missing = "sasl.username" if not username else "sasl.password"
        raise ConfigError(f"sasl.mechanism {mechanism} needs {missing} (or sasl.jaas.config "
                          "with username and password)")
    return SaslConfig(mechanism=mechanism, username=username, password=password)


_TLS_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
             "ssl.key.password", "ssl.endpoint.identification.algorithm", *STORE_KEYS)
#: How a key store file starts: JKS (0xFEEDFEED), JCEKS (0xCECECECE).
_JAVA_STORES = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}


def _tls(config: Mapping[str, str], protocol: str) -> Any:
    given = [k for k in _TLS_KEYS if k in config]
    if protocol not in ("SSL", "SASL_SSL"):
        if given:
            raise ConfigError(f"{', '.join(given)} given but security.protocol is {protocol}; "
                              "set security.protocol=SSL or SASL_SSL")
        return None
    for key in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
                "ssl.truststore.location", "ssl.keystore.location"):
        # No file system takes a NUL in a path; Python's calls raise ValueError on it.
        if "\0" in config.get(key, ""):
            raise ConfigError(f"{key}: the path contains a NUL character; give the path of "
                              "the file")
    for pem, store in (("ssl.ca.location", "ssl.truststore.location"),
                       ("ssl.certificate.location", "ssl.keystore.location")):
        if config.get(pem) and config.get(store):
            raise ConfigError(f"{pem} and {store} both given; give one of them")
    algorithm = config.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None and algorithm.strip().lower() not in ("", "none", "https"):
        raise ConfigError(f"ssl.endpoint.identification.algorithm: expected https or none, "
                          f"got {algorithm!r}")
    check_host = algorithm is None or algorithm.strip().lower() == "https"
    truststore = config.get("ssl.truststore.location") or None
    keystore = config.get("ssl.keystore.location") or None
    if truststore is None and keystore is None:
        tls = TlsConfig(ca_file=config.get("ssl.ca.location"),
                        cert_file=config.get("ssl.certificate.location"),
                        key_file=config.get("ssl.key.location"),
                        key_password=config.get("ssl.key.password"))
        if check_host:
            return tls
        # Certificates are still verified; only the host name check is off.
        context: ssl.SSLContext = tls.context()
        context.check_hostname = False
        return context
    with contextlib.ExitStack() as stack:
        ca_file = config.get("ssl.ca.location")
        cert_file = config.get("ssl.certificate.location")
        key_file = config.get("ssl.key.location")
        key_password = config.get("ssl.key.password")
        if truststore is not None:
            certificates, _ = _read_store(config, "truststore")
            if not certificates:
                raise ConfigError(f"ssl.truststore.location: {truststore} holds no "
                                  "certificate to trust")
            ca_file = stack.enter_context(_private_file(b"".join(certificates)))
        if keystore is not None:
            certificates, private_key = _read_store(config, "keystore")
            if private_key is None or not certificates:
                raise ConfigError(f"ssl.keystore.location: {keystore} holds no private key "
                                  "with its certificate; a key store holds the client's own")
            cert_file = stack.enter_context(
                _private_file(private_key + b"".join(certificates)))
            key_file, key_password = None, None
        # Built now, while the decoded stores exist only in memory-backed files.
        context = TlsConfig(ca_file=ca_file, cert_file=cert_file, key_file=key_file,
                            key_password=key_password).context()
    context.check_hostname = check_host
    return context


def _read_store(config: Mapping[str, str], kind: str) -> tuple[list[bytes], bytes | None]:
    """The PEM certificates and (unencrypted, PEM) private key of a PKCS12 store.

    ``kind`` is ``truststore`` or ``keystore``; ``ssl.<kind>.type`` may say
    PKCS12 (JKS is refused with the commands that convert it), else the file's
    first bytes tell.
    """
    option = f"ssl.{kind}.location"
    path = config[option]
    data = read_input_bytes(path, option, limit=MAX_SETTINGS_INPUT)
    declared = config.get(f"ssl.{kind}.type", "").strip().upper()
    found = _JAVA_STORES.get(data[:4])
    if found is not None or declared in ("JKS", "JCEKS"):
        raise ConfigError(_java_store_advice(option, path, found or declared, kind))
    if declared not in ("", "PKCS12", "P12"):
        raise ConfigError(f"ssl.{kind}.type: expected PKCS12 or JKS, got "
                          f"{config[f'ssl.{kind}.type']!r}")
    try:
        pkcs12 = importlib.import_module("cryptography.hazmat.primitives.serialization.pkcs12")
        serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
    except ImportError:
        raise ConfigError(f"{option}: reading a PKCS12 store needs the cryptography package: "
                          f"{install_hint('pkcs12')}; or give PEM files (ssl.ca.location, "
                          "ssl.certificate.location, ssl.key.location)") from None
    password = config.get(f"ssl.{kind}.password")
    check_key_password(password, f"ssl.{kind}.password")

    def unreadable() -> ConfigError:
        return ConfigError(f"{option}: cannot read {path} as a PKCS12 store: wrong "
                           f"ssl.{kind}.password, or not a PKCS12 file")

    def decoded() -> tuple[list[bytes], bytes | None]:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
        pem = serialization.Encoding.PEM
        certificates = [entry.certificate.public_bytes(pem) for entry in (
            [store.cert] if store.cert is not None else []) + list(store.additional_certs)]
        key = None if store.key is None else store.key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        return certificates, key

    try:
        return without_panics(decoded, unreadable)
    except (ValueError, TypeError):
        raise unreadable() from None


def _java_store_advice(option: str, path: str, kind_found: str, kind: str) -> str:
    """Why a JKS store cannot be used, and the commands that make it usable."""
    pem_step = ("openssl pkcs12 -in store.p12 -nokeys -out ca.pem, then "
                "ssl.ca.location=ca.pem" if kind == "truststore" else
                "openssl pkcs12 -in store.p12 -clcerts -nokeys -out client.pem and "
                "openssl pkcs12 -in store.p12 -nocerts -nodes -out client.key, then "
                "ssl.certificate.location=client.pem and ssl.key.location=client.key")
    return (f"{option}: {path} is a {kind_found} key store, which only Java reads; export it "
            f"to PKCS12 with keytool -importkeystore -srckeystore {path} -destkeystore "
            f"store.p12 -deststoretype PKCS12 and set {option}=store.p12 with "
            f"ssl.{kind}.type=PKCS12 ({install_hint('pkcs12')}), or on to PEM: {pem_step}")


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A path holding ``data`` for :mod:`ssl` to load, readable by this process only.

    An anonymous in-memory file (Linux ``memfd_create``, reached through
    ``/proc/self/fd``) where there is one, else a file in a private temporary
    directory; either is gone when the block ends.
    """
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None and os.path.isdir("/proc/self/fd"):
        fd = memfd("kclient-store", getattr(os, "MFD_CLOEXEC", 0))
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="kclient-") as folder:
        path = os.path.join(folder, "store.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        yield path


def _settings(config: object) -> dict[str, str]:
    """The mapping's keys and values as stripped text; anything else is a ConfigError."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"a client configuration is a mapping of librdkafka / Java keys such "
                          f"as {{'bootstrap.servers': 'broker1:9092'}}, got "
                          f"{type(config).__name__}")
    values: dict[str, str] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            raise ConfigError(f"configuration keys are text such as 'bootstrap.servers', got "
                              f"{_short(repr(key))} ({type(key).__name__})")
        name = key.strip()
        if isinstance(value, bool):
            values[name] = str(value).lower()
        elif isinstance(value, (str, int, float)):
            values[name] = str(value).strip()
        else:
            shown = "<hidden>" if name in SECRET_KEYS else _short(repr(value))
            raise ConfigError(f"{name}: expected text or a number, got {shown} "
                              f"({type(value).__name__})")
    return values


def client_options_from_config(
    config: Mapping[str, Any], *, unknown: Literal["ignore", "warn", "error"] = "ignore",
    require_bootstrap: bool = True,
) -> dict[str, Any]:
    """Keyword arguments for :class:`kclient.Client` from librdkafka / Java client keys.

    Understood keys: ``bootstrap.servers``, ``client.id``, ``security.protocol``,
    ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``,
    ``ssl.key.password``, ``ssl.endpoint.identification.algorithm`` (``none``
    or empty turns off only the host name check), the Java clients'
    ``ssl.truststore.location/password/type`` and ``ssl.keystore.location/
    password/type`` (PKCS12 stores, read with the ``cryptography`` package of the
    ``pkcs12`` extra; a JKS store is a :class:`ConfigError` giving the ``keytool``
    and ``openssl`` commands that convert it), ``sasl.mechanism`` (or
    librdkafka's ``sasl.mechanisms``), ``sasl.username``, ``sasl.password``,
    ``sasl.jaas.config`` (PlainLoginModule / ScramLoginModule: user name and
    password are read from it), ``request.timeout.ms``, ``reconnect.backoff.ms``
    and ``reconnect.backoff.max.ms``.  Other keys (an application's ``acks``,
    ``group.id``, ``linger.ms``...) are ignored with one debug line on the
    ``kclient.net.config`` logger; ``unknown="warn"`` makes that an
    :class:`UnknownConfigWarning` and ``unknown="error"`` a :class:`ConfigError`
    naming them.
    ``bootstrap.servers`` is returned as ``bootstrap_servers``; without it a
    :class:`ConfigError` says to add it, unless ``require_bootstrap=False``
    (the command line, whose ``--bootstrap-server`` may give the brokers).
    ``config`` must be a mapping of text keys to text, numbers or booleans.
    """
    if unknown not in ("ignore", "warn", "error"):
        raise ConfigError(f"unknown must be 'ignore', 'warn' or 'error'; got {unknown!r}")
    values = _settings(config)
    extra = sorted(k for k in values if k not in KNOWN_KEYS)
    if extra:
        message = (f"configuration keys kclient does not use: {', '.join(extra)} (kclient "
                   f"reads {', '.join(sorted(KNOWN_KEYS))})")
        if unknown == "error":
            raise ConfigError(message + "; remove them, or leave unknown at its default "
                              "('ignore') to pass a whole application configuration")
        if unknown == "warn":
            warnings.warn(message, UnknownConfigWarning, stacklevel=2)
        else:
            log.debug("%s; ignored", message)
    protocol = values.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise ConfigError(f"security.protocol: expected one of {', '.join(_PROTOCOLS)}, got "
                          f"{values['security.protocol']!r}")
    options: dict[str, Any] = {}
    if values.get("bootstrap.servers"):
        parse_bootstrap(values["bootstrap.servers"], option="bootstrap.servers")
        options["bootstrap_servers"] = values["bootstrap.servers"]
    if values.get("client.id"):
        options["client_id"] = values["client.id"]
    tls = _tls(values, protocol)
    if tls is not None:
        options["tls"] = tls
    sasl = _sasl(values, protocol)
    if sasl is not None:
        options["sasl"] = sasl
    for key, option in (("request.timeout.ms", "request_timeout"),
                        ("reconnect.backoff.ms", "reconnect_backoff"),
                        ("reconnect.backoff.max.ms", "reconnect_backoff_max")):
        seconds = _millis(values, key)
        if seconds is not None:
            options[option] = seconds
    if require_bootstrap and "bootstrap_servers" not in options:
        raise ConfigError("bootstrap.servers is missing or empty; add the brokers to start "
                          "from, e.g. {'bootstrap.servers': 'broker1:9092,broker2:9092'}")
    return options


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` or ``key: value`` lines.

    ``#`` and ``!`` start comment lines; a line ending in an odd number of
    backslashes continues on the next (leading blanks of the next line are
    dropped); ``\\t``, ``\\n``, ``\\\\`` and other escapes in values are resolved.
    A line with neither ``=`` nor ``:`` is a key separated by blanks, as in Java.
    """
    out: dict[str, str] = {}
    logical: list[str] = []
    start = 0
    lines = text.splitlines()

    def flush(number: int) -> None:
        line = "".join(logical).lstrip()
        logical.clear()
        if not line:
            return
        match = re.match(r"((?:[^\\=:\s]|\\.)+)\s*[=:\s]\s*(.*)$", line, re.DOTALL)
        if match is None:
            key, value = line, ""
        else:
            key, value = match.group(1), match.group(2)
        key = _unescape(key)
        if not key:
            raise ConfigError(f"{source}:{number}: a line with a value but no key")
        out[key] = _unescape(value)

    for index, raw in enumerate(lines, start=1):
        line = raw if logical else raw.lstrip()
        if not logical:
            start = index
            if not line or line[0] in "#!":
                continue
        else:
            line = line.lstrip()
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        flush(start)
    if logical:
        flush(start)
    return out


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a Java ``.properties`` file (UTF-8) with :func:`parse_properties`."""
    return parse_properties(read_private_text(path, "properties file"), str(Path(path)))


def merge_config(*layers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Later layers override earlier ones (a properties file, then ``-X`` pairs)."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(dict(layer))
    return merged
