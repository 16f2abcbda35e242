"""The answers' `switches` section: what `switch-config` writes beyond the host-facing ports LLDP finds."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from wizard.answers.sections import Section

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class PfcWatchdog(Section):
    """The switches' PFC watchdog: a queue paused longer than the detection time (a hung NIC sending pause frames
    for ever) stops honouring pauses and drops, instead of pausing the whole rail."""

    enabled: bool = True
    detection_ms: int = Field(default=200, ge=100, le=5000)
    """How long a lossless queue may stay paused before the watchdog acts (SONiC pfcwd's default: 200 ms)."""
    restoration_ms: int = Field(default=400, ge=100, le=60000)
    """How long the watchdog keeps the queue in its storm action before restoring PFC (SONiC pfcwd's default with
    no -r: twice the detection time)."""
    action: Literal["drop", "forward"] = "drop"
    """What a stormed queue does: drop (the vendors' default) or forward (SONiC only; EOS and Cumulus drop)."""


class FabricSwitch(Section):
    """A switch port list the hosts cannot see over LLDP: a leaf's uplinks, or a spine's ports toward the leaves."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """The switch's name as LLDP reports it (its hostname)."""
    role: Literal["leaf", "spine"] = "leaf"
    ports: list[str] = Field(min_length=1)
    """The switch's own port names: a leaf's uplinks toward the spines, or a spine's ports toward the leaves
    (swp61, Ethernet496, Ethernet61/1). They carry RoCE between rails, so they get the same lossless QoS."""


class SwitchesSection(Section):
    os: Literal["cumulus", "sonic", "eos"] | None = None
    """The leaves' and spines' NOS, the default of `switch-config --vendor` (nvue = cumulus). None: say it there."""
    os_of: dict[str, Literal["cumulus", "sonic", "eos"]] = Field(default_factory=dict)
    """The NOS of particular switches where the fabric mixes them (e.g. `spine-0: sonic` over Cumulus leaves), by
    the name LLDP reports. switch-config writes each of them in its own NOS's format (in that vendor's folder), the
    others in `--vendor`'s; the simulated fabric runs them so."""
    sonic_buffer_model: Literal["dynamic", "traditional"] = "dynamic"
    """SONiC's buffer model (DEVICE_METADATA buffer_model; Mellanox images default to dynamic). A port map given as
    the switch's config_db.json says it instead."""
    pfc_watchdog: PfcWatchdog = Field(default_factory=PfcWatchdog)
    fabric: list[FabricSwitch] = Field(default_factory=list)
    """Leaf uplinks and spines. Without them only the host-facing ports are configured and traffic between rails
    (through the spine) is lossy on SONiC and EOS."""

    @model_validator(mode="after")
    def _unique(self) -> SwitchesSection:
        for name in self.os_of:
            if not _NAME.fullmatch(name):
                raise ValueError(f"switches.os_of: {name!r} is not a switch name")
        names = [s.name for s in self.fabric]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"switch {dup[0]} is listed twice in switches.fabric")
        return self
