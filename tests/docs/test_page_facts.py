"""Facts the documentation states about the code, checked against the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_examples import extract_blocks

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_home_page_lists_every_command() -> None:
    from kclient.cli import build_parser

    parser = build_parser()
    (commands,) = [a.choices for a in parser._actions if hasattr(a, "choices")
                   and isinstance(a.choices, dict)]
    row = next(line for line in (DOCS / "index.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `kclient` command |"))
    assert re.findall(r"`([a-z-]+)`", row.split("|")[2]) == list(commands)


def test_decode_recipe_names_the_keys_without_a_shipped_spec() -> None:
    from kclient.protocol import default_catalog

    text = (DOCS / "recipes" / "decode-capture.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- spec-less keys: start -->(.*?)<!-- spec-less keys: end -->",
                      text)
    assert found is not None
    documented = [name.strip() for name in found.group(1).split(",")]
    assert documented == ([info.name for info in default_catalog()
                           if info.codec_versions is None] or ["none"])


@pytest.mark.timeout(120)
def test_quickstart_comment_is_what_its_example_prints() -> None:
    from kclient.emulator import EmulatedCluster, ThreadedEmulator

    (block,) = [b for b in extract_blocks(DOCS / "quickstart.md") if b.lang == "python"]
    promised = re.findall(r'# "([^"]+)"', block.code)
    assert promised, "the quickstart's example shows what it prints"
    # The docs' own cluster (tests/docs/test_examples.py: Kafka 2.8 and 3.9).
    with ThreadedEmulator(EmulatedCluster(["2.8", "3.9"])) as emulator:
        code = block.code.replace("localhost:9092", emulator.bootstrap_servers)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    for line in promised:
        assert line in done.stdout.splitlines(), (line, done.stdout)


def test_python_api_page_opens_with_the_client_and_documents_every_parameter() -> None:
    import inspect

    import kclient

    text = (DOCS / "reference" / "python-api.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[0] == "The cluster client", headings
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", text, flags=re.MULTILINE))
    for cls in (kclient.Client, kclient.SyncClient):
        params = inspect.signature(cls.__init__).parameters
        wanted = [name for name in params if name != "self"]
        assert [name for name in rows if name in params] == wanted, cls
        for name in wanted:
            default = params[name].default
            empty = default is inspect.Parameter.empty
            shown = "required" if empty else f"`{json_like(default)}`"
            assert rows[name] == shown, (name, rows[name], shown)


def json_like(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


@pytest.mark.timeout(120)
def test_aiokafka_recipe_leaves_nothing_unclosed() -> None:
    pytest.importorskip("aiokafka")
    from kclient.emulator import EmulatedCluster, ThreadedEmulator

    (block,) = [b for b in extract_blocks(DOCS / "recipes" / "client-libraries.md")
                if b.lang == "python" and "AIOKafkaProducer" in b.code]
    with ThreadedEmulator(EmulatedCluster(["2.8", "3.9"])) as emulator:
        code = block.code.replace("localhost:9092", emulator.bootstrap_servers)
        # -X dev shows ResourceWarning and aiokafka's "Unclosed AIOKafkaProducer".
        done = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True,
                              text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    assert "nclosed" not in done.stderr, done.stderr


def test_upgrade_recipe_lists_every_client_software_name_as_the_table_has_it() -> None:
    from kclient.negotiation.software import software_names

    text = (DOCS / "recipes" / "upgrade-to-kafka-4.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- software names: start -->(.*?)<!-- software names: end -->",
                      text, re.S)
    assert found is not None
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in found.group(1).strip().splitlines()[2:]]
    documented = [(row[0].strip("`"), row[1], row[3]) for row in rows]
    assert documented == [(n.name, n.library, n.since) for n in software_names()]
