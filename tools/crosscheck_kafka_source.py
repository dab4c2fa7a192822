"""Compare kclient's KRaft release profiles with Apache Kafka's own source.

A KRaft broker of 2.8-3.9 answers ApiVersions with the APIs whose request spec
lists the ``broker`` listener, each from its oldest version to its newest stable
one.  Once its forwarding channel has connected to the active controller (on
its first forwarded request), an API that ``ApiKeys.java`` marks forwardable is
kept only where the controller advertises it too, that is where its spec also
lists the ``controller`` listener; before that (``controllerApiVersions`` is
None in ``ApiVersionManager.scala``) nothing is intersected.  The profiles
describe a broker as it starts, so that is the answer compared here; the keys
that disappear after the first forwarded request are printed too (UpdateFeatures
at 3.0 and 3.1).  2.8.0-3.1.x brokers add Envelope whenever they forward (a
workaround in ``ApiVersionManager.scala``), and from 3.7 the client telemetry
APIs are left out unless a telemetry receiver is configured
(``ApiVersionsResponse.java``).

This script replays those rules at each release tag of a Kafka git checkout
(bare or not) and prints every (profile, key) where the result differs from
``kclient/negotiation/releases.json``.  The facts it checks and the evidence
behind them are recorded in ``tools/gen_data.py`` (``KRAFT_ONLY``,
``KRAFT_SINCE``, ``KRAFT_EVIDENCE``); run it after changing them.

    python tools/crosscheck_kafka_source.py /path/to/kafka[.git] [TAG ...]

Without tags it checks the newest patch tag of 2.8 to 3.8 and the 3.9 branch.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

MESSAGES = "clients/src/main/resources/common/message/"
API_KEYS = "clients/src/main/java/org/apache/kafka/common/protocol/ApiKeys.java"
VERSION_MANAGER = "core/src/main/scala/kafka/server/ApiVersionManager.scala"
RESPONSE = "clients/src/main/java/org/apache/kafka/common/requests/ApiVersionsResponse.java"
DEFAULT_TAGS = ("2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2",
                "3.7.1", "3.8.0", "3.9")
ENVELOPE, TELEMETRY = 58, (71, 72)

_ENUM = re.compile(r"^\s+([A-Z_]+)\(ApiMessageType\.[A-Z_]+((?:, [\w.]+)*)\)[,;]", re.M)
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.M)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True,
                          capture_output=True, text=True).stdout


def _spec(text: str) -> dict[str, object]:
    # Some tagged specs carry stray text after the object: read the first one.
    obj, _ = json.JSONDecoder().raw_decode(_LINE_COMMENT.sub("", text).strip())
    return dict(obj)


def _forwardable(api_keys: str) -> set[str]:
    """Enum names whose constructor's last argument (forwardable) is true."""
    found = set()
    for name, args in _ENUM.findall(api_keys):
        parts = [a.strip() for a in args.split(",") if a.strip()]
        if len(parts) >= 2 and parts[-1] == "true":
            found.add(name)
    return found


def _enum_name(spec_name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", spec_name.removesuffix("Request")).upper()


def kraft_broker_apis(repo: Path, tag: str, forwarded: bool = False
                      ) -> dict[int, tuple[int, int]]:
    """key -> (min, max) a default KRaft broker of ``tag`` advertises as it starts, or
    (``forwarded``) once it has forwarded a request to the active controller."""
    forwardable = _forwardable(_git(repo, "show", f"{tag}:{API_KEYS}"))
    manager = _git(repo, "show", f"{tag}:{VERSION_MANAGER}")
    response = _git(repo, "show", f"{tag}:{RESPONSE}")
    apis: dict[int, tuple[int, int]] = {}
    envelope_max = 0
    for name in _git(repo, "ls-tree", "--name-only", f"{tag}:{MESSAGES}").split():
        if not name.endswith("Request.json"):
            continue
        spec = _spec(_git(repo, "show", f"{tag}:{MESSAGES}{name}"))
        if spec.get("type") != "request":
            continue
        key = int(str(spec["apiKey"]))
        low, _, high = str(spec["validVersions"]).partition("-")
        vmin, vmax = int(low), int(high or low)
        if spec.get("latestVersionUnstable"):
            vmax -= 1
        if key == ENVELOPE:
            envelope_max = vmax
        listeners = spec.get("listeners") or []
        assert isinstance(listeners, list)
        if "broker" not in listeners or vmax < vmin:
            continue
        if (forwarded and _enum_name(str(spec["name"])) in forwardable
                and "controller" not in listeners):
            continue
        if key in TELEMETRY and "clientTelemetryEnabled" in response:
            continue
        apis[key] = (vmin, vmax)
    if "setApiKey(ApiKeys.ENVELOPE.id)" in manager:
        apis[ENVELOPE] = (0, envelope_max)
    return apis


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kafka", type=Path, help="Kafka checkout or bare repository")
    parser.add_argument("tags", nargs="*", default=DEFAULT_TAGS)
    args = parser.parse_args()
    repo = args.kafka if (args.kafka / "HEAD").exists() else args.kafka / ".git"
    root = Path(__file__).resolve().parent.parent
    ours = json.loads((root / "kclient" / "negotiation" / "releases.json").read_text())
    profiles = {entry["name"]: entry["apis"] for entry in ours["releases"]}
    differences = 0
    for tag in args.tags:
        name = ".".join(tag.split(".")[:2]) + "-kraft"
        theirs = kraft_broker_apis(repo, tag)
        mine = {int(k): (v[0], v[1]) for k, v in profiles[name].items()}
        for key in sorted(set(theirs) | set(mine)):
            if theirs.get(key) != mine.get(key):
                differences += 1
                print(f"{name:>10} ({tag})  key {key:>3}  ours {mine.get(key)}  "
                      f"Kafka's source {theirs.get(key)}")
        for key in sorted(set(theirs) - set(kraft_broker_apis(repo, tag, forwarded=True))):
            print(f"{name:>10} ({tag})  key {key:>3}  advertised until the first forwarded "
                  "request only")
    print(f"{differences} difference(s) over {len(args.tags)} tag(s)")


if __name__ == "__main__":
    main()
