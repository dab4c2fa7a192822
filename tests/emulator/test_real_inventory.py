"""From a real capture to a verdict: the emulator's inventory of real libraries, judged on 4.0.

Real clients (confluent-kafka, kafka-python, aiokafka; kafkajs from npm) work against
an emulated Kafka 3.9 cluster, which records the client software of every connection
(KIP-511 names, or ``unknown``) and every request it sent.  ``kclient compat
--inventory`` judges that record for Kafka 4.0, and the same libraries then run
against an emulated 4.0 cluster: where kclient says *breaks* they must fail there,
where it says *works* they must work, and *unknown* must say why (no name sent, a
release not profiled).  kafkajs 1.5.0, which sends JoinGroup v0 and CreateTopics v1
(both removed in 4.0), is caught from its capture alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.negotiation.software import ClientSoftware, identify
from tests.cli.conftest import run_kclient

from .real_clients import (
    KAFKAJS,
    Run,
    expected_values,
    run_aiokafka,
    run_confluent_kafka,
    run_kafka_python,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

COUNT = 30


def _emulated(release: str) -> ThreadedEmulator:
    emulator = ThreadedEmulator(EmulatedCluster([release, release], cluster_id="lab"))
    emulator.start()
    return emulator


def _works(run: Callable[[], Run]) -> bool:
    try:
        done = run()
    except Exception:  # what a library raises when the brokers refuse it
        return False
    # Each library produces the same values into one topic and reads back as many.
    return len(done.consumed) >= COUNT and set(done.consumed) <= set(expected_values(COUNT))


def _judge(path: Path) -> tuple[int, dict[tuple[str, str], dict[str, Any]]]:
    result = run_kclient("compat", "--inventory", str(path), "--release", "4.0",
                         "--format", "json")
    assert result.returncode in (0, 1, 3), result.stderr
    document = json.loads(result.stdout)
    (cluster,) = document["clusters"]
    return result.returncode, {(s["software_name"], s["software_version"]): s
                               for s in cluster["software"]}


def _python_libraries(emulator: ThreadedEmulator, create: bool) -> dict[str, bool]:
    return {
        "confluent-kafka": _works(lambda: run_confluent_kafka(emulator, COUNT, True, create)),
        "kafka-python": _works(lambda: run_kafka_python(emulator, COUNT, True, create=False)),
        "aiokafka": _works(lambda: run_aiokafka(emulator, COUNT, True, create=False)),
    }


def test_python_libraries_recorded_on_3_9_are_judged_as_they_behave_on_4_0(
        tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    pytest.importorskip("aiokafka")
    capture = _emulated("3.9")
    try:
        assert all(_python_libraries(capture, create=True).values())
    finally:
        capture.stop()
    path = tmp_path / "lab.jsonl"
    assert capture.cluster.write_inventory(path) == 3
    # What each library sends, as the software-name table says (installed versions).
    python = ClientSoftware("confluent-kafka-python", f"{confluent_kafka.__version__}-rdkafka-"
                            f"{confluent_kafka.libversion()[0]}")
    named = {u.software for u in capture.cluster.inventory()}
    assert named == {python, ClientSoftware("kafka-python", kafka.__version__),
                     ClientSoftware("unknown", "unknown")}  # aiokafka sends no name
    assert identify(python).spec == f"librdkafka=={confluent_kafka.libversion()[0]}"
    code, verdicts = _judge(path)
    target = _emulated("4.0")
    try:
        behaved = _python_libraries(target, create=True)
    finally:
        target.stop()
    library = {(python.name, python.version): "confluent-kafka",
               ("kafka-python", kafka.__version__): "kafka-python",
               ("unknown", "unknown"): "aiokafka"}
    for key, verdict in verdicts.items():
        works = behaved[library[key]]
        if verdict["state"] == "breaks":
            assert not works, verdict
        elif verdict["state"] == "works":
            assert works, verdict
        else:
            assert ("is not profiled" in verdict["reason"]
                    or "no software name was sent" in verdict["reason"]), verdict
    # kafka-python names itself and is profiled: a definite verdict, which holds.
    assert verdicts["kafka-python", kafka.__version__]["state"] == "works"
    assert code == (0 if all(v["state"] == "works" for v in verdicts.values()) else 3)


# -- kafkajs (npm) --------------------------------------------------------------------------
def _npm(directory: Path, package: str) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node or npm is not installed")
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix",
                               str(directory), package], capture_output=True, text=True,
                              timeout=180, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install took more than 180 s (offline?)")
    if done.returncode != 0:
        pytest.skip(f"npm install {package} failed (offline?): {done.stderr.strip()[-300:]}")


def _kafkajs_works(directory: Path, emulator: ThreadedEmulator) -> bool:
    script = directory / "kafkajs.js"
    script.write_text(KAFKAJS, encoding="utf-8")
    try:
        done = subprocess.run(
            [str(shutil.which("node")), str(script), emulator.bootstrap_servers, str(COUNT), "0"],
            capture_output=True, text=True, timeout=60, cwd=directory, check=False,
            env={**os.environ, "NODE_PATH": str(directory / "node_modules")})
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and len(json.loads(done.stdout.splitlines()[-1])) == COUNT


@pytest.mark.parametrize("package, breaks", [("kafkajs@2.2.4", False), ("kafkajs@1.5.0", True)])
def test_kafkajs_recorded_on_3_9_is_judged_as_it_behaves_on_4_0(
        tmp_path: Path, package: str, breaks: bool) -> None:
    _npm(tmp_path, package)
    capture = _emulated("3.9")
    try:
        assert _kafkajs_works(tmp_path, capture)
    finally:
        capture.stop()
    path = tmp_path / "lab.jsonl"
    capture.cluster.write_inventory(path)
    code, verdicts = _judge(path)
    (verdict,) = verdicts.values()  # kafkajs sends no name: unknown / unknown
    target = _emulated("4.0")
    try:
        works = _kafkajs_works(tmp_path, target)
    finally:
        target.stop()
    assert works is not breaks
    if breaks:
        assert code == 1 and verdict["state"] == "breaks"
        assert verdict["reason"].startswith("the brokers saw it send ")
        refused = {(r["api"], r["version"]) for r in verdict["observed"] if r["refused"]}
        assert {("JoinGroup", 0), ("CreateTopics", 1)} <= refused
    else:
        assert code == 3 and verdict["state"] == "unknown"
        assert verdict["evidence"][0]["text"].startswith("every request version recorded from "
                                                         "it")
