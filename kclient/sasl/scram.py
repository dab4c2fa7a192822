"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), client and server.

Kafka's flavour of SCRAM: no channel binding (GS2 header ``n,,``), the
password is used as its UTF-8 bytes without SASLprep (Kafka's brokers store
credentials computed that way, so applying SASLprep would break non-ASCII
passwords), iteration counts of at least 4096.

Message flow::

    client-first   n,,n=<saslname>,r=<client nonce>
    server-first   r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 client proof>
    server-final   v=<base64 server signature>   (or e=<error>)

The client checks the server signature with :func:`hmac.compare_digest`
before it reports success, so a server that does not know the password (or
a tampered answer) fails the exchange.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping

import attrs

from kclient.errors import AuthenticationError, ConfigError
from kclient.sasl.mechanism import SCRAM_MECHANISMS, SaslClientMechanism, SaslServerMechanism

__all__ = [
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "ScramClient",
    "ScramCredential",
    "ScramServer",
    "escape_saslname",
    "unescape_saslname",
]

#: Kafka's lower bound for SCRAM iterations; a server asking for fewer is refused.
MIN_ITERATIONS = 4096
#: Upper bound the client accepts, so a hostile server cannot make it hash for minutes:
#: Kafka's own, as its controller refuses SCRAM credentials with more iterations
#: (ScramControlManager.MAX_ITERATIONS).
MAX_ITERATIONS = 16384
#: Iterations used when the emulator derives credentials.
DEFAULT_ITERATIONS = 4096

# The GS2 header kclient sends: no channel binding, no authorization identity.
_GS2_HEADER = "n,,"


def escape_saslname(name: str) -> str:
    """Escape a user name for a SCRAM message: ``=`` -> ``=3D``, ``,`` -> ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_saslname(value: str) -> str:
    """Undo :func:`escape_saslname`; any other ``=`` sequence is an error (RFC 5802 §5.1)."""
    out: list[str] = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == "=":
            code = value[index + 1 : index + 3]
            if code == "3D":
                out.append("=")
            elif code == "2C":
                out.append(",")
            else:
                raise AuthenticationError(
                    f"SCRAM user name has an invalid escape at character {index}; "
                    "only '=3D' and '=2C' are allowed"
                )
            index += 3
        elif char == ",":
            raise AuthenticationError("SCRAM user name contains an unescaped ','")
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _hash_name(mechanism: str) -> str:
    try:
        return SCRAM_MECHANISMS[mechanism]
    except KeyError:
        known = ", ".join(SCRAM_MECHANISMS)
        raise ConfigError(f"unknown SCRAM mechanism {mechanism!r}; use one of {known}") from None


def _hmac(algorithm: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, algorithm).digest()


def _salted_password(algorithm: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(algorithm, password.encode("utf-8"), salt, iterations)


def _xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise AuthenticationError(f"SCRAM {what} is not valid base64") from None


def _parse_attributes(message: str, what: str) -> list[tuple[str, str]]:
    """Split ``a=1,b=2`` into pairs; every part must be ``<letter>=<value>``."""
    pairs: list[tuple[str, str]] = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise AuthenticationError(
                f"SCRAM {what} is malformed: expected 'x=value' attributes separated by ','"
            )
        pairs.append((part[0], part[2:]))
    return pairs


def _decode_text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationError(f"SCRAM {what} is not valid UTF-8") from None


def _make_nonce() -> str:
    # URL-safe base64 letters never include ',' so the nonce is a valid SCRAM value.
    return secrets.token_urlsafe(24)


@attrs.frozen(repr=False)
class ScramCredential:
    """What a SCRAM server stores for one user (never the password itself)."""

    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_password(
        cls,
        mechanism: str,
        password: str,
        salt: bytes | None = None,
        iterations: int = DEFAULT_ITERATIONS,
    ) -> ScramCredential:
        """Derive the stored key and server key from a password (RFC 5802 §3)."""
        algorithm = _hash_name(mechanism)
        if iterations < MIN_ITERATIONS:
            raise ConfigError(
                f"{mechanism} needs at least {MIN_ITERATIONS} iterations, got {iterations}"
            )
        if salt is None:
            salt = secrets.token_bytes(16)
        salted = _salted_password(algorithm, password, salt, iterations)
        client_key = _hmac(algorithm, salted, b"Client Key")
        return cls(
            mechanism=mechanism,
            salt=salt,
            iterations=iterations,
            stored_key=hashlib.new(algorithm, client_key).digest(),
            server_key=_hmac(algorithm, salted, b"Server Key"),
        )

    def __repr__(self) -> str:
        return f"ScramCredential({self.mechanism}, iterations={self.iterations}, keys=***)"


class ScramClient(SaslClientMechanism):
    """Client side of SCRAM-SHA-256 / SCRAM-SHA-512.

    ``nonce`` is for tests that replay a published exchange; leave it ``None``
    to use a fresh random nonce.  ``hash_name`` overrides the hash (tests use
    ``"sha1"`` to replay RFC 5802's example); Kafka only offers SHA-256/512.
    """

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        nonce: str | None = None,
        hash_name: str | None = None,
        min_iterations: int = MIN_ITERATIONS,
        max_iterations: int = MAX_ITERATIONS,
    ) -> None:
        self.mechanism = mechanism
        self._algorithm = hash_name if hash_name is not None else _hash_name(mechanism)
        self._username = username
        self._password = password
        self._nonce = nonce if nonce is not None else _make_nonce()
        if not self._nonce or "," in self._nonce:
            raise ConfigError("a SCRAM client nonce must be non-empty and contain no ','")
        self._min_iterations = min_iterations
        self._max_iterations = max_iterations
        self._client_first_bare = f"n={escape_saslname(username)},r={self._nonce}"
        self._expected_signature: bytes | None = None
        self._state = "initial"
        self._failure: str | None = None

    def initial_response(self) -> bytes:
        if self._state != "initial":
            raise AuthenticationError("SCRAM client-first message was already sent")
        self._state = "sent-first"
        return (_GS2_HEADER + self._client_first_bare).encode("utf-8")

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._state == "sent-first":
            return self._server_first(_decode_text(challenge, "server-first message"))
        if self._state == "sent-final":
            self._server_final(_decode_text(challenge, "server-final message"))
            return None
        raise AuthenticationError(
            f"unexpected SCRAM message from the server in state {self._state!r}"
        )

    def _fail(self, reason: str) -> AuthenticationError:
        self._state = "failed"
        return AuthenticationError(f"{self.mechanism}: {reason}")

    def _server_first(self, message: str) -> bytes:
        if message.startswith("m="):
            raise self._fail("server-first message requires an extension kclient does not know")
        if message.startswith("e="):
            raise self._fail(f"server refused the exchange: {message[2:]}")
        attributes = _parse_attributes(message, "server-first message")
        keys = [key for key, _ in attributes[:3]]
        if keys != ["r", "s", "i"]:
            raise self._fail(
                "server-first message must start with r=, s=, i= (in that order); "
                f"got {','.join(keys)}"
            )
        nonce, salt_text, iterations_text = (value for _, value in attributes[:3])
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise self._fail(
                "server nonce does not extend the client nonce; the server is not following "
                "RFC 5802 or the exchange was tampered with"
            )
        salt = _unb64(salt_text, "salt")
        if not salt:
            raise self._fail("server sent an empty salt")
        # ASCII digits only (str.isdigit also takes '²' and other digits int() refuses),
        # and never int() of a number longer than the limit's (thousands of digits).
        if not (iterations_text.isascii() and iterations_text.isdigit()):
            raise self._fail(f"server sent a non-numeric iteration count "
                             f"{iterations_text[:20]!r}")
        significant = iterations_text.lstrip("0") or "0"
        if len(significant) > len(str(self._max_iterations)):
            raise self._fail(
                f"server asked for a {len(significant)}-digit iteration count, above the "
                f"limit of {self._max_iterations}"
            )
        iterations = int(significant)
        if iterations < self._min_iterations:
            raise self._fail(
                f"server asked for {iterations} iterations, below the minimum of "
                f"{self._min_iterations}; refusing a weak password hash"
            )
        if iterations > self._max_iterations:
            raise self._fail(
                f"server asked for {iterations} iterations, above the limit of "
                f"{self._max_iterations}"
            )
        salted = _salted_password(self._algorithm, self._password, salt, iterations)
        client_key = _hmac(self._algorithm, salted, b"Client Key")
        stored_key = hashlib.new(self._algorithm, client_key).digest()
        channel = _b64(_GS2_HEADER.encode("ascii"))
        without_proof = f"c={channel},r={nonce}"
        auth_message = ",".join((self._client_first_bare, message, without_proof)).encode("utf-8")
        client_signature = _hmac(self._algorithm, stored_key, auth_message)
        proof = _xor(client_key, client_signature)
        server_key = _hmac(self._algorithm, salted, b"Server Key")
        self._expected_signature = _hmac(self._algorithm, server_key, auth_message)
        self._state = "sent-final"
        return f"{without_proof},p={_b64(proof)}".encode()

    def _server_final(self, message: str) -> None:
        if message.startswith("e="):
            self._failure = message[2:]
            raise self._fail(f"server rejected the credentials: {message[2:]}")
        if not message.startswith("v="):
            raise self._fail("server-final message has neither v= nor e=")
        signature = _unb64(message[2:].split(",", 1)[0], "server signature")
        assert self._expected_signature is not None
        if not hmac.compare_digest(signature, self._expected_signature):
            raise self._fail(
                "server signature does not match: the server does not hold this user's "
                "credentials, or the exchange was tampered with; not trusting this broker"
            )
        self._state = "complete"


class ScramServer(SaslServerMechanism):
    """Server side of SCRAM-SHA-256 / SCRAM-SHA-512 for the emulated broker.

    ``lookup(username)`` returns the user's :class:`ScramCredential` or ``None``.
    An unknown user gets a plausible server-first message (random salt) and fails
    at the proof, so the exchange does not reveal which user names exist.
    """

    def __init__(
        self,
        mechanism: str,
        credentials: Mapping[str, ScramCredential],
        *,
        nonce: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._algorithm = _hash_name(mechanism)
        self._credentials = credentials
        self._server_nonce = nonce if nonce is not None else _make_nonce()
        self._state = "initial"
        self._user = None
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    def _fail(self, reason: str) -> AuthenticationError:
        self._state = "failed"
        return AuthenticationError(reason)

    def _invalid_credentials(self) -> AuthenticationError:
        return self._fail(
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism}"
        )

    def evaluate_response(self, response: bytes) -> bytes:
        if self._state == "initial":
            return self._client_first(_decode_text(response, "client-first message"))
        if self._state == "sent-first":
            return self._client_final(_decode_text(response, "client-final message"))
        raise self._fail(f"unexpected SCRAM message in state {self._state!r}")

    def _client_first(self, message: str) -> bytes:
        parts = message.split(",", 2)
        if len(parts) != 3:
            raise self._fail("SCRAM client-first message is malformed: no GS2 header")
        flag, authzid, bare = parts
        if flag.startswith("p="):
            raise self._fail("SCRAM channel binding is not supported by this broker")
        if flag not in ("n", "y"):
            raise self._fail("SCRAM client-first message has an invalid GS2 flag")
        attributes = _parse_attributes(bare, "client-first message")
        if attributes[0][0] == "m":
            raise self._fail("SCRAM client-first message requires an unsupported extension")
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r":
            raise self._fail("SCRAM client-first message must carry n= then r=")
        username = unescape_saslname(attributes[0][1])
        client_nonce = attributes[1][1]
        if not username or not client_nonce:
            raise self._fail("SCRAM client-first message has an empty user name or nonce")
        if authzid and (
            not authzid.startswith("a=") or unescape_saslname(authzid[2:]) != username
        ):
            raise self._fail("SCRAM authorization id must be the authenticated user name")
        credential = self._credentials.get(username)
        if credential is None:
            # A decoy that cannot match any proof: unknown users fail like wrong passwords.
            credential = ScramCredential(
                mechanism=self.mechanism,
                salt=secrets.token_bytes(16),
                iterations=DEFAULT_ITERATIONS,
                stored_key=secrets.token_bytes(hashlib.new(self._algorithm).digest_size),
                server_key=secrets.token_bytes(hashlib.new(self._algorithm).digest_size),
            )
        self._user = username
        self._credential = credential
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._nonce = client_nonce + self._server_nonce
        self._server_first = (
            f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        )
        self._state = "sent-first"
        return self._server_first.encode("utf-8")

    def _client_final(self, message: str) -> bytes:
        head, separator, proof_text = message.rpartition(",p=")
        if not separator:
            raise self._fail("SCRAM client-final message has no proof (p=)")
        attributes = _parse_attributes(head, "client-final message")
        if len(attributes) < 2 or attributes[0][0] != "c" or attributes[1][0] != "r":
            raise self._fail("SCRAM client-final message must carry c= then r=")
        channel = _unb64(attributes[0][1], "channel binding")
        if channel != self._gs2_header.encode("utf-8"):
            raise self._fail("SCRAM channel binding data does not match the GS2 header")
        if attributes[1][1] != self._nonce:
            raise self._fail("SCRAM client-final nonce does not match the exchange")
        proof = _unb64(proof_text, "client proof")
        credential = self._credential
        assert credential is not None
        auth_message = ",".join((self._client_first_bare, self._server_first, head)).encode(
            "utf-8"
        )
        client_signature = _hmac(self._algorithm, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise self._invalid_credentials()
        client_key = _xor(proof, client_signature)
        computed = hashlib.new(self._algorithm, client_key).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise self._invalid_credentials()
        signature = _hmac(self._algorithm, credential.server_key, auth_message)
        self._state = "complete"
        return f"v={_b64(signature)}".encode("ascii")
