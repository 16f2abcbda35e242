"""Stage ofed, probe: read-only commands in, facts out (fake executor answering with real captured outputs)."""

from __future__ import annotations

import shlex
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from steps.ofed.facts import OfedFacts
from steps.ofed.stage import Ofed
from tests.fixture_files import real_output
from tests.steps import facts_builder as fb
from wizard.engine.step import ProbeContext
from wizard.executors.base import CommandResult

DPKG = (
    "rdma-core\t2410mlnx54-1.2410068\tii \n"
    "doca-ofed\t2.10.0-093000-25.01-ubuntu2204\tii \n"
    "doca-host\t2.10.0-093000-25.01-ubuntu2204\tii \n"
    "perftest\t24.10.0-0.66.g9093bae.2410068\tii \n"
    "chrony\t4.2-2ubuntu2\tii \n"
    "linux-headers-5.15.0-125-generic\t5.15.0-125.135\tii \n"
    "flexio\t24.10.2360\trc \n"
    "bash\t5.1-6ubuntu1.1\tii \n"
)
CLASS_LINKS = (
    "total 0\n"
    "lrwxrwxrwx 1 root root 0 Mar  3 10:12 mlx5_0 -> ../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/"
    "infiniband/mlx5_0\n"
    "lrwxrwxrwx 1 root root 0 Mar  3 10:12 mlx5_1 -> ../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/"
    "infiniband/mlx5_1\n"
)


class FakeHost:
    """Answers each command line from a table; anything else is 'command not found'."""

    def __init__(self, outputs: dict[str, tuple[int, str]], files: dict[str, str]) -> None:
        self.name = "server1"
        self.outputs = outputs
        self.files = files
        self.ran: list[str] = []

    async def run(self, argv: Any, *, sudo: bool = False, **_: Any) -> CommandResult:
        line = argv if isinstance(argv, str) else shlex.join(argv)
        self.ran.append(line)
        rc, out = self.outputs.get(line, (127, ""))
        return CommandResult(line, rc, out, "" if rc != 127 else f"bash: {line.split()[0]}: command not found", 0.0)

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        self.ran.append(f"cat -- {path}")
        return self.files.get(path)


def disc() -> DiscoveryFacts:
    ports = [fb.port("0000:3b:00.0", "p1p1", "mlx5_0"), fb.port("0000:3b:00.1", "p1p2", "mlx5_1")]
    return fb.reference_host(ports=ports)


def outputs() -> dict[str, tuple[int, str]]:
    return {
        "uname -m": (0, "x86_64\n"),
        "dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'": (0, DPKG),
        "ofed_info -s": (0, real_output("ofed_info", "dgxos-exa-client-doca2410-7.txt")),
        "cat /sys/module/mlx5_core/version": (0, "24.10-1.1.4\n"),
        "lsmod": (0, real_output("lsmod", "azure-hbv3-mofed-ib-3.txt")),
        "rdma link show": (0, real_output("rdma_link", "3fs-pr283-1.txt")),
        "ls -l /sys/class/infiniband": (0, CLASS_LINKS),
        "ibv_devinfo": (0, real_output("ibv_devinfo", "rdma-tools-note-cx4lx-4dev-3.txt")),
        "systemctl is-active chrony systemd-timesyncd": (3, "active\ninactive\n"),
        "ls -1 /etc/apt/trusted.gpg.d": (0, "GPG-KEY-Mellanox.pub\nubuntu-keyring-2018-archive.gpg\n"),
        "test -x /usr/sbin/ofed_uninstall.sh": (0, ""),
        "test -e /lib/modules/5.15.0-125-generic/build": (0, ""),
        "test -f /srv/doca": (1, ""),
        "test -d /srv/doca": (0, ""),
        "ls -1 /srv/doca": (0, "Packages.gz\nRelease\nRelease.gpg\nGPG-KEY-Mellanox.pub\n"),
    }


async def probe(yaml: str = "", files: dict[str, str] | None = None) -> tuple[OfedFacts, FakeHost, dict[str, Any]]:
    answers = fb.answers(yaml)
    host = FakeHost(outputs(), files or {})
    stage_facts: dict[str, Any] = {"discovery": disc().model_dump(mode="json")}
    ctx = ProbeContext(answers.hosts[0], host, answers, stage_facts)  # type: ignore[arg-type]
    raw = await Ofed().probe(ctx)
    return OfedFacts.model_validate(raw), host, stage_facts


async def test_probe_reads_stack_driver_devices_tools_and_services_from_real_outputs() -> None:
    facts, _, _ = await probe()
    assert (facts.ofed_stack, facts.ofed_version) == ("DOCA", "24.10-1.1.4.0.200")
    assert facts.driver_version == "24.10-1.1.4"
    assert facts.modules == ["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib"]
    assert facts.rdma_by_netdev == {"p1p1": "mlx5_0", "p1p2": "mlx5_1"}
    assert facts.rdma_by_pci == {"0000:3b:00.0": "mlx5_0", "0000:3b:00.1": "mlx5_1"}
    assert facts.ibv_devices == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert facts.firmware_by_device["mlx5_0"] == "14.28.2006"
    assert facts.services == {"chrony": "active", "systemd-timesyncd": "inactive"}
    assert facts.keyrings == ["/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub"]
    assert facts.uninstall_script and facts.kernel_headers


async def test_probe_keeps_installed_packages_and_the_documented_uninstall_list_only() -> None:
    facts, _, _ = await probe()
    assert facts.packages["doca-ofed"] == "2.10.0-093000-25.01-ubuntu2204"
    assert "bash" not in facts.packages and "flexio" not in facts.packages  # rc: config files only
    assert facts.stack_packages == ["doca-host", "doca-ofed"]


async def test_probe_runs_only_read_only_commands_without_sudo() -> None:
    _, host, _ = await probe("ofed:\n  source: local\n  local_repo: /srv/doca\n")
    writers = ("apt-get", "dpkg -i", "modprobe", "openibd", "systemctl enable", "rm ", "tee", "curl", "gpg")
    assert not [line for line in host.ran if line.startswith(writers)]


async def test_probe_classifies_a_local_repository_directory() -> None:
    facts, _, _ = await probe("ofed:\n  source: local\n  local_repo: /srv/doca\n")
    assert facts.local_repo is not None
    assert (facts.local_repo.kind, facts.local_repo.indexed, facts.local_repo.signed) == ("dir", True, True)


async def test_probe_records_managed_repository_files_with_their_content() -> None:
    line = "deb [signed-by=/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub] https://x/ ./\n"
    facts, _, _ = await probe(files={"/etc/apt/sources.list.d/doca.list": line})
    assert facts.files["/etc/apt/sources.list.d/doca.list"] == line
    assert facts.files["/etc/apt/sources.list.d/roce-wizard-local-ofed.list"] is None


async def test_real_cx4_lx_firmware_14_28_fails_the_doca_firmware_check() -> None:
    facts, _, _ = await probe()
    view = fb.view(fb.answers(), {"server1": {"discovery": disc(), "ofed": facts}})
    item = next(i for i in Ofed().checks(view, "server1") if i.id == "firmware")
    assert item.status == "fail"
    assert item.evidence.startswith(
        "server1: ConnectX-4 Lx firmware 14.28.2006 on p1p1 (0000:3b:00.0), p1p2 (0000:3b:00.1) is older than the"
        " 14.32 line DOCA-OFED 2.9.1 supports"
    )
