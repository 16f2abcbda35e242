"""The ofed stage's plan: pure function of the answers, discovery facts and the stage's own facts."""

from __future__ import annotations

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.ofed import support as sup
from steps.ofed.facts import RDMA_MODULES, TOOL_PACKAGES, OfedFacts
from steps.ofed.firmware import assess_firmware, describe_old
from steps.ofed.repo import apt, move_legacy_doca_key, repo_setup
from steps.ofed.state import State, assess
from wizard.answers.sections import OfedSection
from wizard.engine.step import Change, HostPlan, Impact, RemoteCommand

INSTALL_TIMEOUT_S = 3600.0  # DKMS builds the kernel modules for the running kernel: tens of minutes on slow hosts
UNINSTALL_SCRIPT = "/usr/sbin/ofed_uninstall.sh"
APT_OSES = ("ubuntu", "debian")


def ssh_over_connectx(disc: DiscoveryFacts) -> NicPort | None:
    """The ConnectX port the SSH session arrives on (directly, as a bond slave or under a VLAN), if any."""
    ssh = disc.ssh_interface
    if not ssh:
        return None
    for port in disc.ports:
        if port.netdev and (ssh == port.netdev or ssh.startswith(port.netdev + ".") or port.master == ssh):
            return port
    return None


def card_blockers(host: str, disc: DiscoveryFacts, release: sup.Release) -> list[str]:
    """One blocker per card the release cannot drive, naming host, PCI functions, netdevs and the fix."""
    cards: dict[str, list[NicPort]] = {}
    for port in disc.ports:
        family = sup.FAMILY.get(port.device_id or "")
        if family and release.unsupported(family):
            cards.setdefault(port.card, []).append(port)
    blockers = []
    for ports in cards.values():
        family = sup.FAMILY[ports[0].device_id or ""]
        where = ", ".join(f"{p.pci} ({p.netdev or 'no netdev'})" for p in ports)
        fix = {
            "ConnectX-4": 'set ofed.doca_version to a 2.9.x LTS release (e.g. "2.9.1"), or ofed.stack: mlnx_ofed '
            "with mlnx_ofed_version 24.10-x (24.10 LTS), or ofed.stack: inbox",
            "ConnectX-8": "set ofed.stack: doca with doca_version 2.10.0 or later",
            "BlueField-3": "set ofed.stack: doca (BlueField-3 needs DOCA-Host)",
        }.get(family, "choose a release that lists this adapter in its General Support page")
        blockers.append(
            f"{host}: {family} (15b3:{ports[0].device_id}) at {where}: {release.unsupported(family)}; fix: {fix}"
        )
    return blockers


def build_plan(stage: str, host: str, ofed: OfedSection, disc: DiscoveryFacts, facts: OfedFacts) -> HostPlan:
    plan = HostPlan(stage=stage, host=host)
    release = sup.release(ofed)
    plan.notes.append(_stack_note(release))
    if disc.os_id not in APT_OSES:
        plan.blockers.append(
            f"{host}: {disc.os_pretty or disc.os_id or 'unknown OS'} is not apt-based; this stage installs on"
            " Ubuntu/Debian only (install the stack by hand, then set ofed.stack to match)"
        )
        return plan
    plan.blockers += card_blockers(host, disc, release)
    firmware = assess_firmware(disc, facts, release)
    if firmware.old:
        plan.notes.append(
            describe_old(host, firmware, release) + ". Not a blocker: the stack installs, but the firmware check fails"
            " until the cards are updated"
        )
    state = assess(ofed, facts)
    changes: list[Change] = []
    if state.foreign:
        changes.append(_uninstall(state.foreign, facts))
    if release.stack == "inbox":
        stack, load = _inbox_changes(facts, state)
    else:
        stack, load = _ofed_changes(plan, host, ofed, disc, facts, state, release)
    # Driver (re)load or reboot comes last: everything else is in place when the new driver starts.
    changes += stack + _time_sync(ofed, facts) + load
    if plan.blockers:
        return plan
    _first_apt_updates(changes)
    plan.changes = changes
    if not changes:
        plan.noop_reason = _noop_reason(ofed, facts, state)
    return plan


def _stack_note(release: sup.Release) -> str:
    if release.stack == "doca":
        return (
            f"{release.label} (doca-ofed profile): NVIDIA's current host stack. MLNX_OFED's last standalone release is"
            " 24.10 LTS and new features ship only in DOCA-OFED. It replaces the distribution's rdma-core with NVIDIA's"
            " build and brings mlnx_qos, show_gids, cma_roce_mode/tos, ibdev2netdev and the ECN sysfs tree."
        )
    if release.stack == "mlnx_ofed":
        return (
            f"{release.label}: legacy stack, kept for fleets already on it. 24.10 LTS is its last standalone release"
            " (bug and security fixes only); DOCA-OFED is the equivalent current package."
        )
    return (
        "inbox rdma-core: the distribution's kernel drivers and rdma-core; RDMA devices are named"
        " rocep<bus>s<slot>f<fn>, QoS uses iproute2 dcb (no mlnx_qos, no ECN sysfs tree) and GPUDirect uses"
        " DMA-BUF (no nvidia-peermem)."
    )


def _uninstall(found: str, facts: OfedFacts) -> Change:
    # DOCA-Host Installation and Upgrade, "Uninstalling Software from Host" (deb-based): apt remove --purge of the
    # doca/flexio/dpa packages, /usr/sbin/ofed_uninstall.sh --force, apt-get autoremove.
    commands = []
    if facts.stack_packages:
        commands.append(apt("remove", "--purge", "-y", *facts.stack_packages, timeout_s=INSTALL_TIMEOUT_S))
    if facts.uninstall_script:
        commands.append(RemoteCommand(argv=[UNINSTALL_SCRIPT, "--force"], timeout_s=INSTALL_TIMEOUT_S))
    commands.append(apt("autoremove", "-y", timeout_s=INSTALL_TIMEOUT_S))
    return Change(
        summary=f"Uninstall {found} as NVIDIA documents",
        why="NVIDIA requires removing an installed DOCA/MLNX_OFED before installing another version or stack;"
        " RDMA applications on this host stop working until the new stack is loaded",
        impact=Impact.DISRUPTIVE,
        commands=commands,
    )


def _inbox_changes(facts: OfedFacts, state: State) -> tuple[list[Change], list[Change]]:
    changes, load = [], []
    # After an OFED uninstall (ofed_uninstall.sh removes NVIDIA's rdma-core builds) every tool package comes back.
    missing = list(TOOL_PACKAGES) if state.foreign else [p for p in TOOL_PACKAGES if not facts.installed(p)]
    if missing:
        changes.append(
            Change(
                summary=f"Install the distribution's RDMA userspace: {' '.join(missing)}",
                why="rdma-core (udev naming, module loading), ibv_devinfo, ibstat and perftest from the distribution",
                commands=[apt("install", "-y", *missing)],
            )
        )
    if state.foreign:
        load.append(
            Change(
                summary="Reboot to load the distribution's RDMA kernel modules",
                why="the OFED modules removed from disk are still loaded; a reboot brings back the inbox mlx5 driver",
                impact=Impact.REBOOT,
                reboot=True,
            )
        )
    elif absent := [m for m in RDMA_MODULES if m not in facts.modules]:
        load.append(
            Change(
                summary=f"Load the RDMA kernel modules {' '.join(absent)}",
                why="rdma-core loads them at boot for present hardware; load them now for this run",
                commands=[RemoteCommand(argv=["modprobe", "-a", *absent])],
            )
        )
    return changes, load


def _ofed_changes(
    plan: HostPlan,
    host: str,
    ofed: OfedSection,
    disc: DiscoveryFacts,
    facts: OfedFacts,
    state: State,
    release: sup.Release,
) -> tuple[list[Change], list[Change]]:
    changes = []
    install = not state.wanted_installed
    if install:
        changes += _prerequisites(ofed, disc, facts)
        setup = repo_setup(ofed, facts, sup.os_label(disc.os_id, disc.os_version), fresh=bool(state.foreign))
        plan.blockers += [f"{host}: {b}" for b in setup.blockers]
        plan.notes.append(f"Packages come from {setup.description}.")
        if setup.keys:
            changes.append(
                Change(
                    summary="Import NVIDIA's package signing key",
                    why="apt verifies the repository with this key; it is in place before any source list names it",
                    commands=setup.keys,
                )
            )
        if setup.files or setup.commands:
            changes.append(
                Change(
                    summary=f"Add {setup.description}",
                    why=f"apt must find the {release.label} packages",
                    files=setup.files,
                    commands=setup.commands or [apt("update")],
                )
            )
        package = "doca-ofed" if release.stack == "doca" else "mlnx-ofed-basic"
        changes.append(
            Change(
                summary=f"Install {release.label} ({package})",
                why="DKMS builds NVIDIA's kernel modules for the running kernel; the package replaces the"
                " distribution's rdma-core/libibverbs, so stop RDMA applications first",
                impact=Impact.DISRUPTIVE,
                commands=[apt("install", "-y", package, timeout_s=INSTALL_TIMEOUT_S)],
            )
        )
    else:
        if ofed.source == "vendor" and (move := move_legacy_doca_key(ofed, facts)):
            changes.append(move)
        missing = [p for p in TOOL_PACKAGES if not facts.installed(p)]
        if missing:
            changes.append(
                Change(
                    summary=f"Install the RDMA tools {' '.join(missing)} from {release.label}",
                    why="the checks and later stages use ibv_devinfo and perftest",
                    commands=[apt("install", "-y", *missing)],
                )
            )
    reload = install or not sup.driver_matches(facts.driver_version, facts.ofed_version)
    return changes, [_reload(ofed, disc, facts, release)] if reload else []


def _prerequisites(ofed: OfedSection, disc: DiscoveryFacts, facts: OfedFacts) -> list[Change]:
    # "Installation and upgrade requirements: Installed kernel headers that match the version of the currently
    # running kernel" (DOCA-Host Installation and Upgrade); curl and gpg fetch and dearmor the repository key.
    wanted = [] if facts.kernel_headers else [f"linux-headers-{disc.kernel}"]
    if ofed.source == "vendor":
        wanted += [] if facts.installed("curl") else ["curl"]
        wanted += [] if facts.installed("gnupg") or facts.installed("gpg") else ["gnupg"]
    if not wanted:
        return []
    why = []
    if not facts.kernel_headers:
        why.append("DKMS compiles the driver against the running kernel's headers")
    if set(wanted) & {"curl", "gnupg"}:
        why.append("the repository key is fetched with curl and converted with gpg")
    return [
        Change(
            summary=f"Install prerequisites: {' '.join(wanted)}",
            why="; ".join(why),
            commands=[apt("install", "-y", *wanted, timeout_s=1800)],
        )
    ]


def _reload(ofed: OfedSection, disc: DiscoveryFacts, facts: OfedFacts, release: sup.Release) -> Change:
    port = ssh_over_connectx(disc)
    if port is not None or ofed.driver_reload == "reboot":
        why = (
            f"SSH arrives on {disc.ssh_interface} over ConnectX port {port.netdev} ({port.pci}): restarting the driver"
            " would cut this session, so the host reboots instead and the run reconnects"
            if port is not None
            else "ofed.driver_reload is reboot"
        )
        return Change(summary=f"Reboot to load the {release.label} driver", why=why, impact=Impact.REBOOT, reboot=True)
    commands = []
    if "nvidia_peermem" in facts.modules:
        # openibd cannot unload ib_core while nvidia_peermem holds it (Mellanox/doca-driver-build PR #481).
        commands.append(RemoteCommand(argv=["modprobe", "-r", "nvidia_peermem"]))
    commands.append(RemoteCommand(argv=["/etc/init.d/openibd", "restart"], timeout_s=600))
    return Change(
        summary=f"Restart the driver with the {release.label} modules (/etc/init.d/openibd restart)",
        why="loads the new mlx5_core/mlx5_ib: every RDMA port goes down for a few seconds and RDMA devices are"
        " renamed mlx5_N (later stages rediscover them); SSH uses a non-ConnectX interface so it stays up",
        impact=Impact.DISRUPTIVE,
        commands=commands,
    )


def _time_sync(ofed: OfedSection, facts: OfedFacts) -> list[Change]:
    if ofed.time_sync == "none" or facts.active("chrony") or facts.active("systemd-timesyncd"):
        return []
    commands = [] if facts.installed("chrony") else [apt("install", "-y", "chrony")]
    commands.append(RemoteCommand(argv=["systemctl", "enable", "--now", "chrony"]))
    return [
        Change(
            summary="Install and enable chrony" if len(commands) > 1 else "Enable and start chrony",
            why="no time-sync daemon is active; NCCL, Ray and cross-host logs need clocks in step",
            commands=commands,
        )
    ]


def _first_apt_updates(changes: list[Change]) -> None:
    """Refresh package lists once, before the first apt-get install that does not follow a refresh."""
    for change in changes:
        for index, command in enumerate(change.commands):
            if command.argv[3:4] == ["update"]:
                return
            if command.argv[3:4] == ["install"]:
                change.commands.insert(index, apt("update"))
                return


def _noop_reason(ofed: OfedSection, facts: OfedFacts, state: State) -> str:
    parts = [f"{state.installed_label} is installed"]
    if facts.driver_version:
        parts.append(f"its driver is loaded (mlx5_core {facts.driver_version})")
    parts.append("RDMA tools present")
    if ofed.time_sync == "chrony":
        parts.append("time sync: " + ("chrony active" if facts.active("chrony") else "systemd-timesyncd active"))
    return "; ".join(parts)
