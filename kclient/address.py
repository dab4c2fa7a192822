"""Broker addresses: parsing ``HOST:PORT`` lists and checking hosts and ports.

One set of rules for every way an address reaches kclient: the application's
``bootstrap_servers``, the command line's ``--bootstrap-server``, and the broker
list a Metadata answer carries (which a hostile or broken broker controls).
Errors name the option the caller used (``option``), so the CLI says
``--bootstrap-server`` and Python says ``bootstrap_servers``.
"""

from __future__ import annotations

from collections.abc import Iterable

from kclient.errors import ConfigError
from kclient.values import port_problem

__all__ = ["DEFAULT_PORT", "address_problem", "format_address", "parse_bootstrap"]

#: Kafka's default listener port, used when an address gives none.
DEFAULT_PORT = 9092
# DNS limits (RFC 1035): 63 bytes per label, 253 for the whole name.
_MAX_LABEL = 63
_MAX_NAME = 253


def address_problem(host: str, port: int) -> str | None:
    """What is wrong with ``host:port`` as an address to connect to, or ``None``.

    Catches what would otherwise fail deep inside the socket layer with an
    error that is not kclient's: control characters (NUL included), over-long
    names or labels, names that IDNA cannot encode, ports outside 1-65535.
    """
    if (problem := port_problem(port)) is not None:
        return problem
    if not host:
        return "the host is empty"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in host):
        return f"the host {host!r} contains control characters"
    if ":" in host:  # an IPv6 literal: the socket layer checks the digits
        return None if all(c in "0123456789abcdefABCDEF:.%" or c.isalnum() for c in host) \
            else f"the host {host!r} is not an IPv6 address"
    if len(host) > _MAX_NAME:
        return f"the host name is {len(host)} characters long; DNS allows {_MAX_NAME}"
    for label in host.rstrip(".").split("."):
        if not label:
            return f"the host {host!r} has an empty label ('..')"
        if len(label) > _MAX_LABEL:
            return f"the host {host!r} has a label of {len(label)} characters; DNS allows 63"
    try:
        host.encode("idna")
    except UnicodeError as exc:
        return f"the host {host!r} cannot be encoded for DNS ({exc})"
    return None


def format_address(host: str, port: int) -> str:
    """``host:port``, with IPv6 literals in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _short(text: str) -> str:
    return text if len(text) <= 60 else f"{text[:57]}..."


def _parse_one(item: str, option: str) -> tuple[str, int]:
    if "://" in item:
        raise ConfigError(f"{option}: {item!r} is not HOST:PORT (leave out any scheme such "
                          "as PLAINTEXT://)")
    host, port_text = item, ""
    if item.startswith("["):
        end = item.find("]")
        if end < 0:
            raise ConfigError(f"{option}: {item!r} has '[' without ']'; write IPv6 "
                              "addresses as [::1]:9092")
        host, rest = item[1:end], item[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise ConfigError(f"{option}: unexpected {rest!r} after [{host}] in {item!r}")
            port_text = rest[1:]
    elif item.count(":") == 1:
        host, port_text = item.split(":")
        if not port_text:
            raise ConfigError(f"{option}: {item!r} has no port after ':'; expected HOST:PORT")
    elif ":" in item:
        raise ConfigError(f"{option}: {item!r} is ambiguous; write IPv6 addresses as "
                          "[::1]:9092")
    if "/" in host:
        raise ConfigError(f"{option}: {item!r} is not HOST:PORT (leave out any scheme such "
                          "as PLAINTEXT://)")
    if not host:
        raise ConfigError(f"{option}: {item!r} has no host; expected HOST:PORT")
    port = DEFAULT_PORT
    if port_text:
        # At most 5 significant digits before int(): Python refuses to convert 4,301 or more.
        if (not (port_text.isascii() and port_text.isdigit()) or len(port_text.lstrip("0")) > 5
                or not 0 < int(port_text) < 65536):
            raise ConfigError(f"{option}: port {_short(port_text)!r} in {_short(item)!r} is not "
                              "a number from 1 to 65535")
        port = int(port_text)
    problem = address_problem(host, port)
    if problem is not None:
        raise ConfigError(f"{option}: {item!r}: {problem}")
    return host, port


def parse_bootstrap(servers: str | Iterable[str], option: str = "bootstrap_servers"
                    ) -> list[tuple[str, int]]:
    """``"h1:9092,h2"`` (or a list of such strings) as ``[(host, port), ...]``.

    The port defaults to 9092; IPv6 literals are written ``[::1]:9092``;
    duplicates are dropped, order is kept.  Raises
    :class:`~kclient.errors.ConfigError` naming ``option`` and the bad entry.
    """
    if not isinstance(servers, str | Iterable):
        raise ConfigError(f"{option}: expected 'HOST:PORT' text or a list of them, got "
                          f"{servers!r}")
    values = [servers] if isinstance(servers, str) else list(servers)
    result: list[tuple[str, int]] = []
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"{option}: expected 'HOST:PORT' text, got {value!r}")
        for raw in value.split(","):
            item = raw.strip()
            if item:
                address = _parse_one(item, option)
                if address not in result:
                    result.append(address)
    if not result:
        raise ConfigError(f"{option} is empty; give at least one HOST:PORT "
                          "(e.g. localhost:9092)")
    return result
