"""Network-namespace hosts with real OpenSSH: the fast lab for connection faults and fan-out.

Each host is a network namespace ``rw-hN`` with its own ``eth0`` plugged into a bridge in ``rw-sw`` (the switch),
and its own ``sshd`` started under ``unshare --uts --mount``: its own hostname, a copy-on-write overlay over /etc
(a user, sudo rules and /etc/hosts private to that host), empty tmpfs homes and its own /run/lock. The test process
reaches the hosts from the root namespace over the veth ``rw-up`` (10.77.0.1/16). A route ``unreachable
10.77.0.0/16`` with a high metric stays as a leak guard, so a lab address can never follow the default route out of
the machine.

Faults are made the way they happen on a rack: the switch port goes down (cable pulled), the listener dies, every
process of the host dies (crash), a firewall rejects or drops SSH, packets are lost at random, sudo wants a password.
Everything created carries the ``rw-`` prefix and is removed by :meth:`NsLab.down`, also after a crash of the test.
Recipe and measurements: ../shared/reference/test-labs.md, section 1.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFIX = "rw-"  # the tests' lab; a benchmark runs its own beside it with another prefix and network
NETWORK = "10.77.0.0/16"
USER = "ops"  # the login on every lab host; sudo without a password unless the host is made to ask for one
SSHD = "/usr/sbin/sshd"
TOOLS = ("ip", "unshare", "iptables", "sudo", "ssh-keygen")


def missing_requirements() -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, mounts)"
    missing = [t for t in TOOLS if shutil.which(t) is None] + ([] if os.path.exists(SSHD) else ["sshd"])
    if missing:
        return f"missing {', '.join(missing)} (tests/install-lab-tools.sh installs them with apt)"
    probe = subprocess.run(["ip", "netns", "add", f"{PREFIX}probe{os.getpid()}"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create network namespaces: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", f"{PREFIX}probe{os.getpid()}"], capture_output=True)
    return None


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip() or result.returncode}")
    return result


def _mac(netns: str | None, device: str) -> str:
    where = ["-n", netns] if netns else []
    return json.loads(sh("ip", *where, "-j", "link", "show", "dev", device).stdout)[0]["address"]


@dataclass
class NsHost:
    index: int
    name: str
    address: str
    workdir: Path
    prefix: str = PREFIX

    @property
    def netns(self) -> str:
        return f"{self.prefix}{self.name}"

    @property
    def switch(self) -> str:
        return f"{self.prefix}sw"

    @property
    def switch_port(self) -> str:
        return f"{self.prefix}p{self.index}"

    @property
    def etc_changes(self) -> Path:
        """The overlay's upper directory: every file the host wrote under /etc."""
        return self.workdir / "etc-up"

    def ns(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", self.netns, *argv, check=check)

    # -- faults -------------------------------------------------------------------------------------------------
    def hang_command(self, command: str) -> Path:
        """``command`` hangs on this host (first on PATH, also under sudo's secure_path) after writing its PID to the
        returned marker, so a test can strike while the wizard waits for it."""
        marker = self.workdir / "bin" / f".{command}.started"
        marker.unlink(missing_ok=True)
        Path(f"{marker}.pids").unlink(missing_ok=True)
        Path(f"{marker}.released").unlink(missing_ok=True)
        # Made here, writable by all: the login user's call and root's call under sudo both append to it. Left to
        # the first call, a root-owned file would refuse the other's PID and that call would hang unreleased.
        pids = Path(f"{marker}.pids")
        pids.touch()
        pids.chmod(0o666)
        wrapper = self.workdir / "bin" / command
        # Every call is recorded: the wizard's plain and sudo probe batches may both run the command at once. A call
        # that records itself after the release read the PIDs finds the release flag and ends at once, as the others
        # did (its PID is written before the flag is looked at, and the flag before the PIDs are read: no gap).
        wrapper.write_text(
            f"#!/bin/sh\necho $$ >> {marker}.pids\n[ -e {marker}.released ] && exit 143\n"
            f"echo $$ > {marker}.tmp && mv {marker}.tmp {marker}\nexec sleep 600\n"
        )
        wrapper.chmod(0o755)
        return marker

    def release_command(self, command: str) -> None:
        """Later calls run the real command; a call hanging now returns (its sleep is ended)."""
        marker = self.workdir / "bin" / f".{command}.started"
        Path(f"{marker}.released").touch()
        (self.workdir / "bin" / command).unlink(missing_ok=True)
        pids = Path(f"{marker}.pids")
        for pid in pids.read_text().split() if pids.exists() else []:
            try:
                os.kill(int(pid), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass

    def pull_cable(self) -> None:
        sh("ip", "-n", self.switch, "link", "set", self.switch_port, "down")

    def plug_cable(self) -> None:
        sh("ip", "-n", self.switch, "link", "set", self.switch_port, "up")

    def kill_listener(self) -> None:
        """sshd stops listening: new connections are refused, open sessions live on (as on a real server)."""
        pid = int((self.workdir / "sshd.pid").read_text())
        os.kill(pid, signal.SIGTERM)

    def crash(self) -> None:
        """Every process of the host dies at once; its kernel (the namespace) closes their sockets."""
        for pid in sh("ip", "netns", "pids", self.netns, check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def firewall(self, rule: str) -> None:
        """``reject`` (RST), ``drop`` (a black hole) or ``loss=N`` (N % of packets dropped at random)."""
        if rule == "reject":
            spec = ["-p", "tcp", "--dport", "22", "-j", "REJECT", "--reject-with", "tcp-reset"]
        elif rule == "drop":
            spec = ["-p", "tcp", "--dport", "22", "-j", "DROP"]
        elif rule.startswith("loss="):
            share = int(rule.split("=", 1)[1]) / 100
            spec = ["-m", "statistic", "--mode", "random", "--probability", f"{share:.2f}", "-j", "DROP"]
        else:
            raise ValueError(rule)
        self.ns("iptables", "-A", "INPUT", *spec)

    def clear_firewall(self) -> None:
        self.ns("iptables", "-F", "INPUT")


class NsLab:
    """``n`` hosts named h1..hN; ``sudo_password`` names hosts whose sudo asks for a password (which ops lacks)."""

    def __init__(self, workdir: Path, prefix: str = PREFIX, network: str = NETWORK) -> None:
        self.workdir = workdir
        self.prefix = prefix
        self.network = ipaddress.ip_network(network)
        self.switch = f"{prefix}sw"
        self.uplink = f"{prefix}up"
        self.gateway = str(self.network.network_address + 1)
        self.hosts: list[NsHost] = []
        self.key_file = workdir / "id_ed25519"
        self.known_hosts = workdir / "known_hosts"

    # Above this many hosts the neighbour (ARP) entries are made permanent: the kernel's ARP table is shared by all
    # namespaces and holds 1,024 dynamic entries by default (net.ipv4.neigh.default.gc_thresh3), and every host
    # adds two (its own for the gateway, the gateway's for it); past 512 hosts new connections stall with
    # "neighbor table overflow". Permanent entries do not count. Smaller labs keep real ARP, so a pulled cable
    # there gives the "no route to host" a real LAN gives.
    STATIC_ARP_ABOVE = 200

    def up(self, n: int, sudo_password: set[str] | frozenset[str] = frozenset()) -> NsLab:
        self.down()  # leftovers of a killed test run
        self.workdir.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        for key in (self.key_file, self.workdir / "hostkey"):
            if not key.exists():
                sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "roce-wizard-nslab", "-f", str(key))
        shutil.copy(self.key_file.with_suffix(".pub"), self.workdir / "authorized_keys")
        (self.workdir / "authorized_keys").chmod(0o644)
        sh("ip", "netns", "add", self.switch)
        sh("ip", "-n", self.switch, "link", "set", "lo", "up")
        sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        sh("ip", "route", "replace", "unreachable", str(self.network), "metric", "4000")
        sh("ip", "link", "add", self.uplink, "type", "veth", "peer", "name", "up0", "netns", self.switch)
        sh("ip", "-n", self.switch, "link", "set", "up0", "master", "br0", "up")
        sh("ip", "addr", "add", f"{self.gateway}/{self.network.prefixlen}", "dev", self.uplink)
        sh("ip", "link", "set", self.uplink, "up")
        host_key = (self.workdir / "hostkey.pub").read_text().split()
        known = []
        uplink_mac = _mac(None, self.uplink) if n > self.STATIC_ARP_ABOVE else None
        for index in range(1, n + 1):
            host = self._start_host(index, sudo_password)
            if uplink_mac:
                sh("ip", "neigh", "replace", host.address, "lladdr", _mac(host.netns, "eth0"), "dev", self.uplink,
                   "nud", "permanent")  # fmt: skip
                sh("ip", "-n", host.netns, "neigh", "replace", self.gateway, "lladdr", uplink_mac, "dev", "eth0",
                   "nud", "permanent")  # fmt: skip
            self.hosts.append(host)
            known.append(f"{host.address} {host_key[0]} {host_key[1]}\n")
        self.known_hosts.write_text("".join(known))
        self._wait_listening()
        return self

    def renice(self, niceness: int) -> None:
        """Every host's sshd (and so the sessions and commands it starts from now on) at this niceness: on a real
        fleet each sshd runs on its own host's CPUs, here all share the machine's cores with the program measured."""
        for host in self.hosts:
            os.setpriority(os.PRIO_PROCESS, int((host.workdir / "sshd.pid").read_text()), niceness)

    def answers(self, cluster: str, **ssh: Any) -> dict[str, Any]:
        """An answers file's content for every lab host, with the lab's key and known_hosts (a real bring-up's);
        ``ssh`` adds or overrides settings of its ssh section."""
        return {
            "version": 1,
            "cluster": {"name": cluster},
            "ssh": {"user": USER, "identity_file": str(self.key_file), "known_hosts": str(self.known_hosts), **ssh},
            "hosts": [{"name": h.name, "address": h.address} for h in self.hosts],
            "inference": {"enabled": False},
        }

    def _start_host(self, index: int, sudo_password: set[str] | frozenset[str]) -> NsHost:
        name = f"h{index}"
        address = str(self.network.network_address + 10 + index)
        workdir = self.workdir / name
        shutil.rmtree(workdir, ignore_errors=True)
        for sub in ("etc-up", "etc-work", "bin"):
            (workdir / sub).mkdir(parents=True)
        (workdir / "bin").chmod(0o1777)  # the host's /usr/local/bin: tests drop wrappers in, wrappers leave markers
        host = NsHost(index, name, address, workdir, self.prefix)
        sh("ip", "netns", "add", host.netns)
        sh("ip", "-n", self.switch, "link", "add", host.switch_port, "type", "veth", "peer", "name", "eth0", "netns",
           host.netns)  # fmt: skip
        sh("ip", "-n", self.switch, "link", "set", host.switch_port, "master", "br0", "up")
        sh("ip", "-n", host.netns, "link", "set", "lo", "up")
        sh("ip", "-n", host.netns, "addr", "add", f"{address}/{self.network.prefixlen}", "dev", "eth0")
        sh("ip", "-n", host.netns, "link", "set", "eth0", "up")
        (workdir / "sshd_config").write_text(
            f"ListenAddress {address}\nPort 22\nHostKey {self.workdir / 'hostkey'}\nPidFile {workdir / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}\nPermitRootLogin no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nUseDNS no\nMaxStartups 200:30:400\n"
            "Subsystem sftp internal-sftp\n"
        )
        sudo_rule = f"{USER} ALL=(ALL) ALL" if name in sudo_password else f"{USER} ALL=(ALL) NOPASSWD: ALL"
        # Runs inside the host's own UTS and mount namespaces, so the user, the sudo rule and /etc/hosts exist only
        # in this host's overlay; the machine's /etc is never written.
        boot = (
            f"hostname {name} && "
            f"mount -t overlay {self.prefix}etc -o lowerdir=/etc,upperdir={workdir / 'etc-up'},"
            f"workdir={workdir / 'etc-work'} /etc && "
            "mount -t tmpfs -o size=16m,mode=755 rw-home /home && "
            "mount -t tmpfs -o size=16m,mode=700 rw-root /root && "
            # Its own /run/lock, as every real host has: the wizard's host lock (wizard/engine/host_lock.py)
            # lives there.
            "mkdir -p /run/lock && mount -t tmpfs -o size=1m,mode=1777 rw-runlock /run/lock && "
            f"mount --bind {workdir / 'bin'} /usr/local/bin && "
            f"useradd -M -d /home/{USER} -s /bin/bash -p '*' {USER} && "
            f"install -d -m 755 -o {USER} -g {USER} /home/{USER} && "
            f"echo '{sudo_rule}' > /etc/sudoers.d/{USER} && chmod 440 /etc/sudoers.d/{USER} && "
            f"echo '127.0.1.1 {name}' >> /etc/hosts && echo {name} > /etc/hostname && "
            f"exec {SSHD} -f {workdir / 'sshd_config'}"
        )
        sh("ip", "netns", "exec", host.netns, "unshare", "--uts", "--mount", "--propagation", "private",
           "sh", "-c", boot)  # fmt: skip
        return host

    def _wait_listening(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        for host in self.hosts:
            while True:
                probe = host.ns("bash", "-c", f"exec 3<>/dev/tcp/{host.address}/22", check=False)
                if probe.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sshd of {host.name} is not listening on {host.address}:22")
                time.sleep(0.02)

    def down(self) -> None:
        """Kill every process left in the lab's namespaces, delete them, the uplink and the guard route."""
        listed = sh("ip", "netns", "list", check=False).stdout.split("\n")
        for line in listed:
            netns = line.split(" ")[0]
            if netns.startswith(self.prefix) and (netns == self.switch or netns[len(self.prefix) :].startswith("h")):
                for pid in sh("ip", "netns", "pids", netns, check=False).stdout.split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                sh("ip", "netns", "del", netns, check=False)
        sh("ip", "link", "del", self.uplink, check=False)
        sh("ip", "route", "del", "unreachable", str(self.network), "metric", "4000", check=False)
        self.hosts = []
