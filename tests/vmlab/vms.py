"""The real-kernel lab: two Debian 12 VMs under qemu (TCG), cabled back to back, reached over SSH on loopback.

Each VM has a management NIC (eth0: qemu user networking, DHCP, `restrict=on` so the guest reaches nothing outside;
only SSH is forwarded from 127.0.0.1) and DATA_NICS data NICs (eth1..) that are point-to-point "cables" between the
two VMs carried over loopback TCP. Nothing touches this machine's interfaces and no packet leaves loopback.

The image is built once per package list (build-image.sh, about a minute, needs root and mmdebstrap) and cached;
the first boot is saved as a qemu snapshot (`savevm`) next to it, so every later start resumes a booted system in
seconds. Measured recipes: ../shared/reference/test-labs.md (lab 3).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA_NICS = 3
MEMORY_MB = 512
SNAPSHOT = "booted"
QEMU = "qemu-system-x86_64"
GUEST_NICE = -5
CACHE_ENV = "ROCE_WIZARD_VMLAB_CACHE"


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "roce-wizard" / "vmlab")


def image_key() -> str:
    """Changes whenever the package list or the build script does: a new key means a new image."""
    digest = hashlib.sha256()
    for name in ("packages.txt", "build-image.sh"):
        digest.update((HERE / name).read_bytes())
    digest.update(f"nics={DATA_NICS} mem={MEMORY_MB}".encode())
    return digest.hexdigest()[:16]


def missing_requirements() -> str | None:
    """Why the lab cannot run here (None: it can). Tests skip with this reason."""
    if not Path("/proc/self").exists():
        return "the qemu lab needs Linux"
    for tool in (QEMU, "qemu-img"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install qemu-system-x86 qemu-utils)"
    if not (cache_root() / image_key() / "base.img").exists():
        if os.geteuid() != 0:
            return "building the VM image needs root (mmdebstrap); run as root once, or set $" + CACHE_ENV
        if shutil.which("mmdebstrap") is None:
            return "mmdebstrap is not installed (apt-get install mmdebstrap), needed once to build the VM image"
    return None


@contextlib.contextmanager
def locked(path: Path):  # noqa: ANN202
    """Hold an exclusive lock on ``path``: two test runs never build the same image or snapshot at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def ensure_image() -> Path:
    """The cached image directory (vmlinuz, initrd.img, base.img, lab key, host key), built if missing."""
    target = cache_root() / image_key()
    with locked(cache_root() / f"{image_key()}.lock"):
        if (target / "base.img").exists():
            return target
        building = target.with_name(target.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        key = building / "id_ed25519"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "roce-wizard-vmlab", "-f", str(key)], check=True
        )
        log = building / "build.log"
        with open(log, "w") as out:
            result = subprocess.run(
                [str(HERE / "build-image.sh"), str(building), f"{key}.pub"], stdout=out, stderr=subprocess.STDOUT
            )
        if result.returncode != 0:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise RuntimeError("building the vmlab image failed:\n" + "\n".join(tail))
        shutil.rmtree(target, ignore_errors=True)
        building.rename(target)
        return target


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Vm:
    index: int
    workdir: Path
    ssh_port: int
    pid: int | None = None

    @property
    def name(self) -> str:
        return f"vm{self.index}"

    @property
    def disk(self) -> Path:
        return self.workdir / f"{self.name}.qcow2"

    @property
    def monitor(self) -> Path:
        return self.workdir / f"{self.name}.mon"

    @property
    def serial(self) -> Path:
        return self.workdir / f"{self.name}.serial"

    def hmp(self, command: str, wait_s: float = 60.0) -> str:
        """Run one human-monitor command (savevm, set_link, info status) and return what it printed."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(wait_s)
            s.connect(str(self.monitor))
            _read_until_prompt(s)
            s.sendall(command.encode() + b"\n")
            text = _read_until_prompt(s)
        lines = text.replace("\r", "").split("\n")
        return "\n".join(line for line in lines[1:] if not line.startswith("(qemu)")).strip()


def _read_until_prompt(s: socket.socket) -> str:
    data = b""
    while not data.rstrip().endswith(b"(qemu)"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


@dataclass
class VmPair:
    """Two running VMs; ``vms[0]`` listens for the data cables, ``vms[1]`` connects to them."""

    image: Path
    workdir: Path
    vms: list[Vm] = field(default_factory=list)
    cable_ports: list[int] = field(default_factory=list)

    @property
    def key_file(self) -> Path:
        return self.image / "id_ed25519"

    def start(self, *, loadvm: str | None = None) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cable_ports = [free_port() for _ in range(DATA_NICS)]
        self.vms = [Vm(i, self.workdir, free_port()) for i in (1, 2)]
        for vm in self.vms:
            if loadvm is None:
                subprocess.run(
                    [
                        "qemu-img",
                        "create",
                        "-q",
                        "-f",
                        "qcow2",
                        "-b",
                        str(self.image / "base.img"),
                        "-F",
                        "raw",
                        str(vm.disk),
                    ],
                    check=True,
                )
            self._launch(vm, loadvm)

    def _launch(self, vm: Vm, loadvm: str | None) -> None:
        net = [
            "-netdev",
            f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{vm.ssh_port}-:22",
            "-device",
            f"virtio-net-pci,netdev=mgmt,mac=52:54:00:00:0{vm.index}:00",
        ]
        for j, port in enumerate(self.cable_ports, 1):
            side = f"listen=127.0.0.1:{port}" if vm.index == 1 else f"connect=127.0.0.1:{port}"
            net += [
                "-netdev",
                f"socket,id=d{j},{side}",
                # speed/duplex make ethtool and /proc/net/bonding report a speed; host_mtu allows jumbo frames
                "-device",
                f"virtio-net-pci,netdev=d{j},mac=52:54:00:00:0{vm.index}:0{j},speed=100000,duplex=full,host_mtu=9000",
            ]
        pidfile = self.workdir / f"{vm.name}.pid"
        argv = [
            QEMU,
            "-name",
            vm.name,
            "-machine",
            "q35",
            "-accel",
            "tcg,tb-size=256",
            "-cpu",
            "max",
            "-smp",
            "1",
            "-m",
            str(MEMORY_MB),
            "-nodefaults",
            "-no-user-config",
            "-kernel",
            str(self.image / "vmlinuz"),
            "-initrd",
            str(self.image / "initrd.img"),
            "-append",
            f"root=/dev/vda rw console=ttyS0 net.ifnames=0 systemd.hostname={vm.name} quiet mitigations=off",
            "-drive",
            f"file={vm.disk},if=virtio,format=qcow2,cache=unsafe",
            *net,
            "-display",
            "none",
            "-serial",
            f"file:{vm.serial}",
            "-monitor",
            f"unix:{vm.monitor},server,nowait",
            "-daemonize",
            "-pidfile",
            str(pidfile),
        ]
        if loadvm:
            argv += ["-loadvm", loadvm]
        if os.geteuid() == 0 and shutil.which("nice") and os.nice(0) > GUEST_NICE:
            # Above the other test processes (tests/tiers.py runs three lanes): a TCG guest's vCPU is one thread,
            # and a guest starved of it stalls the qemu tier while the main-tier lanes have the cores. Every qemu
            # thread inherits the priority from nice(1).
            argv = ["nice", "-n", str(GUEST_NICE - os.nice(0)), *argv]
        subprocess.run(argv, check=True)
        vm.pid = int(pidfile.read_text().strip())

    def wait_for_ssh_ports(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        for vm in self.vms:
            while not _port_open(vm.ssh_port):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{vm.name}: qemu does not listen on {vm.ssh_port}")
                time.sleep(0.2)

    def stop(self) -> None:
        for vm in self.vms:
            if vm.pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(vm.pid, 15)
        for vm in self.vms:
            for _ in range(100):
                if vm.pid is None or not Path(f"/proc/{vm.pid}").exists():
                    break
                time.sleep(0.05)
            vm.pid = None
