"""kclient.commands.upgrade: the rolling upgrade behind ``kclient emulate --upgrade-to``.

The end-to-end run (emulate in a subprocess, ``kclient watch`` following it) is in
test_cli_watch; these run the upgrade in-process against a real emulated cluster.
"""

from __future__ import annotations

import asyncio

import pytest

from kclient.commands.upgrade import UpgradePlan
from kclient.emulator import EmulatedCluster
from kclient.errors import ConfigError
from tests.waiting import until

pytestmark = pytest.mark.timeout(30)


async def test_the_brokers_restart_in_turn_and_the_upgrade_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with EmulatedCluster(["3.9", "3.9"]) as cluster:
        stop = asyncio.Event()
        ports = [b.port for b in cluster.brokers]
        rolling = UpgradePlan("4.0", 0.05).start(cluster, stop)
        printed: list[str] = []
        await until(lambda: printed.append(capsys.readouterr().out) or
                    "rolling upgrade to Kafka 4.0 done\n" in "".join(printed), "the upgrade")
        await rolling.close()
        assert "".join(printed).splitlines() == [
            "rolling upgrade to Kafka 4.0: broker by broker, one every 0.05 s",
            "broker 1 restarted: Kafka 3.9 -> 4.0 (1 of 2)",
            "broker 2 restarted: Kafka 3.9 -> 4.0 (2 of 2)",
            "rolling upgrade to Kafka 4.0 done"]
        assert [b.port for b in cluster.brokers] == ports
        assert all(b.running and b.release == "4.0" for b in cluster.brokers)
        rolling.raise_failure()  # nothing failed
        assert not stop.is_set()


async def test_a_failed_restart_stops_the_command_and_is_raised() -> None:
    async with EmulatedCluster(["3.9", "3.9"]) as cluster:
        stop = asyncio.Event()
        rolling = UpgradePlan("4.0", 0.05).start(cluster, stop)
        await asyncio.sleep(0)  # one turn of the loop: the upgrade takes its list of brokers
        await cluster.remove_broker(2)  # gone before its turn: its restart fails
        await asyncio.wait_for(stop.wait(), 10)
        with pytest.raises(ConfigError, match="emulated cluster has no broker 2"):
            rolling.raise_failure()
        await rolling.close()
        assert cluster.broker(1).release == "4.0"
