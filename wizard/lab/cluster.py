"""The lab: simulated hosts, their cabling and one SSH endpoint per host on 127.0.0.1."""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import asyncssh

from wizard.lab.degraded import SWITCH_SIDE_KINDS, check_port_faults
from wizard.lab.fabric import Fabric, crosswire_perm
from wizard.lab.faults import Fault
from wizard.lab.host import SimHost
from wizard.lab.ib import IbSubnet
from wizard.lab.profile import HostProfile, reference_profile
from wizard.lab.profile_ib import ib_profile_for
from wizard.lab.profile_rails import rails16_profile
from wizard.lab.rails_plan import RailPlan, host_names, rails_hosts
from wizard.lab.server import HostListener

# demo profiles (rails-N: N from 16 to 1024, wizard/lab/rails_plan.py); the reference pair stays the default
PROFILES = ("reference", "rails-N", "ib-seed003")
SWITCH_FAULTS = ("wrong_leaf", "switch_pfc_off", "switch_mtu", "switch_ecn_off", "pfc_storm", *SWITCH_SIDE_KINDS)


def _mgmt_default(i: int, count: int) -> str:
    base = ipaddress.IPv4Address("10.0.0.0") + 11 + i
    return f"{base}/{24 if 11 + count < 255 else 16}"


class Lab:
    """A set of simulated hosts. Build with :meth:`reference` or :meth:`generated`, then ``await start()``."""

    def __init__(
        self,
        names: list[str],
        *,
        mgmt_addresses: dict[str, str] | None = None,
        faults: Iterable[Fault] = (),
        switched: bool | None = None,
        profile_factory: Callable[[int], HostProfile] = reference_profile,
        leaf_switches: bool = False,
        switch_os: str | None = None,
        switch_os_of: Mapping[str, str] | None = None,
        infiniband: bool = False,
        rail_plan: RailPlan | None = None,
    ) -> None:
        if len(set(names)) != len(names) or not names:
            raise ValueError("lab host names must be unique and non-empty")
        self.faults = list(faults)
        for f in self.faults:
            # a switch-side fault names a leaf: the fabric checks it once its switches exist
            if f.host not in names and f.kind not in SWITCH_SIDE_KINDS:
                raise ValueError(f"fault {f} names unknown host {f.host!r} (hosts: {', '.join(names)})")
        self.names = list(names)
        self.reboot_seconds = 3.0
        self.time_scale = 1.0
        self.hosts: dict[str, SimHost] = {}
        profiles: dict[str, HostProfile] = {n: profile_factory(i) for i, n in enumerate(names)}
        nports = len(next(iter(profiles.values())).ports)
        per_card = len(next(iter(profiles.values())).cards[0].ports)
        perms = {f.host: crosswire_perm(nports, per_card) for f in self.faults if f.kind == "crosswire"}
        if switched is None:
            switched = len(names) != 2
        first = next(iter(profiles.values()))
        # None: the OS the saved switches run (see use_disks), else Cumulus; a named one replaces saved switches
        self.switch_os_asked = switch_os
        self.switch_os = switch_os or "cumulus"
        self.switch_os_of = dict(switch_os_of or {})  # the answers' switches.os_of: these run their own NOS
        self.data_netdevs = [p.netdev for p in first.ports]
        self.rail_plan = rail_plan  # the leaves and spines of a rails-N fabric (None: rails-16's one SU)
        self.line_gbps = first.card_of(0).model.speed_mbps / 1000  # the data ports' rate (and the uplinks')
        self.ib: IbSubnet | None = None
        if not leaf_switches and any(f.kind in SWITCH_FAULTS for f in self.faults):
            bad = next(f for f in self.faults if f.kind in SWITCH_FAULTS)
            raise ValueError(f"fault {bad} needs modelled switches (--profile rails-16) or any rails-N")
        if infiniband:
            ports_per_host = {n: len(p.ports) for n, p in profiles.items()}
            self.ib = IbSubnet.seed003(names, ports_per_host, self.faults)
            self.fabric = Fabric.infiniband(self.ib, _outside_partition(profiles, self.faults))
        elif leaf_switches:
            self.fabric = self.leaf_fabric(self.switch_os)
        elif switched:
            self.fabric = Fabric.rails(names, nports, perms)
        else:
            self.fabric = Fabric.back_to_back(*names, nports, perms)
        for f in self.faults:
            if f.kind == "flap" and f.arg is not None and f.arg not in [p.netdev for p in first.ports]:
                raise ValueError(
                    f"fault {f}: {f.arg!r} is not a data port ({', '.join(p.netdev for p in first.ports)})"
                )
        check_port_faults(self.faults, first, infiniband=infiniband)
        for i, name in enumerate(names):
            addr = (mgmt_addresses or {}).get(name) or _mgmt_default(i, len(names))
            if "/" not in addr:
                addr += "/24"
            self.hosts[name] = SimHost(name, profiles[name], addr, index=i, faults=self.faults, lab=self)
            _preinstall(self.hosts[name])
        self.host_key = asyncssh.generate_private_key("ssh-ed25519", comment="roce-wizard-lab-host")
        self.client_key = asyncssh.generate_private_key("ssh-ed25519", comment="roce-wizard-lab-client")
        self.listeners: dict[str, HostListener] = {}
        self.bind = "127.0.0.1"
        self._ports: dict[str, int] = {}
        self._dark_ports: list[socket.socket] = []  # held by "unreachable" hosts, see start()
        self._cred_dir: Path | None = None
        self._own_dir: Path | None = None
        self.started = False
        self.disk_dir: Path | None = None  # where hosts keep their disks between runs (the demo's state dir)
        self.disk_error: OSError | None = None  # a disk could not be saved there (full, read-only): hosts stop

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def reference(
        cls, names: list[str], *, mgmt_addresses: dict[str, str] | None = None, faults: Iterable[Fault] = ()
    ) -> Lab:
        """Seed-000 hosts (2 x dual-port ConnectX-4 Lx, 8 x L20); two hosts are cabled back to back."""
        return cls(list(names), mgmt_addresses=mgmt_addresses, faults=faults)

    @classmethod
    def generated(cls, count: int, *, faults: Iterable[Fault] = ()) -> Lab:
        """``count`` reference hosts named gpu-001.., every port i on rail switch i."""
        width = max(3, len(str(count)))
        names = [f"gpu-{i + 1:0{width}d}" for i in range(count)]
        return cls(names, faults=faults, switched=True)

    @classmethod
    def rails(
        cls,
        count: int,
        names: list[str] | None = None,
        *,
        mgmt_addresses: dict[str, str] | None = None,
        faults: Iterable[Fault] = (),
        switch_os: str | None = None,
        switch_os_of: Mapping[str, str] | None = None,
    ) -> Lab:
        """The rails-N fabric for N = ``count`` (wizard/lab/rails_plan.py): HGX H100 hosts gpu-001.. with 8 x
        ConnectX-7 400GbE, rail i of each on its scalable unit's rail-i leaf (leaf-r<i> when N <= 32, else
        leaf-su<NN>-r<i> and 8 spines), the switches running ``switch_os`` (cumulus, sonic, eos). ``names`` (the
        answers' hosts) default to the profile's own; the addressing is sized for ``count``."""
        names = list(names) if names else host_names(count)
        plan = RailPlan(count, len(rails16_profile(0).ports))
        if plan.multi_su and mgmt_addresses:
            # the answers give bare addresses, SU NN's on 10.0.NN.x: the management network is one 10.0.0.0/16
            mgmt_addresses = {n: a if "/" in a else f"{a}/16" for n, a in mgmt_addresses.items()}
        return cls(
            names,
            mgmt_addresses=mgmt_addresses,
            faults=faults,
            switched=True,
            profile_factory=rails16_profile,
            leaf_switches=True,
            switch_os=switch_os,
            switch_os_of=switch_os_of,
            rail_plan=plan,
        )

    @classmethod
    def rails16(
        cls,
        names: list[str] | None = None,
        *,
        mgmt_addresses: dict[str, str] | None = None,
        faults: Iterable[Fault] = (),
        switch_os: str | None = None,
        switch_os_of: Mapping[str, str] | None = None,
    ) -> Lab:
        """The rails-16 fabric: HGX H100 hosts gpu-001.. with 8 x ConnectX-7 400GbE, rail i on leaf-r<i>, the
        leaves and the spine running ``switch_os`` (cumulus, sonic, eos)."""
        return cls.rails(
            16, names, mgmt_addresses=mgmt_addresses, faults=faults, switch_os=switch_os, switch_os_of=switch_os_of
        )

    @classmethod
    def ib_seed003(
        cls,
        names: list[str] | None = None,
        *,
        mgmt_addresses: dict[str, str] | None = None,
        faults: Iterable[Fault] = (),
    ) -> Lab:
        """Seed 003's InfiniBand cluster: V100 nodes (one dual-port ConnectX-5, EDR 100G) and A100 nodes (two
        ConnectX-6, HDR 200G; a host whose name contains "a100"), every port on one of two IB switches, the SM on
        ib-sw-1 (wizard/lab/ib.py)."""
        names = list(names) if names else ["v100-01", "v100-02", "a100-01", "a100-02"]
        return cls(
            names,
            mgmt_addresses=mgmt_addresses,
            faults=faults,
            switched=True,
            profile_factory=lambda i: ib_profile_for(names[i], i),
            infiniband=True,
        )

    @classmethod
    def for_profile(
        cls,
        profile: str,
        names: list[str],
        *,
        mgmt_addresses: dict[str, str] | None = None,
        faults: Iterable[Fault] = (),
        switch_os: str | None = None,
        switch_os_of: Mapping[str, str] | None = None,
    ) -> Lab:
        """The lab of a demo profile (``reference``, ``rails-N`` or ``ib-seed003``) for the answers' host names."""
        count = rails_hosts(profile)
        if count is not None:
            return cls.rails(
                count, names, mgmt_addresses=mgmt_addresses, faults=faults, switch_os=switch_os,
                switch_os_of=switch_os_of,
            )  # fmt: skip
        if switch_os is not None:
            raise ValueError("--switch-os needs modelled switches (--profile rails-N)")
        if profile == "ib-seed003":
            return cls.ib_seed003(names, mgmt_addresses=mgmt_addresses, faults=faults)
        if profile != "reference":
            raise ValueError(f"unknown lab profile {profile!r} (profiles: {', '.join(PROFILES)})")
        return cls.reference(names, mgmt_addresses=mgmt_addresses, faults=faults)

    def leaf_fabric(self, switch_os: str) -> Fabric:
        """The modelled leaves and spines of this lab's hosts, running ``switch_os`` (also when the saved switches
        of a demo state directory ran another NOS: wizard/lab/switch_store.py)."""
        return Fabric.leaf_rails(
            self.names, self.data_netdevs, self.faults, switch_os, self.switch_os_of, self.rail_plan, self.line_gbps
        )

    # -- access --------------------------------------------------------------------------------------------
    def host(self, name: str) -> SimHost:
        return self.hosts[name]

    def endpoint(self, name: str) -> tuple[str, int]:
        if name not in self._ports:
            raise KeyError(f"{name} has no endpoint (lab not started?)")
        return self.bind, self._ports[name]

    @property
    def client_key_path(self) -> Path:
        if self._cred_dir is None:
            raise RuntimeError("credentials are written by start() or write_credentials()")
        return self._cred_dir / "id_ed25519"

    @property
    def known_hosts_path(self) -> Path:
        if self._cred_dir is None:
            raise RuntimeError("credentials are written by start() or write_credentials()")
        return self._cred_dir / "known_hosts"

    def write_credentials(self, directory: Path) -> tuple[Path, Path]:
        """Write the client key (0600) and, once ports are known, a known_hosts line per host.

        Returns (client key path, known_hosts path)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._cred_dir = directory
        key_path = directory / "id_ed25519"
        self.client_key.write_private_key(str(key_path))
        key_path.chmod(0o600)
        self.client_key.write_public_key(str(directory / "id_ed25519.pub"))
        pub = self.host_key.export_public_key().decode().strip()
        lines = [f"[{self.bind}]:{port} {pub}" for port in self._ports.values()]
        (directory / "known_hosts").write_text("\n".join(lines) + ("\n" if lines else ""))
        return key_path, directory / "known_hosts"

    # -- lifecycle -----------------------------------------------------------------------------------------
    def use_disks(self, directory: Path) -> list[str]:
        """Keep every host's disk in ``directory``: boot from a saved disk where there is one, save after each
        command. Call before :meth:`start`; returns the hosts that booted from a saved disk."""
        from wizard.lab.disk import load_disk
        from wizard.lab.switch_store import restore_switches

        self.disk_dir = directory
        restore_switches(self, directory)
        return [name for name, host in self.hosts.items() if load_disk(host, directory / f"{name}.json")]

    async def boot(self, disks: Path | None) -> list[str]:
        """use_disks(disks) when given, then start(): the hosts that booted from a saved disk."""
        booted = self.use_disks(disks) if disks is not None else []
        await self.start()
        return booted

    async def start(self, bind: str = "127.0.0.1", base_port: int = 0) -> None:
        self.bind = bind
        await asyncio.gather(*(h.start_units() for h in self.hosts.values()))
        pending = []
        for i, name in enumerate(self.names):
            host = self.hosts[name]
            port = base_port + i if base_port else 0
            if host.fault("unreachable"):
                # The port stays bound (never listening) while the lab runs: released at once, the kernel could
                # hand it to the next listener's bind(0) and the "unreachable" host would answer as another.
                self._dark_ports.append(_reserved_port(bind, port))
                self._ports[name] = self._dark_ports[-1].getsockname()[1]
                continue
            listener = HostListener(host, bind, port, self.host_key, self.client_key)
            self.listeners[name] = listener
            pending.append(listener.listen())
        await asyncio.gather(*pending)
        for name, listener in self.listeners.items():
            self._ports[name] = listener.port
        if self._cred_dir is None:
            self._own_dir = Path(tempfile.mkdtemp(prefix="roce-wizard-lab-"))
            self._cred_dir = self._own_dir
        self.write_credentials(self._cred_dir)
        self.started = True

    async def stop(self) -> None:
        await asyncio.gather(*(listener.close() for listener in self.listeners.values()))
        self.listeners.clear()
        for sock in self._dark_ports:
            sock.close()
        self._dark_ports.clear()
        for host in self.hosts.values():
            for task in list(host.background) + [getattr(host, "_reboot_task", None)]:
                if task is not None and not task.done():
                    task.cancel()
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None
            self._cred_dir = None
        self.started = False

    async def __aenter__(self) -> Lab:
        if not self.started:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def ssh_config(self, user: str = "root") -> str:
        """An OpenSSH client config block per host (for humans trying the demo with plain ssh)."""
        out = []
        for name in self.names:
            host, port = self.endpoint(name)
            out.append(
                f"Host {name}\n  HostName {host}\n  Port {port}\n  User {user}\n  IdentityFile {self.client_key_path}\n"
                f"  UserKnownHostsFile {self.known_hosts_path}\n  StrictHostKeyChecking yes\n"
            )
        return "\n".join(out)


def _outside_partition(profiles: Mapping[str, HostProfile], faults: list[Fault]) -> set[tuple[str, int]]:
    """The ports the pkey_mismatch fault leaves out of the default partition (the first port when none is named)."""
    out = set()
    for f in faults:
        if f.kind == "pkey_mismatch":
            netdevs = [p.netdev for p in profiles[f.host].ports]
            out.add((f.host, netdevs.index(f.arg) if f.arg in netdevs else 0))
    return out


def _preinstall(host: SimHost) -> None:
    """Packages of the profile's image (rails-16: lldpd, enabled so it starts at boot)."""
    from wizard.lab import packages, services

    for name in host.profile.preinstalled:
        if name in host.packages:
            continue
        packages.install_files(host, packages.catalog("ubuntu")[name])
        unit = services.find_unit(host, name)
        if unit is not None:
            services.enable(host, unit)


def _reserved_port(bind: str, port: int) -> socket.socket:
    """A bound socket that never listens (for the ``unreachable`` fault): connections to it are refused, and no
    other listener can take its port while the caller holds it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((bind, port))
    return sock
