"""Discovery's LLDP path against the real program: Debian's lldpd on both ends of real veth links.

One host namespace with three rail ports, each cabled (veth) to a leaf namespace whose lldpd is configured the way
that NOS configures its own lldpd:
- SONiC: lldpmgrd runs `lldpcli configure ports <name> lldp portidsubtype local <alias> description <descr>`
  (sonic-buildimage dockers/docker-lldp/lldpmgrd), so the port ID is the alias `etp5`, subtype local; SONiC sends no
  802.1Qaz TLVs;
- EOS: the interface name `Ethernet5/1` as port ID, and with `dcbx mode ieee` the PFC and APP TLVs;
- Cumulus: `swp5`, and `qos roce` turns on the PFC and APP TLVs.
The 802.1Qaz TLVs are sent as lldpd custom TLVs (`configure lldp custom-tlv oui 00,80,c2 subtype 11|12`), which
is also how the receiving lldpd shows any switch's: under unknown-tlvs. Discovery's own probe (`lldpctl -f json`,
parsed in Python) must find the cabling, the alias and the PFC/APP facts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.discovery.lldp import LLDPCTL, probe_lldp
from wizard.executors.base import CommandResult

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("lldpd") is None or shutil.which("ip") is None,
    reason="needs root, iproute2 and lldpd (tests/install-lab-tools.sh installs lldpd)",
)

HOST = f"rwl-host-{os.getpid()}"
# leaf namespace -> (host port, switch port name, LLDP config lines for that port/NOS)
PFC3 = "configure lldp custom-tlv oui 00,80,c2 subtype 11 oui-info 08,08"  # willing 0, 8 TCs, PFC on priority 3
APP_DSCP26 = "configure lldp custom-tlv oui 00,80,c2 subtype 12 oui-info 00,65,00,1a"  # DSCP 26 -> priority 3
LEAVES = {
    "leaf-r0": ("enp24s0np0", "Ethernet32",
                ["configure ports Ethernet32 lldp portidsubtype local etp5 description 'gpu-005 enp24s0np0'"]),
    "leaf-r1": ("enp64s0np0", "Ethernet5_1", ["configure lldp portidsubtype ifname", PFC3, APP_DSCP26]),
    "leaf-r2": ("enp79s0np0", "swp5", ["configure lldp portidsubtype ifname", PFC3, APP_DSCP26]),
}  # fmt: skip
# (A real EOS port is named Ethernet5/1; a Linux interface name cannot hold "/", so the test's leaf uses Ethernet5_1.)


def ns(name: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", name, *argv], capture_output=True, text=True, check=check)


def lldpcli(leaf: str, *words: str) -> None:
    ns(leaf, "lldpcli", "-u", f"/run/{leaf}-{os.getpid()}.sock", *words)


@pytest.fixture(scope="module")
def cabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The host namespace, its lldpd's socket, and the three leaves running theirs; all torn down after."""
    empty = tmp_path_factory.mktemp("lldpd") / "none.conf"
    empty.write_text("")  # -O: no /etc/lldpd.d of this machine
    Path("/run/lldpd").mkdir(exist_ok=True)  # lldpd's privilege-separation chroot (systemd makes it elsewhere)
    names = [HOST, *(f"{leaf}-{os.getpid()}" for leaf in LEAVES)]
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        for name in names:
            subprocess.run(["ip", "netns", "add", name], check=True)
        host_ports = []
        for leaf, (host_port, switch_port, _) in LEAVES.items():
            lns = f"{leaf}-{os.getpid()}"
            subprocess.run(["ip", "link", "add", host_port, "netns", HOST, "type", "veth", "peer", "name",
                            switch_port, "netns", lns], check=True)  # fmt: skip
            ns(HOST, "ip", "link", "set", host_port, "up")
            ns(lns, "ip", "link", "set", switch_port, "up")
            host_ports.append(host_port)
            daemons.append(_lldpd(lns, switch_port, empty))
        daemons.append(_lldpd(HOST, ",".join(host_ports), empty))
        time.sleep(1)
        for leaf, (_, _, config) in LEAVES.items():
            lns = f"{leaf}-{os.getpid()}"
            ns(lns, "lldpcli", "-u", f"/run/{lns}.sock", "configure", "system", "hostname", leaf)
            for line in config:
                ns(lns, "sh", "-c", f"lldpcli -u /run/{lns}.sock {line}")
            ns(lns, "lldpcli", "-u", f"/run/{lns}.sock", "configure", "lldp", "tx-interval", "1")
        yield f"/run/{HOST}.sock"
    finally:
        for d in daemons:
            d.terminate()
            d.wait(timeout=10)
        for name in names:
            subprocess.run(["ip", "netns", "del", name], check=False)


def _lldpd(name: str, ports: str, config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["ip", "netns", "exec", name, "lldpd", "-d", "-u", f"/run/{name}.sock", "-I", ports, "-O", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class HostNamespace:
    """Runs discovery's commands in the host namespace; lldpctl gets this lldpd's socket (-u), nothing else."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    async def run(self, argv: list[str], **_: object) -> CommandResult:
        assert argv == LLDPCTL, argv
        done = ns(HOST, "lldpctl", "-u", self.socket, *argv[1:], check=False)
        return CommandResult(" ".join(argv), done.returncode, done.stdout.rstrip("\n"), done.stderr, 0.0, done.stdout)


def port(netdev: str) -> NicPort:
    return NicPort(pci=f"0000:{len(netdev):02x}:00.0", model="ConnectX-7", netdev=netdev)


async def test_discovery_reads_cabling_sonic_alias_and_pfc_tlvs_from_real_lldpd(cabled: str) -> None:
    facts = DiscoveryFacts(sudo_ok=True, ports=[port(p) for p, _, _ in LEAVES.values()])
    deadline = time.monotonic() + 30
    while True:
        await probe_lldp(HostNamespace(cabled), facts)  # type: ignore[arg-type]
        seen = {p.netdev: p.lldp for p in facts.ports}
        if all(n is not None and n.chassis_name for n in seen.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert facts.lldp_status == "ok", facts.notes
    sonic, eos, cumulus = (seen[p] for p, _, _ in LEAVES.values())
    assert sonic is not None and eos is not None and cumulus is not None, seen
    assert (sonic.chassis_name, sonic.port_id, sonic.port_id_type) == ("leaf-r0", "etp5", "local")
    assert sonic.port_descr == "gpu-005 enp24s0np0" and sonic.pfc_enabled is None, "SONiC sends no PFC TLV"
    assert (eos.chassis_name, eos.port_id, eos.port_id_type) == ("leaf-r1", "Ethernet5_1", "ifname")
    assert (cumulus.chassis_name, cumulus.port_id, cumulus.port_id_type) == ("leaf-r2", "swp5", "ifname")
    for n in (eos, cumulus):
        assert (n.pfc_enabled, n.pfc_willing, n.pfc_capable, n.dcbx) == ([3], False, 8, "ieee")
        assert n.app_dscp == {26: 3}
