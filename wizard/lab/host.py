"""A simulated Linux host: state, lifecycle (boot, driver reload, reboot) and command execution."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab import boot, hang, kmods, netops, netplan, packages, rootfs, services, strange, udev, user_env
from wizard.lab.faults import Fault
from wizard.lab.gids import GidTable
from wizard.lab.linkstate import LinkState
from wizard.lab.netdevs import Netdev
from wizard.lab.profile import CardSpec, HostProfile
from wizard.lab.shell.interp import DEFAULT_PATH, EXEC_GROUP, IO, Shell
from wizard.lab.streams import BufferSink, Input, Sink, TextInput
from wizard.lab.vfs import ROOT, VFS, Cred

if TYPE_CHECKING:
    from wizard.lab.cluster import Lab

log = logging.getLogger(__name__)

OLD_FIRMWARE = "14.20.1010"
KEPT_COMMANDS = 2000  # per host: what tests look back at, bounded so a long-running 1,024-host lab does not grow
ARGV_KEPT = 64  # words of one argv kept in ``commands``


def _keep(items: list, item: object) -> None:  # type: ignore[type-arg]
    """Append, dropping the oldest half once there are KEPT_COMMANDS (amortised: one slice per 1,000 appends)."""
    items.append(item)
    if len(items) > KEPT_COMMANDS:
        del items[: KEPT_COMMANDS // 2]


@dataclass
class Completed:
    """Result of :meth:`SimHost.run` (tests call hosts directly, without SSH)."""

    stdout: str
    stderr: str
    status: int


@dataclass
class JournalEntry:
    when: float
    unit: str
    ident: str
    message: str


class SimHost(LinkState):
    """One host of the lab. Tests may inspect and mutate any attribute; ``history`` lists exec'd commands."""

    def __init__(
        self,
        name: str,
        profile: HostProfile,
        mgmt: str | ipaddress.IPv4Interface,
        *,
        index: int = 0,
        faults: list[Fault] | tuple[Fault, ...] = (),
        lab: Lab | None = None,
    ) -> None:
        self.name = name
        self.profile = profile
        self.mgmt = ipaddress.IPv4Interface(mgmt)
        self.index = index
        self.faults = [f for f in faults if f.host == name]
        self.lab = lab
        self.fs = VFS()
        self.history: list[str] = []  # the last KEPT_COMMANDS exec'd command lines
        self.commands: list[list[str]] = []  # the last KEPT_COMMANDS argvs run (long ones shortened: note_argv)
        self.packages: dict[str, str] = {}
        self.modules: list[str] = []
        self.stack = "inbox"
        self.netdevs: dict[str, Netdev] = {}
        self.ifindex_counter = 0
        self.gid_tables: dict[str, GidTable] = {}
        self.rdma_cfg: dict[str, dict[str, object]] = {}
        self.units: dict[str, services.Runtime] = {}
        self.journal: list[JournalEntry] = []
        self.dmesg: list[str] = []
        self.background: set[asyncio.Task] = set()
        self.doca_repo: str | None = None  # DOCA release whose apt repository is configured and fetched
        self.users: dict[str, int] = {"root": 0}
        self.pid_hint = 1000 + index * 7
        self.hostname = name
        self.gateway: tuple[str, str] | None = None
        self.static_routes: list[dict[str, object]] = []
        self.rules: list[dict[str, object]] = []
        self.sysctl: dict[str, str] = {}
        self.state = "running"
        self.boot_time = time.time()
        self.boot_id = str(uuid.uuid4())  # proc(5): /proc/sys/kernel/random/boot_id, a UUID drawn at every boot
        self.reboot_seconds = 3.0
        self.time_scale_override: float | None = None
        self.ssh_drop_fired = False
        self.power_listeners: list[Callable[[str], Awaitable[None] | None]] = []
        self._booting = False
        rootfs.populate(self)
        self.install_fault_software()
        self.power_on()

    def install_fault_software(self) -> None:
        """Software a fault puts on the disk (pfc_off: an enabled lldpad); also after a saved disk is restored."""
        user_env.install_fault_files(self)  # user_nccl_conf: a ~/.nccl.conf that overrides /etc/nccl.conf
        if self.fault("pfc_off"):
            pkg = packages.catalog("ubuntu")["lldpad"]
            packages.install_files(self, pkg)
            unit = services.find_unit(self, "lldpad")
            assert unit is not None
            services.enable(self, unit)
        if self.fault("nm_renderer"):
            netplan.use_network_manager(self)  # the netplan renderer is NetworkManager (Ubuntu Desktop style)

    # -- faults and context ------------------------------------------------------------------------------
    def fault(self, kind: str, arg: str | None = None) -> Fault | None:
        for f in self.faults:
            if f.kind == kind and (arg is None or f.arg == arg):
                return f
        return None

    def faults_of(self, kind: str) -> list[Fault]:
        return [f for f in self.faults if f.kind == kind]

    @property
    def time_scale(self) -> float:
        if self.time_scale_override is not None:
            return self.time_scale_override
        return self.lab.time_scale if self.lab is not None else 1.0

    @property
    def gateway_address(self) -> str:
        return str(self.mgmt.network.network_address + 1)

    @property
    def doca_built(self) -> bool:
        return "mlnx-ofed-kernel-dkms" in self.packages

    @property
    def doca_driver_version(self) -> str:
        return packages.ofed_version(self)

    def firmware(self, card: CardSpec) -> str:
        return OLD_FIRMWARE if self.fault("old_firmware") else card.firmware

    def uptime(self) -> float:
        return max(0.0, time.time() - self.boot_time) + 312.0

    def kernel_log(self, msg: str) -> None:
        self.dmesg.append(f"[{self.uptime():12.6f}] {msg}")

    def journal_log(self, unit: str, msg: str, ident: str = "systemd[1]") -> None:
        self.journal.append(JournalEntry(time.time(), unit, ident, msg))

    def cred_for(self, user: str) -> Cred:
        if user == "root":
            return ROOT
        if user not in self.users:
            uid = 1000 + len(self.users) - 1
            self.users[user] = uid
            home = f"/home/{user}"
            if not self.fs.exists(home):
                self.fs.mkdir(home, ROOT, mode=0o750)
                node = self.fs.resolve(home)
                node.uid = node.gid = uid
            passwd = self.fs.read_text("/etc/passwd")
            self.fs.install("/etc/passwd", passwd + f"{user}:x:{uid}:{uid}:{user}:{home}:/bin/bash\n")
        uid = self.users[user]
        return Cred(uid, uid, user)

    # -- lifecycle ---------------------------------------------------------------------------------------
    def power_on(self) -> None:
        """Kernel + early userspace at boot: modules, netdevs, modules-load.d, netplan. Units come later."""
        self._booting = True
        try:
            self.stack = "doca" if self.doca_built else "inbox"
            self.modules = kmods.boot_set(self)
            netops.create_base(self)
            if "mlx5_core" in self.modules:
                netops.create_ports(self)
            self.hostname = self.fs.read_text("/etc/hostname").strip() or self.name
            self.gateway = None
            self.static_routes, self.rules = [], []
            self.rdma_cfg.clear()
            self.__dict__.pop("cm_groups", None)  # configfs groups live in kernel memory
            self.gid_tables.clear()
            self.boot_time = time.time()
            self.boot_id = str(uuid.uuid4())
            self.kernel_log(f"Linux version {self.profile.kernel} (buildd@lcy02-amd64-090) #135-Ubuntu SMP")
            if self.stack == "doca":
                for card in self.profile.cards:
                    for port in card.ports:
                        self.kernel_log(f"mlx5_core {port.pci}: firmware version: {self.firmware(card)}")
                    if self.fault("old_firmware"):
                        self.kernel_log(
                            f"mlx5_core {card.ports[0].pci}: Firmware {OLD_FIRMWARE} is older than the oldest "
                            f"version supported by this driver ({card.firmware}); please update the firmware"
                        )
            for name in self.modules_to_load():
                try:
                    kmods.load(self, name)
                except kmods.ModError as exc:
                    reason = str(exc).split("': ", 1)[-1].split(" (see", 1)[0]
                    self.journal_log(
                        "systemd-modules-load.service",
                        f"Failed to insert module '{kmods.normalize(name)}': {reason}",
                        ident="systemd-modules-load[412]",
                    )
        finally:
            self._booting = False
        self.reapply_network()
        from wizard.lab.sysctl import boot_sysctl

        boot_sysctl(self)

    def modules_to_load(self) -> list[str]:
        names: list[str] = []
        paths = ["/etc/modules"]
        try:
            paths += [f"/etc/modules-load.d/{n}" for n in self.fs.listdir("/etc/modules-load.d") if n.endswith(".conf")]
        except OSError:
            pass
        for path in paths:
            try:
                text = self.fs.read_text(path)
            except OSError:
                continue
            for line in text.splitlines():
                line = line.split("#", 1)[0].strip()
                if line and not line.startswith(";"):
                    names.append(line.split()[0])
        return names

    async def start_units(self) -> None:
        await boot.boot(self)
        await udev.coldplug(self)  # systemd-udev-trigger: "add" for every device, SYSTEMD_WANTS units start

    def reapply_network(self, only: set[str] | None = None) -> None:
        try:
            cfg, _ = netplan.load(self, ROOT)
        except netplan.NetplanError as exc:
            self.journal_log("systemd-networkd.service", f"netplan: {exc}".splitlines()[0])
            return
        netplan.apply(self, cfg, only)

    def on_module_change(self) -> None:
        if self._booting:
            return
        have = any(p.netdev in self.netdevs for p in self.profile.ports)
        if "mlx5_core" in self.modules and not have:
            names = netops.create_ports(self)
            self.reapply_network(set(names))
            self.reapply_network()
            udev.event(self, "add", names, autoload=True)  # udev also loads mlx5_ib by modalias
        elif "mlx5_core" not in self.modules and have:
            gone = [p.netdev for p in self.profile.ports if p.netdev in self.netdevs]
            netops.remove_ports(self)
            self.rdma_cfg.clear()  # the RDMA devices went with mlx5_core, and their rdma_cm configfs groups
            self.__dict__.pop("cm_groups", None)
            udev.event(self, "remove", gone)

    async def driver_reload(self) -> None:
        """/etc/init.d/openibd restart: the RDMA stack is unloaded and loaded again (DOCA's once installed)."""
        self.modules = [m for m in self.modules if m not in kmods.RDMA_STACK]
        self.stack = "doca" if self.doca_built else "inbox"
        gone = [p.netdev for p in self.profile.ports if p.netdev in self.netdevs]
        netops.remove_ports(self)
        udev.event(self, "remove", gone)
        self._booting = True
        try:
            for name in kmods.boot_set(self):
                if name in kmods.RDMA_STACK and name not in self.modules:
                    self.modules.append(name)
        finally:
            self._booting = False
        names = netops.create_ports(self)
        self.rdma_cfg.clear()
        self.__dict__.pop("cm_groups", None)
        for port in self.profile.ports:
            self.kernel_log(f"mlx5_core {port.pci}: E-Switch: Total vports 2, per vport: max uc(128) max mc(2048)")
        self.reapply_network(set(names))
        self.reapply_network()
        # each re-created netdev is a kernel "add" uevent: udev rules (SYSTEMD_WANTS) run as on real hosts
        udev.event(self, "add", names)
        await asyncio.sleep(0.2 * self.time_scale)
        await udev.settle(self)

    def request_reboot(self) -> None:
        if self.state != "running":
            return
        self.state = "stopping"
        task = asyncio.get_running_loop().create_task(self._reboot())
        self._reboot_task = task

    async def _reboot(self) -> None:
        await asyncio.sleep(0.05)
        self.state = "rebooting"
        for listener in list(self.power_listeners):
            listener("off")
        for task in list(self.background):
            task.cancel()
        delay = self.lab.reboot_seconds if self.lab is not None else self.reboot_seconds
        await asyncio.sleep(delay)
        if self.fault("no_boot"):
            return  # stays down: its address refuses SSH, as a host stopped before sshd at boot does
        self.power_on()
        self.state = "running"
        await self.start_units()
        for listener in list(self.power_listeners):
            pending = listener("on")
            if pending is not None:
                await pending  # the SSH listener is back before the reboot counts as done

    async def wait_running(self) -> None:
        task = getattr(self, "_reboot_task", None)
        if task is not None:
            await task

    # -- running commands --------------------------------------------------------------------------------
    def login_env(self, user: str, extra: dict[str, str] | None, client: tuple[str, int]) -> dict[str, str]:
        home = "/root" if user == "root" else f"/home/{user}"
        env = {
            "HOME": home,
            "USER": user,
            "LOGNAME": user,
            "SHELL": "/bin/bash",
            "PATH": DEFAULT_PATH + ":/usr/games:/usr/local/games:/snap/bin",
            "LANG": "C.UTF-8",
            "PWD": home,
            "SSH_CLIENT": f"{client[0]} {client[1]} 22",
            "SSH_CONNECTION": f"{client[0]} {client[1]} {self.mgmt.ip} 22",
        }
        env.update(strange.login_env(self))  # the ``locale`` fault
        env.update(extra or {})
        return env

    def note_argv(self, argv: list[str]) -> None:
        """Remember a program run (tests ask what ran). A grep over every GID file expands to 4,000 paths: kept
        whole, every such argv of a thousand hosts' probes held gigabytes, and the collector's pauses then broke
        SSH keepalives."""
        kept = argv if len(argv) <= ARGV_KEPT else [*argv[:ARGV_KEPT], f"...(+{len(argv) - ARGV_KEPT} words)"]
        _keep(self.commands, list(kept))

    async def exec(
        self,
        command: str,
        *,
        user: str = "root",
        env: dict[str, str] | None = None,
        stdin: Input | None = None,
        out: Sink,
        err: Sink,
        client: tuple[str, int] = ("10.0.0.1", 50022),
    ) -> int:
        """Run one SSH exec request's command line as ``bash -c`` would for ``user``."""
        broken = getattr(self.lab, "disk_error", None)
        if broken is not None:
            # The last command's disk did not save: running more would change a host that the next run would meet
            # without those changes, so the simulated host refuses (and the wizard's run ends with the error).
            err.write(f"roce-wizard lab: cannot save the simulated hosts' disks: {broken}; refusing commands\n")
            return 125
        _keep(self.history, command)
        cred = self.cred_for(user)
        full_env = self.login_env(user, env, client)
        shell = Shell(self, cred=cred, env=full_env, cwd=full_env["HOME"], io=IO(stdin or TextInput(""), out, err))
        strange.login_noise(self, out)  # the ``motd`` fault: a chatty ~/.bashrc
        group: set[asyncio.Task[int]] = set()
        in_group = EXEC_GROUP.set(group)
        try:
            if hang.hangs(self, command):
                await hang.hang(self, command, err)
            return await shell.run(command)
        except asyncio.CancelledError:
            for job in list(group):  # killed by a signal: its process group goes with it (see EXEC_GROUP)
                job.cancel()
            raise
        finally:
            EXEC_GROUP.reset(in_group)
            self._maybe_lock_out(command)
            disk_dir = getattr(self.lab, "disk_dir", None)
            if disk_dir is not None:
                from wizard.lab.disk import save_disk

                try:
                    save_disk(self, disk_dir / f"{self.name}.json")
                except OSError as exc:  # in the wizard's state directory: full or read-only, as the wizard sees it
                    self.lab.disk_error = self.lab.disk_error or exc

    async def run(
        self, command: str, *, user: str = "root", stdin: str = "", env: dict[str, str] | None = None
    ) -> Completed:
        """Convenience for tests: run a command line and collect its output (no SSH involved)."""
        out, err = BufferSink(), BufferSink()
        status = await self.exec(command, user=user, env=env, stdin=TextInput(stdin), out=out, err=err)
        return Completed(out.getvalue(), err.getvalue(), status)

    async def run_as_root(self, command: str, *, out: Sink, err: Sink, stdin: Input) -> int:
        """How systemd runs ExecStart lines: as root, minimal environment, cwd /."""
        env = {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8", "INVOCATION_ID": "0" * 32}
        shell = Shell(self, cred=ROOT, env=env, cwd="/", io=IO(stdin, out, err), argv0="/bin/sh")
        return await shell.run(command)

    def _maybe_lock_out(self, command: str) -> None:
        """The ``lockout`` fault: the first matching command cuts the management network (SSH goes away)."""
        fault = self.fault("lockout")
        if fault is None or getattr(self, "lockout_fired", False) or (fault.arg or "netplan apply") not in command:
            return
        self.lockout_fired = True
        self.locked_out = True
        self.journal_log("systemd-networkd.service", "management interface lost its address")
        for listener in list(self.power_listeners):
            asyncio.get_running_loop().call_soon(listener, "off")

    async def restore_management(self) -> None:
        """An armed revert ran: the previous network configuration is back and SSH answers again.

        ``locked_out`` clears only once the SSH listener is back, so whoever watches it can connect at once.
        """
        self.journal_log("systemd-networkd.service", "management address restored")
        for listener in list(self.power_listeners):
            pending = listener("on")
            if pending is not None:
                await pending
        self.locked_out = False

    def take_ssh_drop(self, command: str) -> bool:
        """Whether this command triggers the once-only ssh_drop fault."""
        fault = self.fault("ssh_drop")
        if fault is None or self.ssh_drop_fired:
            return False
        if fault.arg is not None:
            hit = fault.arg in command
        else:
            hit = any(word == "sudo" for word in command.replace(";", " ").replace("&&", " ").split())
        if hit:
            self.ssh_drop_fired = True
        return hit
