"""How the fleet session starts its driver JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kclient.fleet.session import (
    CODE_CACHE_BYTES,
    GC_OPTION,
    SESSION_CONF,
    SMALL_INPUT_BYTES,
    SMALL_INPUT_JVM_OPTIONS,
    _collector_chosen_elsewhere,
    _heap_set_elsewhere,
    _quiet_log_config,
    _spark_defaults,
    driver_jvm_options,
    sized_driver_memory,
)


def test_small_inputs_get_c1_only_and_large_or_unknown_ones_keep_c2() -> None:
    for size in (0, 40 << 20, SMALL_INPUT_BYTES):
        assert set(SMALL_INPUT_JVM_OPTIONS) <= set(driver_jvm_options(size))
    for size in (SMALL_INPUT_BYTES + 1, 400 << 20, None):
        assert not set(SMALL_INPUT_JVM_OPTIONS) & set(driver_jvm_options(size))
    for size in (0, SMALL_INPUT_BYTES + 1, None):  # every driver: the throughput collector
        assert driver_jvm_options(size)[0] == GC_OPTION == "-XX:+UseParallelGC"


def test_the_driver_jvm_runs_with_the_chosen_options(spark: Any) -> None:
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    for option in driver_jvm_options(1 << 20):
        assert option in arguments
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in arguments)


def test_a_small_input_driver_keeps_a_full_size_code_cache(spark: Any) -> None:
    # With C1 alone the JVM would reserve 48 MB of code cache, which a long
    # session of generated query classes fills until the JVM dies.
    jvm = spark.sparkContext._jvm
    pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    reserved = sum(pool.getUsage().getMax() for pool in pools
                   if str(pool.getName()).startswith(("CodeHeap", "CodeCache")))
    assert reserved >= CODE_CACHE_BYTES


def test_the_session_runs_without_whole_stage_code_generation(spark: Any) -> None:
    assert SESSION_CONF["spark.sql.codegen.wholeStage"] == "false"
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    plan = spark.range(10).selectExpr("id * 2 AS twice").where("twice > 4")
    # With whole-stage code generation, the physical plan's operators are
    # wrapped in WholeStageCodegen nodes (printed with a '*(n)' prefix).
    described = plan._jdf.queryExecution().executedPlan().toString()
    assert "*(" not in described and "WholeStageCodegen" not in described


def test_the_quiet_log_configuration_goes_when_the_process_ends() -> None:
    # One temp file per Spark start used to stay in /tmp for good.
    code = "from kclient.fleet.session import _quiet_log_config as c; print(c())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    path = Path(done.stdout.strip())
    assert path.name.startswith("kclient-log4j2-")
    assert not path.exists()


_LOG_OPTION = """
from kclient.fleet.session import build_session
spark = build_session("local[1]", driver_memory="600m", jvm_options=["-XX:+UseSerialGC"])
jvm = spark.sparkContext._jvm
arguments = [str(a) for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
             .getInputArguments()]
spark.stop()
print([a for a in arguments if a.startswith("-Dlog4j2.configurationFile=")])
print([a for a in arguments if a.startswith(("-Xmx", "--add-modules"))])
print([a for a in arguments if a.endswith("GC")])
"""


def test_the_jvm_starts_with_the_log_configuration_and_nothing_on_stderr(tmp_path: Path) -> None:
    # Spark splits extraJavaOptions at blanks: the option is quoted as one item.
    spaced = tmp_path / "temp with space"
    spaced.mkdir()
    done = subprocess.run([sys.executable, "-c", _LOG_OPTION], capture_output=True, text=True,
                          timeout=180, check=False,
                          env={**os.environ, "TMPDIR": str(spaced),
                               "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0, done.stderr[-2000:]
    log_option, memory_and_modules, collectors = done.stdout.strip().splitlines()[-3:]
    # The caller's collector replaces kclient's (HotSpot would refuse both).
    assert collectors == "['-XX:+UseSerialGC']"
    assert f"-Dlog4j2.configurationFile=file:{spaced}/kclient-log4j2-" in log_option
    assert "'-Xmx600m'" in memory_and_modules  # driver_memory reached the JVM
    # The JVM was given the incubator module and would say so; Spark would
    # announce its log level: neither reaches the terminal.
    assert "jdk.incubator.vector" in memory_and_modules
    assert done.stderr == ""


def test_the_log_configuration_names_one_level_for_spark_and_its_python_gateway() -> None:
    lines = Path(_quiet_log_config("off")).read_text(encoding="utf-8").splitlines()
    assert "rootLogger.level = off" in lines
    assert "logger.shell.name = org.apache.spark.api.python.PythonGatewayServer" in lines
    assert "logger.shell.level = off" in lines
    assert _quiet_log_config("error") != _quiet_log_config("off")


def test_the_libraries_pyspark_wants_are_imported_ahead_and_failures_stay_quiet(
        tmp_path: Path) -> None:
    # A fresh interpreter, so that the imports are really done by the thread.
    (tmp_path / "kclient_broken_module.py").write_text("raise RuntimeError('broken')\n")
    script = (
        "import sys, threading\n"
        "from kclient.fleet.session import _SESSION_IMPORTS, _import_ahead\n"
        "assert not any(name in sys.modules for name in _SESSION_IMPORTS)\n"
        "thread = _import_ahead(('kclient_no_such_module', 'kclient_broken_module',"
        " *_SESSION_IMPORTS))\n"
        "assert thread is not threading.current_thread() and thread.daemon\n"
        "thread.join(60)\n"
        "assert not thread.is_alive()\n"
        "print(sorted(name for name in _SESSION_IMPORTS if name in sys.modules))\n"
        "print('kclient_broken_module' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(sorted(("pandas", "pyarrow"))), "False"]
    assert done.stderr == ""


def test_a_large_input_gets_two_thirds_of_its_size_as_heap_within_a_quarter_of_the_machine(
) -> None:
    machine = 24 << 30
    assert sized_driver_memory(None, machine) is None
    assert sized_driver_memory(400 << 20, machine) is None  # 100,000 brokers: Spark's 1g
    assert sized_driver_memory(3_000_000_000, machine) == "2048m"  # 1,000,000 history records
    assert sized_driver_memory(3_000_000_000, 4 << 30) is None  # a quarter of 4 GiB is 1 GiB
    assert sized_driver_memory(3_000_000_000, 6 << 30) == "1536m"
    assert sized_driver_memory(10**12, machine) == "6144m"
    assert sized_driver_memory(1_700_000_000, machine) == "1280m"  # steps of 256 MiB


_JVM_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS",
                  "PYSPARK_SUBMIT_ARGS")
#: Every variable of this environment that steers the driver JVM kclient starts.
_SPARK_VARIABLES = ("SPARK_DRIVER_MEMORY", "SPARK_MEM", "SPARK_CONF_DIR", *_JVM_VARIABLES)


@pytest.fixture
def bare_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """``monkeypatch``, with none of :data:`_SPARK_VARIABLES` set."""
    for name in _SPARK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_spark_defaults_reads_the_file_where_sparks_launcher_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert _spark_defaults() == {}  # no file
    (tmp_path / "spark-defaults.conf").write_text(
        "# a comment\n! another\n\nspark.driver.memory   3g\n"
        "spark.driver.extraJavaOptions -Da=b -XX:+UseSerialGC  \n"
        "spark.master=local[2]\nspark.app.name : fleet\nspark.flag\n", encoding="utf-8")
    assert _spark_defaults() == {
        "spark.driver.memory": "3g", "spark.driver.extraJavaOptions": "-Da=b -XX:+UseSerialGC",
        "spark.master": "local[2]", "spark.app.name": "fleet", "spark.flag": ""}
    (tmp_path / "spark-defaults.conf").write_bytes(b"spark.x \xff\n")  # not UTF-8
    assert _spark_defaults() == {}


@pytest.mark.parametrize(("where", "text", "expected"), [
    ("defaults", "spark.driver.memory 3g\n", True),
    ("defaults", "# spark.driver.memory 3g\nspark.driver.memory=3g\n", True),
    ("defaults", "spark.driver.memory:3g\n", True),
    ("defaults", "spark.driver.memoryOverhead 1g\nspark.executor.memory 3g\n", False),
    ("defaults", "", False),
    ("SPARK_DRIVER_MEMORY", "3g", True),
    ("PYSPARK_SUBMIT_ARGS", "--driver-memory 3g pyspark-shell", True),
    ("PYSPARK_SUBMIT_ARGS", "--conf spark.driver.memory=3g pyspark-shell", True),
    ("PYSPARK_SUBMIT_ARGS", "--master local[2] pyspark-shell", False),
])
def test_a_heap_set_where_spark_looks_is_left_alone(
        tmp_path: Path, bare_environment: pytest.MonkeyPatch, where: str, text: str,
        expected: bool) -> None:
    monkeypatch = bare_environment
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    if where == "defaults":
        (tmp_path / "spark-defaults.conf").write_text(text, encoding="utf-8")
    else:
        monkeypatch.setenv(where, text)
    assert _heap_set_elsewhere(_spark_defaults()) is expected


@pytest.mark.parametrize(("where", "text", "expected"), [
    *((name, "-Xss4m -XX:+UseG1GC", True) for name in _JVM_VARIABLES),
    ("JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=50", False),
    ("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:+UseZGC pyspark-shell", True),
    ("spark.driver.extraJavaOptions", "-Dx=1 -XX:+UseShenandoahGC", True),
    ("spark.driver.defaultJavaOptions", "-XX:+UseSerialGC", True),
    ("jvm_options", "-XX:+UseEpsilonGC", True),
    ("jvm_options", "-XX:+UseParallelGC", True),
    # Options about a collector that choose none.
    ("jvm_options", "-XX:+UseGCOverheadLimit", False),
    ("jvm_options", "-XX:+UseStringDeduplication", False),
    ("jvm_options", "-XX:+UseMaximumCompactionOnSystemGC", False),
    ("jvm_options", "-XX:-UseG1GC", False),
    ("spark.driver.extraJavaOptions", "-Dx=-XX:+UseG1GCx", False),
])
def test_kclients_collector_gives_way_to_one_chosen_anywhere_the_jvm_looks(
        bare_environment: pytest.MonkeyPatch, where: str, text: str, expected: bool) -> None:
    # HotSpot refuses to start with two collectors ("Multiple garbage
    # collectors selected"), wherever the second comes from.
    settings: dict[str, str] = {}
    options: list[str] = []
    if where == "jvm_options":
        options.append(text)
    elif where.startswith("spark."):
        settings[where] = text
    else:
        bare_environment.setenv(where, text)
    assert _collector_chosen_elsewhere(settings, options) is expected


def _drivers(code: str, envs: list[dict[str, str]]) -> list[str]:
    """The last stdout line of ``code`` run by a fresh Python per environment, all at once."""
    env = {name: value for name, value in os.environ.items()
           if name not in _SPARK_VARIABLES}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])
    runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**env, **more})
            for more in envs]  # JVMs started at once: a fraction of the wait
    outputs = [run.communicate(timeout=180) for run in runs]
    assert [run.returncode for run in runs] == [0] * len(runs), [err[-2000:] for _, err in outputs]
    return [out.strip().splitlines()[-1] for out, _ in outputs]


_HEAP = """
from kclient.fleet.session import build_session
spark = build_session("local[1]", input_bytes=3_000_000_000)
arguments = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean(
    ).getInputArguments()
print([str(a) for a in arguments if str(a).startswith("-Xmx")])
spark.stop()
"""


def test_the_sized_heap_reaches_the_jvm_unless_spark_defaults_set_one(tmp_path: Path) -> None:
    plain, configured = tmp_path / "plain", tmp_path / "configured"
    plain.mkdir()
    configured.mkdir()
    (configured / "spark-defaults.conf").write_text("spark.driver.memory 700m\n")
    assert _drivers(_HEAP, [{"SPARK_CONF_DIR": str(folder)} for folder in (plain, configured)]
                    ) == ["['-Xmx2048m']", "['-Xmx700m']"]


_OPTIONS = """
from kclient.fleet.session import build_session
spark = build_session("local[1]")
jvm = spark.sparkContext._jvm
beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
print(str(jvm.java.lang.System.getProperty("kclient.probe")),
      sorted(str(bean.getName()) for bean in beans),
      str(jvm.java.lang.System.getProperty("log4j2.configurationFile")).startswith("file:"))
spark.stop()
"""


def test_the_driver_jvm_keeps_the_options_and_collector_chosen_outside_kclient(
        tmp_path: Path) -> None:
    # A collector chosen outside kclient stopped the JVM from starting, and
    # spark-defaults.conf's JVM options (a trust store, Kerberos) were dropped.
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "spark-defaults.conf").write_text(
        "spark.driver.extraJavaOptions -Dkclient.probe=kept -XX:+UseSerialGC\n")
    assert _drivers(_OPTIONS, [
        {"SPARK_CONF_DIR": str(configured)},
        {"SPARK_CONF_DIR": str(tmp_path), "JAVA_TOOL_OPTIONS": "-XX:+UseG1GC"},
        {"SPARK_CONF_DIR": str(tmp_path)},
    ]) == [
        "kept ['Copy', 'MarkSweepCompact'] True",  # the serial collector
        "None ['G1 Old Generation', 'G1 Young Generation'] True",
        "None ['PS MarkSweep', 'PS Scavenge'] True",  # kclient's: the parallel collector
    ]
