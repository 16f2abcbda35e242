"""Parser for /proc/net/bonding/bondX: mode, hash policy, LACP aggregator and per-slave state."""

from __future__ import annotations

import re

from wizard.parsers._text import prompt_command, require_lines, to_int
from wizard.parsers.common import Parsed, ParseError

# --------------------------------------------------------------------------------------------- bonding


class BondAggregator(Parsed):
    """The 802.3ad `Active Aggregator Info` block."""

    aggregator_id: int | None = None
    number_of_ports: int | None = None
    actor_key: int | None = None
    partner_key: int | None = None
    partner_mac: str | None = None


class BondSlave(Parsed):
    """One `Slave Interface:` block; LACP port states come from its `details ... lacp pdu` blocks."""

    interface: str
    mii_status: str | None = None
    speed_mbps: int | None = None
    duplex: str | None = None
    link_failure_count: int | None = None
    permanent_hw_addr: str | None = None
    queue_id: int | None = None
    aggregator_id: int | None = None
    actor_churn_state: str | None = None
    partner_churn_state: str | None = None
    actor_port_state: int | None = None
    partner_port_state: int | None = None
    partner_system_mac: str | None = None


class Bonding(Parsed):
    """One /proc/net/bonding/bondX file; ``mode`` is the iproute2 name (802.3ad, balance-xor, ...)."""

    name: str | None = None
    driver_version: str | None = None
    mode: str | None = None
    mode_description: str | None = None
    transmit_hash_policy: str | None = None
    mii_status: str | None = None
    mii_polling_interval: int | None = None
    up_delay: int | None = None
    down_delay: int | None = None
    primary_slave: str | None = None
    currently_active_slave: str | None = None
    lacp_active: str | None = None
    lacp_rate: str | None = None
    min_links: int | None = None
    ad_select: str | None = None
    system_mac: str | None = None
    aggregator: BondAggregator | None = None
    no_active_aggregator: bool = False
    slaves: list[BondSlave] = []

    def slave(self, interface: str) -> BondSlave | None:
        """Return the slave named ``interface``."""
        return next((s for s in self.slaves if s.interface == interface), None)


_BOND_MODES = {
    "load balancing (round-robin)": "balance-rr",
    "fault-tolerance (active-backup)": "active-backup",
    "load balancing (xor)": "balance-xor",
    "fault-tolerance (broadcast)": "broadcast",
    "IEEE 802.3ad Dynamic link aggregation": "802.3ad",
    "transmit load balancing": "balance-tlb",
    "adaptive load balancing": "balance-alb",
}
_BOND_KEY = re.compile(r"^(\s*)([A-Za-z][\w .()/-]*?):\s*(.*?)\s*$")
_AGG_KEYS = {
    "Aggregator ID": "aggregator_id",
    "Number of ports": "number_of_ports",
    "Actor Key": "actor_key",
    "Partner Key": "partner_key",
}
_BOND_STR_KEYS = {
    "MII Status": "mii_status",
    "LACP active": "lacp_active",
    "LACP rate": "lacp_rate",
    "Aggregator selection policy (ad_select)": "ad_select",
    "System MAC address": "system_mac",
}
_BOND_INT_KEYS = {
    "MII Polling Interval (ms)": "mii_polling_interval",
    "Up Delay (ms)": "up_delay",
    "Down Delay (ms)": "down_delay",
    "Min links": "min_links",
}
_SLAVE_KEYS = {
    "MII Status": "mii_status",
    "Duplex": "duplex",
    "Permanent HW addr": "permanent_hw_addr",
    "Actor Churn State": "actor_churn_state",
    "Partner Churn State": "partner_churn_state",
}
_SLAVE_INT_KEYS = {
    "Link Failure Count": "link_failure_count",
    "Slave queue ID": "queue_id",
    "Aggregator ID": "aggregator_id",
}


def _none_word(value: str) -> str | None:
    return None if value in ("", "None", "none", "N/A") else value


def _bond_field(bond: Bonding, key: str, value: str) -> None:
    if key == "Ethernet Channel Bonding Driver":
        bond.driver_version = value
    elif key == "Bonding Mode":
        bond.mode_description = value
        bond.mode = next((m for d, m in _BOND_MODES.items() if value.startswith(d)), value)
    elif key == "Transmit Hash Policy":
        bond.transmit_hash_policy = value.split(" (")[0]
    elif key == "Primary Slave":
        bond.primary_slave = _none_word(value.split(" (")[0])
    elif key == "Currently Active Slave":
        bond.currently_active_slave = _none_word(value)
    elif key in _BOND_STR_KEYS:
        setattr(bond, _BOND_STR_KEYS[key], value)
    elif key in _BOND_INT_KEYS:
        setattr(bond, _BOND_INT_KEYS[key], to_int(value))


def _slave_field(slave: BondSlave, key: str, value: str) -> None:
    if key == "Speed":
        slave.speed_mbps = to_int(value.split()[0]) if value else None
    elif key in _SLAVE_KEYS:
        setattr(slave, _SLAVE_KEYS[key], _none_word(value))
    elif key in _SLAVE_INT_KEYS:
        setattr(slave, _SLAVE_INT_KEYS[key], to_int(value))


def parse_bonding(text: str) -> Bonding:
    """Parse /proc/net/bonding/bondX (any driver age: v3.2 .. kernel-release driver lines)."""
    bond = Bonding()
    slave: BondSlave | None = None
    block: str | None = None  # 'aggregator', 'actor' or 'partner' while inside an indented block
    for line in require_lines(text, "/proc/net/bonding"):
        if prompt_command(line) is not None or line.startswith("cat "):
            if match := re.search(r"/proc/net/bonding/(\S+)", line):
                bond.name = match.group(1)
            continue
        if "has no active aggregator" in line:
            bond.no_active_aggregator = True
            continue
        match = _BOND_KEY.match(line)
        if match is None:
            block = None
            continue
        indent, key, value = match.groups()
        if key == "Slave Interface":
            slave = BondSlave(interface=value)
            bond.slaves.append(slave)
            block = None
        elif key == "Active Aggregator Info":
            bond.aggregator, block = BondAggregator(), "aggregator"
        elif key.startswith("details ") and slave is not None:
            block = "actor" if "actor" in key else "partner"
        elif indent and block == "aggregator" and bond.aggregator is not None:
            if key in _AGG_KEYS:
                setattr(bond.aggregator, _AGG_KEYS[key], to_int(value))
            elif key == "Partner Mac Address":
                bond.aggregator.partner_mac = value
        elif indent and block in ("actor", "partner") and slave is not None:
            if key == "port state":
                setattr(slave, f"{block}_port_state", to_int(value))
            elif key == "system mac address" and block == "partner":
                slave.partner_system_mac = value
        elif slave is not None:
            _slave_field(slave, key, value)
        else:
            _bond_field(bond, key, value)
    if bond.mode is None and bond.driver_version is None:
        raise ParseError("no 'Bonding Mode:' or 'Ethernet Channel Bonding Driver:' line: not a bonding file")
    return bond
