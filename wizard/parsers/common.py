"""Shared pieces of the pure output parsers: the error type, the base model and unit conversion."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ParseError(ValueError):
    """Raised when a text is not recognisably the output of the tool asked for.

    The message is one line that says why, so the CLI can print it as it is.
    """


class Parsed(BaseModel):
    """Base of every parser result: plain data, JSON-serialisable, unknown fields refused."""

    model_config = ConfigDict(extra="forbid")


# Multipliers from a tool's bandwidth unit to Gb/s (decimal gigabits, as perftest and link speeds use).
# Units are matched exactly: "Mb/s" (ethtool, megabits) and "MB/sec" (perftest, 2^20 bytes) differ only by case.
# perftest divides by 0x100000 for its MB/sec; nccl-tests' GB/s is 1e9 bytes/s.
_TO_GBPS: dict[str, float] = {
    "Gb/sec": 1.0,
    "Gb/s": 1.0,
    "Gbit/s": 1.0,
    "Gbps": 1.0,
    "Mb/s": 1e-3,
    "Mbit/s": 1e-3,
    "Mbps": 1e-3,
    "Mbit/sec": 1e-3,
    "MB/sec": 8 * 1048576 / 1e9,
    "MiB/sec": 8 * 1048576 / 1e9,
    "MiB/s": 8 * 1048576 / 1e9,
    "MB/s": 8e-3,
    "GB/s": 8.0,
}


class Bandwidth(Parsed):
    """A bandwidth in Gb/s plus the value and unit the tool actually printed."""

    gbps: float
    raw_value: float
    raw_unit: str


def bandwidth(value: float, unit: str) -> Bandwidth:
    """Convert ``value`` printed in ``unit`` to a :class:`Bandwidth` in Gb/s.

    Raises :class:`ParseError` for a unit it does not know rather than guessing.
    """
    factor = _TO_GBPS.get(unit)
    if factor is None:
        raise ParseError(f"unknown bandwidth unit {unit!r}")
    return Bandwidth(gbps=round(value * factor, 6), raw_value=value, raw_unit=unit)
