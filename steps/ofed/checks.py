"""The ofed stage's verification: stack and driver, modules, an RDMA device per port, tools, time sync, firmware."""

from __future__ import annotations

from steps.discovery.facts import DiscoveryFacts
from steps.ofed import support as sup
from steps.ofed.facts import RDMA_MODULES, OfedFacts
from steps.ofed.firmware import assess_firmware, describe_old, device_of, update_fix
from steps.ofed.state import assess
from wizard.answers.sections import OfedSection
from wizard.engine.step import CheckItem

RERUN = "re-run the stage: roce-wizard --only ofed --yes"


def build_checks(host: str, ofed: OfedSection, disc: DiscoveryFacts, facts: OfedFacts) -> list[CheckItem]:
    release = sup.release(ofed)
    return [
        _stack(ofed, facts, release),
        _driver(facts, release),
        _modules(facts, release),
        _rdma_devices(disc, facts),
        _tools(facts),
        _time_sync(ofed, facts),
        _firmware(host, disc, facts, release),
    ]


def _stack(ofed: OfedSection, facts: OfedFacts, release: sup.Release) -> CheckItem:
    state = assess(ofed, facts)
    detail = f"ofed_info -s: {facts.ofed_stack} {facts.ofed_version}" if facts.ofed_version else "no ofed_info"
    return CheckItem(
        id="stack",
        title=f"{release.label} installed",
        status="pass" if state.wanted_installed else "fail",
        evidence=f"{state.installed_label}; {detail}",
        fix=None if state.wanted_installed else RERUN,
    )


def _driver(facts: OfedFacts, release: sup.Release) -> CheckItem:
    if release.stack == "inbox":
        inbox = facts.driver_version is None
        return CheckItem(
            id="driver",
            title="inbox mlx5 driver loaded",
            status="pass" if inbox else "fail",
            evidence="mlx5_core is the kernel's own module"
            if inbox
            else f"mlx5_core {facts.driver_version} is an OFED build",
            fix=None if inbox else "reboot to load the distribution's mlx5 driver",
        )
    good = sup.driver_matches(facts.driver_version, facts.ofed_version)
    return CheckItem(
        id="driver",
        title=f"{release.label} driver loaded",
        status="pass" if good else "fail",
        evidence=f"mlx5_core {facts.driver_version or '(inbox, no version)'} loaded; installed {facts.ofed_version}",
        fix=None if good else "load the new driver: rmmod nvidia_peermem; /etc/init.d/openibd restart (or reboot)",
    )


def _modules(facts: OfedFacts, release: sup.Release) -> CheckItem:
    missing = [m for m in RDMA_MODULES if m not in facts.modules]
    fix = f"modprobe -a {' '.join(missing)}" if release.stack == "inbox" else "/etc/init.d/openibd restart"
    return CheckItem(
        id="modules",
        title="RDMA kernel modules loaded",
        status="fail" if missing else "pass",
        evidence=f"not loaded: {', '.join(missing)}" if missing else ", ".join(RDMA_MODULES) + " loaded",
        fix=f"{fix}; check dmesg for mlx5 errors" if missing else None,
    )


def _rdma_devices(disc: DiscoveryFacts, facts: OfedFacts) -> CheckItem:
    if not disc.ports:
        return CheckItem(id="rdma_devices", title="RDMA device per port", status="skip", evidence="no ConnectX ports")
    seen, missing = [], []
    for port in disc.ports:
        device = device_of(port, facts)
        name = f"{port.netdev or 'no netdev'} ({port.pci})"
        (seen if device else missing).append(f"{name} -> {device}" if device else name)
    return CheckItem(
        id="rdma_devices",
        title="RDMA device per port",
        status="fail" if missing else "pass",
        evidence=("no RDMA device: " + ", ".join(missing)) if missing else ", ".join(seen),
        fix="check dmesg for mlx5_core/mlx5_ib errors on those functions, then /etc/init.d/openibd restart"
        if missing
        else None,
    )


def _tools(facts: OfedFacts) -> CheckItem:
    devices = set(facts.rdma_by_pci.values()) | set(facts.rdma_by_netdev.values())
    listed = facts.ibv_devices
    perftest = facts.installed("perftest")
    problems = []
    shown = ", ".join(listed or []) or "nothing"
    if listed is None:
        problems.append(f"ibv_devinfo failed: {facts.ibv_error or 'not installed'}")
    elif unlisted := sorted(devices - set(listed)):
        problems.append(f"ibv_devinfo does not list {', '.join(unlisted)}")
    if not perftest:
        problems.append("perftest is not installed")
    return CheckItem(
        id="user_tools",
        title="RDMA user tools work",
        status="fail" if problems else "pass",
        evidence="; ".join(problems) or f"ibv_devinfo lists {shown}; perftest {perftest}",
        fix="apt-get install ibverbs-utils perftest (from the stack's repository)" if problems else None,
    )


def _time_sync(ofed: OfedSection, facts: OfedFacts) -> CheckItem:
    if ofed.time_sync == "none":
        return CheckItem(id="time_sync", title="time sync", status="skip", evidence="ofed.time_sync: none")
    active = [u for u in ("chrony", "systemd-timesyncd") if facts.active(u)]
    states = ", ".join(f"{u} {s}" for u, s in facts.services.items()) or "unknown"
    return CheckItem(
        id="time_sync",
        title="time sync active",
        status="pass" if active else "fail",
        evidence=f"{active[0]} active" if active else states,
        fix=None if active else "systemctl enable --now chrony",
    )


def _firmware(host: str, disc: DiscoveryFacts, facts: OfedFacts, release: sup.Release) -> CheckItem:
    if not release.firmware:
        found = ", ".join(sorted({p.firmware for p in disc.ports if p.firmware})) or "unknown"
        why = "inbox driver: no NVIDIA release to compare with" if release.stack == "inbox" else "no table"
        status = "skip" if release.stack == "inbox" else "warn"
        return CheckItem(
            id="firmware",
            title="firmware supported",
            status=status,
            evidence=f"{why} for {release.label}; firmware found: {found}",
            fix=None if status == "skip" else "compare with the release's General Support page",
        )
    report = assess_firmware(disc, facts, release)
    if report.old:
        return CheckItem(
            id="firmware",
            title="firmware supported",
            status="fail",
            evidence=describe_old(host, report, release),
            fix=update_fix(report),
        )
    return CheckItem(
        id="firmware",
        title="firmware supported",
        status="warn" if report.unknown else "pass",
        evidence="; ".join(report.good + report.unknown) + f" (lines from {release.firmware_source} General Support)",
        fix="check these adapters against the release notes" if report.unknown else None,
    )
