"""Predicted facts: what a host will look like after a stage's plan is applied, for planning later stages ahead.

`roce-wizard plan` on bare hosts plans every stage before any of them runs. Some stages change the facts the later
ones plan from: installing DOCA-OFED renames the RDMA devices (`rocep59s0f0` becomes `mlx5_0`), the network stage
adds the addresses that give each port its RoCE v2 GID. A stage that does so returns a `Prediction` for a host; the
runner plans the later stages from facts with every earlier prediction applied, and each of those plans lists the
predicted values it relies on (`HostPlan.predicted`). A real run never uses predictions: it re-reads every host
after each stage and plans from what is really there.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HostFacts = dict[str, Any]  # stage -> that stage's facts for one host


@dataclass
class Prediction:
    """What applying one stage's plan on one host is expected to change in its facts."""

    stage: str
    values: list[str]  # each predicted value, said for a person: "RDMA device rocep59s0f0 -> mlx5_0 (why)"
    transform: Callable[[HostFacts], HostFacts]
    # Shell lines that confirm a prediction came true on the host before a later stage's script runs.
    guards: list[str] = field(default_factory=list)

    def apply(self, facts: HostFacts) -> HostFacts:
        return self.transform(facts)


def predicted_facts(facts: HostFacts, predictions: list[Prediction]) -> HostFacts:
    """A copy of one host's facts with the predictions applied in stage order (the real facts stay untouched)."""
    result = copy.deepcopy(facts)
    for prediction in predictions:
        result = prediction.apply(result)
    return result


_DEVICE_PORT = re.compile(r"^(?P<dev>[^:\s]+):(?P<port>\d+)$")


def rename_everywhere(value: Any, names: dict[str, str]) -> Any:
    """Replace RDMA device names wherever a whole string is one, or is ``<device>:<port>``.

    Device names are unique tokens (``rocep59s0f0``, ``mlx5_0``), so only whole-string matches are renamed: a note
    that mentions a device in prose keeps the old name, which is what it saw.
    """
    if isinstance(value, str):
        if value in names:
            return names[value]
        match = _DEVICE_PORT.match(value)
        if match and match.group("dev") in names:
            return f"{names[match.group('dev')]}:{match.group('port')}"
        return value
    if isinstance(value, list):
        return [rename_everywhere(item, names) for item in value]
    if isinstance(value, dict):
        return {rename_everywhere(k, names): rename_everywhere(v, names) for k, v in value.items()}
    return value


def ipv4_mapped_gid(address: str) -> str:
    """The RoCE GID of an IPv4 address: the IPv4-mapped IPv6 address, written as sysfs prints it."""
    octets = [int(part) for part in address.split(".")]
    return "0000:0000:0000:0000:0000:ffff:" + f"{octets[0]:02x}{octets[1]:02x}:{octets[2]:02x}{octets[3]:02x}"
