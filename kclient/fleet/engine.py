"""Which engine runs a fleet report: in-process (``local``) or on Spark (``spark``).

``auto``, the command line's default, runs in-process what one machine holds
easily (up to :data:`~kclient.fleet.local.LOCAL_LIMIT_BYTES` of input, as JSON
Lines) and on Spark whatever is larger, of unknown size (remote input), or
meant for a cluster (``--master`` given, or a ``spark-submit`` driver).  Both
engines apply the same core rules and write the same tables.
"""

from __future__ import annotations

from typing import Literal

import attrs

from kclient.errors import ConfigError, FleetError
from kclient.extras import require

__all__ = ["ENGINES", "ENGINE_EXTRAS", "ENGINE_MODULES", "Engine", "EngineChoice",
           "choose_engine", "require_engine"]

Engine = Literal["local", "spark"]
#: The values of ``--engine``.
ENGINES = ("auto", "local", "spark")
#: The extra each engine comes with: ``fleet`` (pyarrow) for the in-process
#: engine, ``spark`` (the fleet extra, PySpark and pandas) for Spark.
ENGINE_EXTRAS: dict[Engine, str] = {"local": "fleet", "spark": "spark"}
#: What each engine imports from its extra (checked before it starts).
ENGINE_MODULES: dict[Engine, tuple[str, ...]] = {
    "local": ("pyarrow",), "spark": ("pyspark", "pyarrow", "pandas")}


def require_engine(engine: Engine, who: str) -> None:
    """A :class:`~kclient.errors.FleetError` naming ``engine``'s extra and its ``pip``
    command when a module the engine imports is missing; ``who`` starts the message."""
    require(ENGINE_EXTRAS[engine], who, ENGINE_MODULES[engine], FleetError)


@attrs.frozen
class EngineChoice:
    """The engine that runs, and why (one phrase, for the command's first line)."""

    engine: Engine
    why: str


def _size(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size / 2**10:,.0f} KiB"


def choose_engine(requested: str, *, master: str | None, submitted: bool,
                  input_bytes: int | None, limit: int) -> EngineChoice:
    """The engine for ``--engine requested`` (``auto``, ``local`` or ``spark``).

    ``input_bytes`` is the input's size as JSON Lines (``None``: unknown, e.g.
    remote, or not known yet as for ``fleet scan``'s targets, where 0 is
    given); ``limit`` the most ``auto`` runs in-process.  ``local`` with
    ``master`` is a :class:`~kclient.errors.ConfigError`.
    """
    if requested not in ENGINES:
        raise ConfigError(f"--engine: {requested!r} is not one of {', '.join(ENGINES)}")
    if requested == "local":
        if master is not None:
            raise ConfigError("--master runs on Spark; drop it or use --engine spark "
                              "(or auto)")
        return EngineChoice("local", "in-process, asked for with --engine local")
    if requested == "spark":
        return EngineChoice("spark", "asked for with --engine spark")
    if master is not None:
        return EngineChoice("spark", f"--master {master} given")
    if submitted:
        return EngineChoice("spark", "running in a spark-submit driver")
    if input_bytes is None:
        return EngineChoice("spark", "the input's size is unknown: remote files")
    if input_bytes > limit:
        return EngineChoice("spark", f"the input ({_size(input_bytes)}) is more than the "
                            f"{_size(limit)} run in-process; --engine local to run it here")
    return EngineChoice("local", f"in-process: the input ({_size(input_bytes)}) is within "
                        f"{_size(limit)}; --engine spark to use Spark")
