"""Fault injection specs for the lab: ``HOST:KIND[=ARG]`` (HOST is a leaf switch for switch-side kinds)."""

from __future__ import annotations

from dataclasses import dataclass

# kind -> whether an argument is required (True), optional (None) or refused (False)
FAULT_KINDS: dict[str, bool | None] = {
    "link_down": True,
    "crosswire": False,
    "mtu_mismatch": True,
    "pfc_off": False,
    "no_peermem": False,
    "old_firmware": False,
    "ssh_drop": None,
    "unreachable": False,
    "sudo_refused": False,
    "sudo_password": False,
    "auth_refused": False,
    "lockout": None,
    "user_nccl_conf": None,
    "memlock_limited": None,
    "nm_renderer": False,
    "acs_enabled": False,
    "iommu_translated": False,
    "pcie_downgrade": None,
    "vpi_ib_mode": None,
    "wrong_leaf": None,
    "switch_pfc_off": None,
    "switch_mtu": None,
    "switch_ecn_off": None,
    "pfc_storm": None,
    "flap": None,
    "locale": None,
    "sudo_lecture": False,
    "motd": None,
    "missing": True,
    "hang": None,
    "engine_socket": False,
    "no_sm": False,
    "pkey_mismatch": None,
    "ib_link_degraded": None,
    "mixed_link_layer": None,
    "hf_logged_out": False,
    "unit_disabled": None,
    "gid_reorder": None,
    "no_boot": False,
    "degraded": True,
    "degraded_uplink": None,
}

FAULT_HELP = {
    "link_down": "link_down=NETDEV   the port has no link (cable pulled)",
    "crosswire": "crosswire          the two cards' cables are swapped",
    "mtu_mismatch": "mtu_mismatch=NETDEV the port cannot go above MTU 1500 (firmware limit)",
    "pfc_off": "pfc_off            lldpad runs and resets PFC after every change",
    "no_peermem": "no_peermem         modprobe nvidia-peermem fails",
    "old_firmware": "old_firmware       ConnectX firmware 14.20.1010 (older than DOCA supports)",
    "ssh_drop": "ssh_drop[=TEXT]    the SSH connection dies once while a matching command runs",
    "unreachable": "unreachable        nothing listens on the SSH port",
    "sudo_refused": "sudo_refused       sudo asks for a password and refuses",
    "sudo_password": "sudo_password      sudo asks for a password (sudo -S: any non-empty line is accepted)",
    "auth_refused": "auth_refused       the client key is rejected",
    "lockout": "lockout[=TEXT]     a change cuts the management network (after the first command matching TEXT,\n"
    "                   default 'netplan apply') until an armed revert restores it",
    "user_nccl_conf": "user_nccl_conf[=USER] ~USER/.nccl.conf (default root, as the services run) sets NCCL_IB_TC=0",
    "memlock_limited": "memlock_limited[=KB] SSH sessions get ulimit -l KB (default 8192) instead of unlimited",
    "nm_renderer": "nm_renderer        netplan renders with NetworkManager (01-network-manager-all.yaml); networkd off",
    "acs_enabled": "acs_enabled        PCIe ACS redirect on the switch ports (GPU<->NIC P2P goes via the root complex)",
    "iommu_translated": "iommu_translated   intel_iommu=on without iommu=pt: DMA translated (DMA-FQ), ACS enabled",
    "pcie_downgrade": "pcie_downgrade[=NETDEV|GPUn] the card (default: first port's) trained at half its PCIe width",
    "vpi_ib_mode": "vpi_ib_mode[=NETDEV] firmware sets the port (default: the first card's last) to InfiniBand\n"
    "                   at the next boot (mlxconfig LINK_TYPE_Pn=IB(1))",
    "wrong_leaf": "wrong_leaf[=NETDEV] (switched profiles) the port (default: rail 0's) is cabled to the next rail's\n"
    "                   leaf: LLDP names that leaf and the port sits in the wrong rail's segment",
    "switch_pfc_off": "switch_pfc_off[=NETDEV] (switched profiles) its leaf port has no PFC on priority 3",
    "switch_mtu": "switch_mtu[=NETDEV] (switched profiles) its leaf port has MTU 1500: jumbo frames are dropped",
    "switch_ecn_off": "switch_ecn_off[=NETDEV] (switched profiles) its leaf port marks no ECN\n"
    "                   (no CNPs under congestion)",
    "pfc_storm": "pfc_storm[=NETDEV] (switched profiles) the port (default: rail 0's) sends PFC pause frames on its\n"
    "                   lossless priority without end (receive path hung): only a PFC watchdog on its leaf port\n"
    "                   stops the pauses from stalling everyone who sends to it",
    "flap": "flap[=NETDEV]      the port's link goes down and up every 10 s: link_down_events_phy, carrier_changes\n"
    "                   and CRC/symbol errors rise",
    "locale": "locale[=LOCALE]    logins get LANG=LOCALE (default de_DE.UTF-8): ethtool and date print German unless\n"
    "                   LC_ALL=C (wizard/lab/strange.py)",
    "sudo_lecture": "sudo_lecture       the first sudo prints the usual lecture on stderr",
    "motd": "motd[=TEXT]        ~/.bashrc echoes a banner on stdout in every session, exec sessions included",
    "missing": "missing=TOOL       TOOL is on no PATH (command not found, exit 127)",
    "hang": "hang[=TEXT]        the first command containing TEXT (default 'apt-get install') hangs until its SSH\n"
    "                   client signals it (wizard/lab/hang.py)",
    "engine_socket": "engine_socket      the inference engine's bundled NCCL finds no RDMA device (NET/IB : No device\n"
    "                   found) and carries its traffic over TCP sockets; /health still answers",
    "no_sm": "no_sm              (ib-seed003) the host's ports are cabled to ib-sw-3, a switch with no subnet manager\n"
    "                   and no link to the managed ones: they train but stay in Initializing",
    "pkey_mismatch": "pkey_mismatch[=NETDEV] (ib-seed003) the SM left the port (default: the first) out of the\n"
    "                   default partition: its P_Key table holds only 0x8002",
    "ib_link_degraded": "ib_link_degraded[=NETDEV[:1X|GBPS]] (ib-seed003) the port (default: the first) trained at 1X\n"
    "                   (a bad lane) or at a lower rate (e.g. :56, 4X FDR)",
    "mixed_link_layer": "mixed_link_layer[=NETDEV] (ib-seed003) a VPI port (default: the last) left in Ethernet mode\n"
    "                   (LINK_TYPE=ETH(2)); cabled into an IB switch it never gets a link (it keeps its name)",
    "hf_logged_out": "hf_logged_out      root never ran `hf auth login`: no Hugging Face token for gated models",
    "unit_disabled": "unit_disabled[=UNIT] something on the host (a config-management run, a preset) disables UNIT\n"
    "                   (default roce-wizard-qos.service) before the next boot: what it re-applies is lost then",
    "gid_reorder": "gid_reorder[=NETDEV] when the port (default: any) goes down and up, its IPv4 GIDs come back at\n"
    "                   other indices (the old slots still held by a running job's queue pairs)",
    "no_boot": "no_boot            the host does not come back from its next reboot: its SSH port stays closed\n"
    "                   (stopped at boot before sshd, e.g. an emergency shell after a bad /etc/fstab line)",
    "degraded": "degraded=NETDEV[:GBPS] the port trained at GBPS (e.g. :200 on a 400G port: ethtool shows 200000Mb/s,\n"
    "                   perftest gets at most that, both ways); without GBPS a bad cable: full speed, but symbol and\n"
    "                   CRC errors rise while traffic flows and the port carries about 60 percent of its line rate",
    "degraded_uplink": "degraded_uplink[=SPINE[:GBPS]] (rails-N) HOST is a leaf switch (e.g. leaf-su02-r3): its\n"
    "                   uplink to SPINE (default spine-0) trained at GBPS (default a quarter of its rate); every flow\n"
    "                   the ECMP hash sends over it is that slow, flows within one leaf or over other spines are not",
}


@dataclass(frozen=True)
class Fault:
    """One injected fault on one host (or, for a switch-side kind such as ``degraded_uplink``, on one switch)."""

    host: str
    kind: str
    arg: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.kind}" + (f"={self.arg}" if self.arg is not None else "")


def parse_fault(spec: str) -> Fault:
    """Parse ``HOST:KIND[=ARG]``; a bad spec raises ``ValueError`` with a one-line message naming it."""
    text = spec.strip()
    host, sep, rest = text.partition(":")
    if not sep or not host or not rest:
        raise ValueError(f"bad fault spec {spec!r}: expected HOST:KIND[=ARG]")
    kind, eq, arg = rest.partition("=")
    if kind not in FAULT_KINDS:
        known = ", ".join(FAULT_KINDS)
        raise ValueError(f"bad fault spec {spec!r}: unknown kind {kind!r} (known: {known})")
    wants = FAULT_KINDS[kind]
    if wants is True and not arg:
        raise ValueError(f"bad fault spec {spec!r}: {kind} needs an argument ({FAULT_HELP[kind]})")
    if wants is False and eq:
        raise ValueError(f"bad fault spec {spec!r}: {kind} takes no argument")
    if eq and not arg:
        raise ValueError(f"bad fault spec {spec!r}: empty argument after '='")
    return Fault(host=host, kind=kind, arg=arg if eq else None)
