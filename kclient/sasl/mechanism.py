"""The shape shared by every SASL mechanism, client side and server side.

A mechanism is a small state machine fed with the bytes the peer sent and
returning the bytes to send back.  It never touches a socket: the caller
(:mod:`kclient.net.sasl` for clients, :mod:`kclient.emulator.sasl` for the
emulated broker) moves the bytes, either inside SaslAuthenticate requests or as
raw size-prefixed frames (the SaslHandshake v0 flow).

Mechanism objects hold secrets (passwords, derived keys, tokens); their
``repr`` shows the mechanism name and state only.
"""

from __future__ import annotations

import abc

__all__ = [
    "MECHANISMS",
    "OAUTHBEARER",
    "PLAIN",
    "SCRAM_MECHANISMS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "SaslClientMechanism",
    "SaslServerMechanism",
]

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"

#: SCRAM mechanism name -> hashlib algorithm name.
SCRAM_MECHANISMS: dict[str, str] = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}

#: Every mechanism kclient implements on the client side, in the order shown to users.
MECHANISMS: tuple[str, ...] = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)


class _Exchange:
    """The state every mechanism keeps: ``complete`` once it reaches "complete"."""

    _state: str = "initial"

    @property
    def complete(self) -> bool:
        """True once the exchange has succeeded."""
        return self._state == "complete"


class SaslClientMechanism(_Exchange, abc.ABC):
    """Client half of one SASL exchange.

    Call :meth:`initial_response` once, send what it returns, then give every
    server message to :meth:`evaluate_challenge`.  That returns the next message
    to send, or ``None`` when the client has nothing more to say; at that point
    :attr:`complete` is true.  A server message that breaks the mechanism's rules
    raises :class:`kclient.errors.AuthenticationError` (the message never
    contains a secret).
    """

    #: The mechanism name as sent in SaslHandshakeRequest (``"PLAIN"``, ...).
    mechanism: str

    @abc.abstractmethod
    def initial_response(self) -> bytes:
        """Return the first client message."""

    @abc.abstractmethod
    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """Take a server message; return the reply, or ``None`` when the exchange is done."""

    _failure: str | None = None

    @property
    def failure_detail(self) -> str | None:
        """What the server said went wrong, when the mechanism carries it (else ``None``)."""
        return self._failure

    def __repr__(self) -> str:
        state = "complete" if self.complete else "in progress"
        return f"<{type(self).__name__} {self.mechanism} {state}>"


class SaslServerMechanism(_Exchange, abc.ABC):
    """Server half of one SASL exchange (used by the emulated broker).

    :meth:`evaluate_response` takes each client message and returns the
    challenge to send back (possibly empty).  A wrong credential or a malformed
    message raises :class:`kclient.errors.AuthenticationError` whose text is fit
    to send to the client.  :attr:`authorization_id` names the authenticated
    user once :attr:`complete` is true.
    """

    mechanism: str

    @abc.abstractmethod
    def evaluate_response(self, response: bytes) -> bytes:
        """Take a client message; return the server's answer."""

    #: Set by the subclass once it knows who the client claims to be.
    _user: str | None = None

    @property
    def authorization_id(self) -> str | None:
        """The authenticated user, or ``None`` before success."""
        return self._user if self.complete else None

    def __repr__(self) -> str:
        state = "complete" if self.complete else "in progress"
        return f"<{type(self).__name__} {self.mechanism} {state}>"
