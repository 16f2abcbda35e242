"""The NOS a simulated switch runs: Cumulus Linux (NVUE), SONiC (CONFIG_DB) or Arista EOS.

A NOS model names the front-panel ports, decides what LLDP advertises for them, starts from that NOS's documented
defaults and loads a configuration file the way that NOS does (``nv`` commands, ``config load``, a configuration
session). A switch keeps the files it accepted (its saved configuration); its ports' effective state is always
rebuilt from the defaults plus those files, never set by hand, so an incast test sees exactly what was loaded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.switches import Switch, SwitchFabric

NOS_NAMES = ("cumulus", "sonic", "eos")
# the SwitchPort fields a NOS derives (the rest is cabling and identity)
FRESH_FIELDS = ("mtu", "trust", "dscp_prio", "pfc_priorities", "headroom", "ecn_prios", "pfc_watchdog",
                "strict_prios", "app_dscp", "app_udp", "send_dcbx", "pfc_willing")  # fmt: skip


@dataclass
class LoadResult:
    """What the NOS's own loader printed and returned, and whether the file changed the running configuration."""

    exit_code: int
    output: str
    applied: bool


def model(name: str) -> ModuleType:
    if name not in NOS_NAMES:
        raise ValueError(f"unknown switch OS {name!r} (one of {', '.join(NOS_NAMES)})")
    return importlib.import_module(f"wizard.lab.switch_os.{name}")


def descr_of(name: str) -> str:
    """The LLDP system description the NOS sends."""
    return str(model(name).DESCR)


def _state(switch: Switch) -> object:
    """The NOS's configuration state: its defaults, then every file the switch accepted, in order."""
    nos = model(switch.os)
    state = nos.initial(switch)
    for text in switch.loaded:
        nos.run(state, switch, text)
    return state


def rebuild(fab: SwitchFabric, switch: Switch) -> None:
    """Recompute every port's effective state from the NOS defaults and the loaded files, then the faults."""
    from wizard.lab.switches import SwitchPort, apply_faults

    nos = model(switch.os)
    state = _state(switch)
    for sp in switch.ports.values():
        blank = SwitchPort(sp.switch, sp.port)
        for name in FRESH_FIELDS:
            setattr(sp, name, getattr(blank, name))
    nos.effective(state, switch)
    apply_faults(fab, switch)


def load(fab: SwitchFabric, switch: Switch, text: str) -> LoadResult:
    """Load one configuration file into the switch as its NOS would; an accepted file is kept and applied."""
    nos = model(switch.os)
    result: LoadResult = nos.run(_state(switch), switch, text)
    if result.applied and switch.loaded[-1:] != [text]:  # loading the same file again changes nothing
        switch.loaded.append(text)
    if result.applied:
        rebuild(fab, switch)
    return result


def port_map_text(switch: Switch) -> str:
    """What the NOS shows for its port names (SONiC: ``show interfaces alias``); empty where names are plain."""
    fn = getattr(model(switch.os), "show_alias", None)
    return str(fn(switch)) if fn is not None else ""
