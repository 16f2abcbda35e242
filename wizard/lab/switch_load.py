"""The operator's switch step, done for a simulated fabric in one call (tests and benchmarks): switch-config's own
renderer fed with the port map of the simulated cabling, each file loaded into its switch the way that switch's
NOS loads it. The demo goes the long way (discovery's LLDP view, `switch-config`, `lab switch-apply`)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.lab.switch_store import apply_file

if TYPE_CHECKING:
    from wizard.lab.cluster import Lab
    from wizard.switchcfg.model import SwitchQos

VENDOR_OF = {"cumulus": "nvue", "sonic": "sonic", "eos": "eos"}


def configure_fabric(
    lab: Lab, qos: SwitchQos | None = None, *, uplinks: bool = True, no_watchdog: Collection[str] = ()
) -> None:
    """Render and load every leaf's (and with ``uplinks`` the uplinks' and spine's) configuration; a file its NOS
    rejects raises AssertionError with the NOS's own message. Switches named in ``no_watchdog`` get their file as
    switch-config writes it with `switches.pfc_watchdog.enabled: false`."""
    import dataclasses

    from wizard.switchcfg import render
    from wizard.switchcfg.model import SwitchPortUse

    fab = lab.fabric.switches
    assert fab is not None, "no modelled switches (--profile rails-16)"
    if qos is None:
        qos = default_qos()
    uses: dict[str, list[SwitchPortUse]] = {}
    for (host, index), sp in sorted(fab.attach.items()):
        uses.setdefault(sp.switch, []).append(SwitchPortUse(sp.switch, sp.port, host, lab.data_netdevs[index], index))
    for switch in fab.switches.values():
        if switch.role == "mgmt" or (switch.role == "spine" and not uplinks):
            continue
        fabric = switch.uplinks if uplinks else []
        mine = qos
        if switch.name in no_watchdog:
            mine = dataclasses.replace(qos, watchdog=qos.watchdog.model_copy(update={"enabled": False}))
        text = render(VENDOR_OF[switch.os], switch.name, uses.get(switch.name, []), mine, fabric, switch.role)
        result = apply_file(lab, switch.name, text)
        assert result.exit_code == 0 and result.applied, f"{switch.name} ({switch.os}): {result.output}"


def default_qos() -> SwitchQos:
    """The QoS of the shipped rails-16 answers."""
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import demo_answers
    from wizard.switchcfg.model import SwitchQos

    return SwitchQos.from_answers(load_answers(demo_answers("rails-16")))


def configure_demo_state(
    state_dir: Path,
    answers_file: Path | None = None,
    switch_os: str | None = None,
    *,
    uplinks: bool = True,
    no_watchdog: Collection[str] = (),
) -> None:
    """Load switch-config's files into the simulated switches a rails-16 demo state directory keeps (what `lab
    switch-apply` does with the files), so the next `--demo` run meets configured switches."""
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import demo_answers
    from wizard.lab.demo_switches import demo_lab

    answers = load_answers(answers_file or demo_answers("rails-16"))
    lab = demo_lab(answers, state_dir, "rails-16", switch_os, [])
    configure_fabric(lab, uplinks=uplinks, no_watchdog=no_watchdog)
