"""Stage ofed, plan: which stack, from where, in what order, and what it refuses (pure, synthetic facts)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from steps.ofed.facts import LocalRepo, OfedFacts
from steps.ofed.repo import DOCA_KEYRING, DOCA_LIST, LOCAL_KEYRING, LOCAL_LIST
from steps.ofed.stage import Ofed
from tests.steps import facts_builder as fb
from wizard.engine.step import HostPlan, Impact
from wizard.errors import AnswersError

INBOX_MODULES = ["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "rdma_cm"]
DOCA_PKG = "2.9.1-018000-24.10-ubuntu2204"
DOCA_LINE = (
    "deb [signed-by=/etc/apt/keyrings/GPG-KEY-Mellanox.gpg] "
    "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/ ./"
)


def fresh(**extra: Any) -> OfedFacts:
    """A bare Ubuntu 22.04 host: inbox rdma-core, no tools, no time sync, curl and gnupg present."""
    fields: dict[str, Any] = dict(
        arch="x86_64",
        packages={"rdma-core": "39.0-1", "curl": "7.81.0-1ubuntu1.20", "gnupg": "2.2.27-3ubuntu2.1"},
        modules=list(INBOX_MODULES),
        rdma_by_netdev={netdev: inbox for _, netdev, inbox, _ in fb.REFERENCE_PORTS},
        services={"chrony": "inactive", "systemd-timesyncd": "inactive"},
        files={DOCA_LIST: None},
    )
    fields.update(extra)
    return OfedFacts(**fields)


def doca_installed(version: str = DOCA_PKG, **extra: Any) -> OfedFacts:
    """DOCA-OFED installed, its driver loaded, devices renamed mlx5_N, chrony active."""
    fields: dict[str, Any] = dict(
        arch="x86_64",
        packages={
            "doca-ofed": version,
            "rdma-core": "2410mlnx54-1.2410068",
            "ibverbs-utils": "2410mlnx54-1.2410068",
            "infiniband-diags": "2410mlnx54-1.2410068",
            "perftest": "24.10.0-0.66.g9093bae.2410068",
            "mlnx-ofed-kernel-dkms": "24.10.OFED.24.10.1.1.4.1-1",
            "chrony": "4.2-2ubuntu2",
            "linux-headers-5.15.0-125-generic": "5.15.0-125.135",
        },
        stack_packages=["doca-ofed"],
        ofed_stack="DOCA",
        ofed_version="24.10-1.1.4",
        driver_version="24.10-1.1.4",
        modules=[*INBOX_MODULES, "ib_core"],
        rdma_by_netdev={netdev: ofed for _, netdev, _, ofed in fb.REFERENCE_PORTS},
        rdma_by_pci={pci: ofed for pci, _, _, ofed in fb.REFERENCE_PORTS},
        ibv_devices=["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
        firmware_by_device={f"mlx5_{i}": "14.32.1010" for i in range(4)},
        services={"chrony": "active", "systemd-timesyncd": "inactive"},
        files={DOCA_LIST: f"# written by roce-wizard (stage ofed)\n{DOCA_LINE}\n"},
        keyrings=[DOCA_KEYRING],
        uninstall_script=True,
        kernel_headers=True,
    )
    fields.update(extra)
    return OfedFacts(**fields)


def plan_for(ofed: OfedFacts, yaml: str = "", **host: Any) -> HostPlan:
    answers = fb.answers(yaml)
    view = fb.view(answers, {"server1": {"discovery": fb.reference_host(**host), "ofed": ofed}})
    return Ofed().plan(view, "server1")


def commands(plan: HostPlan) -> list[str]:
    return [cmd.shell() for change in plan.changes for cmd in change.commands]


def test_fresh_host_gets_headers_repo_doca_ofed_chrony_then_driver_restart_in_that_order() -> None:
    plan = plan_for(fresh())
    assert not plan.blockers
    assert [c.summary.split(" ")[0:2] for c in plan.changes] == [
        ["Install", "prerequisites:"],
        ["Import", "NVIDIA's"],
        ["Add", "NVIDIA's"],
        ["Install", "DOCA-OFED"],
        ["Install", "and"],
        ["Restart", "the"],
    ]
    cmds = commands(plan)
    assert cmds[0] == "sudo env DEBIAN_FRONTEND=noninteractive apt-get update"
    assert cmds[1].endswith("apt-get install -y linux-headers-5.15.0-125-generic")
    assert cmds.index("sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y doca-ofed") < cmds.index(
        "sudo /etc/init.d/openibd restart"
    )
    assert cmds[-1] == "sudo /etc/init.d/openibd restart"
    assert plan.impact == Impact.DISRUPTIVE


def test_doca_repository_line_and_key_are_the_ones_nvidia_documents() -> None:
    plan = plan_for(fresh())
    key = next(c for c in plan.changes if c.summary.startswith("Import"))
    repo = next(c for c in plan.changes if c.summary.startswith("Add"))
    assert plan.changes.index(key) < plan.changes.index(repo)  # no source list names a key that is not there yet
    (listing,) = repo.files
    assert listing.path == "/etc/apt/sources.list.d/doca.list"
    assert DOCA_LINE in listing.content.splitlines()
    assert listing.before is None
    assert [c.argv for c in key.commands + repo.commands] == [
        ["install", "-d", "-m", "0755", "/etc/apt/keyrings"],
        [
            "curl",
            "-fsSL",
            "-o",
            "/tmp/roce-wizard-GPG-KEY-Mellanox.pub",
            "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub",
        ],
        [
            "gpg",
            "--batch",
            "--yes",
            "--dearmor",
            "-o",
            "/etc/apt/keyrings/GPG-KEY-Mellanox.gpg",
            "/tmp/roce-wizard-GPG-KEY-Mellanox.pub",
        ],
        ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "update"],
    ]


def test_repository_label_follows_discovered_os_and_architecture() -> None:
    plan = plan_for(fresh(arch="aarch64"), "ofed:\n  doca_version: 3.1.0\n", os_version="24.04")
    (listing,) = next(c for c in plan.changes if c.summary.startswith("Add")).files
    assert "https://linux.mellanox.com/public/repo/doca/3.1.0/ubuntu24.04/arm64-sbsa/ ./" in listing.content


def test_unknown_cpu_architecture_is_refused() -> None:
    plan = plan_for(fresh(arch="ppc64le"))
    assert plan.blockers == ["server1: NVIDIA publishes no repository for CPU architecture ppc64le"]


def test_right_version_installed_and_loaded_plans_nothing_and_says_which_version() -> None:
    plan = plan_for(doca_installed())
    assert plan.changes == []
    assert "DOCA-OFED 2.9.1 (doca-ofed 2.9.1-018000-24.10-ubuntu2204) is installed" in (plan.noop_reason or "")
    assert "mlx5_core 24.10-1.1.4" in (plan.noop_reason or "")
    assert "chrony active" in (plan.noop_reason or "")


def test_matching_repository_file_is_not_rewritten_and_a_different_one_shows_its_old_content() -> None:
    same = plan_for(doca_installed(packages={"rdma-core": "39.0-1"}, ofed_stack=None, stack_packages=[]))
    assert all(f.path != DOCA_LIST for c in same.changes for f in c.files)
    old = f"deb [signed-by={DOCA_KEYRING}] https://linux.mellanox.com/public/repo/doca/2.8.0/ubuntu22.04/x86_64/ ./\n"
    plan = plan_for(fresh(files={DOCA_LIST: old}, keyrings=[DOCA_KEYRING]))
    (listing,) = next(c for c in plan.changes if c.summary.startswith("Add")).files
    assert listing.before == old
    assert "-2.8.0/" not in listing.diff() and "+deb [signed-by" in listing.diff()
    assert not any("curl" in cmd for cmd in commands(plan))  # the key is already there


def test_old_doca_is_uninstalled_first_as_nvidia_documents_and_marked_disruptive() -> None:
    old = doca_installed(
        "2.8.0-0.0.1-24.07-ubuntu2204", ofed_version="24.07-0.6.1", driver_version="24.07-0.6.1",
        stack_packages=["doca-ofed", "doca-host"],
    )  # fmt: skip
    plan = plan_for(old)
    first = plan.changes[0]
    assert first.summary == "Uninstall DOCA-OFED 2.8.0 (doca-ofed 2.8.0-0.0.1-24.07-ubuntu2204) as NVIDIA documents"
    assert first.impact == Impact.DISRUPTIVE
    assert [c.argv[-1] if c.argv[0] != "env" else " ".join(c.argv[2:]) for c in first.commands] == [
        "apt-get remove --purge -y doca-ofed doca-host",
        "--force",
        "apt-get autoremove -y",
    ]
    assert first.commands[1].argv == ["/usr/sbin/ofed_uninstall.sh", "--force"]
    assert any(c.summary == "Install DOCA-OFED 2.9.1 (doca-ofed)" for c in plan.changes[1:])


def test_installed_mlnx_ofed_is_removed_with_ofed_uninstall_before_doca() -> None:
    mofed = fresh(
        ofed_stack="MLNX_OFED", ofed_version="23.10-1.1.9.0", driver_version="23.10-1.1.9",
        uninstall_script=True, packages={"rdma-core": "2310mlnx47-1.2310119", "curl": "7", "gnupg": "2"},
    )  # fmt: skip
    plan = plan_for(mofed)
    assert plan.changes[0].summary == "Uninstall MLNX_OFED 23.10-1.1.9.0 as NVIDIA documents"
    assert ["/usr/sbin/ofed_uninstall.sh", "--force"] in [c.argv for c in plan.changes[0].commands]


def test_connectx4_with_doca_3_is_refused_naming_host_pci_and_fix() -> None:
    plan = plan_for(fresh(), "ofed:\n  doca_version: 3.1.0\n", device_id="1013", firmware="12.28.2302")
    assert plan.changes == []
    assert len(plan.blockers) == 2  # one per card
    first = plan.blockers[0]
    assert first.startswith("server1: ConnectX-4 (15b3:1013) at 0000:3b:00.0 (ens1f0np0), 0000:3b:00.1 (ens1f1np1)")
    assert "DOCA-OFED 3.1.0 does not support ConnectX-4 (DOCA 2.9 LTS is the last release that does)" in first
    assert "ofed.doca_version to a 2.9.x LTS release" in first and "mlnx_ofed_version 24.10" in first


def test_connectx4_lx_with_doca_3_and_connectx4_with_doca_2_9_are_accepted() -> None:
    assert not plan_for(fresh(), "ofed:\n  doca_version: 3.1.0\n", device_id="1015").blockers
    assert not plan_for(fresh(), "ofed:\n  doca_version: 2.9.3\n", device_id="1013").blockers


def test_mlnx_ofed_refuses_connectx8_and_doca_2_9_refuses_connectx8() -> None:
    mofed = plan_for(fresh(), "ofed:\n  stack: mlnx_ofed\n", device_id="1023", firmware="40.43.1014")
    assert "MLNX_OFED 24.10-3.2.5.0 does not support ConnectX-8" in mofed.blockers[0]
    assert "does not support ConnectX-8" in plan_for(fresh(), "", device_id="1023").blockers[0]


def test_driver_restart_becomes_a_reboot_when_ssh_runs_over_a_connectx_port() -> None:
    plan = plan_for(fresh(), ssh_interface="ens1f0np0")
    last = plan.changes[-1]
    assert last.reboot and last.impact == Impact.REBOOT and last.commands == []
    assert "ens1f0np0" in last.why and "0000:3b:00.0" in last.why
    assert "sudo /etc/init.d/openibd restart" not in commands(plan)


def test_ssh_over_a_bond_of_connectx_ports_also_reboots_instead_of_restarting() -> None:
    disc = fb.reference_host(ssh_interface="bond0")
    disc.ports[0].master = "bond0"
    view = fb.view(fb.answers(), {"server1": {"discovery": disc, "ofed": fresh()}})
    assert Ofed().plan(view, "server1").changes[-1].reboot


def test_driver_reload_reboot_answer_always_reboots() -> None:
    plan = plan_for(fresh(), "ofed:\n  driver_reload: reboot\n")
    assert plan.changes[-1].reboot and plan.changes[-1].why == "ofed.driver_reload is reboot"


def test_nvidia_peermem_is_unloaded_before_openibd_restart() -> None:
    plan = plan_for(fresh(modules=[*INBOX_MODULES, "nvidia_peermem"]))
    assert [c.argv for c in plan.changes[-1].commands] == [
        ["modprobe", "-r", "nvidia_peermem"],
        ["/etc/init.d/openibd", "restart"],
    ]


def test_installed_but_not_loaded_driver_plans_only_the_restart() -> None:
    plan = plan_for(doca_installed(driver_version=None))
    assert [c.summary for c in plan.changes] == [
        "Restart the driver with the DOCA-OFED 2.9.1 modules (/etc/init.d/openibd restart)"
    ]


def test_missing_perftest_on_installed_doca_is_installed_from_the_stack() -> None:
    installed = doca_installed()
    del installed.packages["perftest"]
    plan = plan_for(installed)
    assert commands(plan) == [
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get update",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y perftest",
    ]


def test_running_systemd_timesyncd_is_kept_and_chrony_not_installed() -> None:
    plan = plan_for(doca_installed(services={"chrony": "inactive", "systemd-timesyncd": "active"}))
    assert plan.changes == []
    assert "systemd-timesyncd active" in (plan.noop_reason or "")


def test_installed_but_stopped_chrony_is_enabled_without_reinstalling() -> None:
    plan = plan_for(doca_installed(services={"chrony": "inactive", "systemd-timesyncd": "inactive"}))
    assert commands(plan) == ["sudo systemctl enable --now chrony"]
    assert plan.changes[0].impact == Impact.SAFE


def test_time_sync_none_leaves_time_alone() -> None:
    plan = plan_for(doca_installed(services={}), "ofed:\n  time_sync: none\n")
    assert plan.changes == []


def test_headers_curl_and_gnupg_already_present_are_not_installed_again() -> None:
    plan = plan_for(fresh(kernel_headers=True))
    assert not any(c.summary.startswith("Install prerequisites") for c in plan.changes)
    assert commands(plan)[1] == "sudo curl -fsSL -o /tmp/roce-wizard-GPG-KEY-Mellanox.pub " + (
        "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
    )


LOCAL = "ofed:\n  source: local\n  local_repo: {}\n"


def test_local_doca_repo_package_is_installed_with_dpkg_then_apt() -> None:
    deb = "/srv/doca-host_2.9.1-018000-24.10-ubuntu2204_amd64.deb"
    plan = plan_for(fresh(kernel_headers=True, local_repo=LocalRepo(path=deb, kind="deb")), LOCAL.format(deb))
    assert commands(plan)[:3] == [
        f"sudo dpkg -i {deb}",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get update",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y doca-ofed",
    ]
    assert not any("linux.mellanox.com" in c for c in commands(plan))


def test_local_repo_package_of_another_doca_version_is_refused() -> None:
    deb = "/srv/doca-host_3.1.0-091000-25.07-ubuntu2204_amd64.deb"
    plan = plan_for(fresh(local_repo=LocalRepo(path=deb, kind="deb")), LOCAL.format(deb))
    assert "is DOCA 3.1.0 but ofed.doca_version is 2.9.1" in plan.blockers[0]


def test_missing_local_repo_is_refused_naming_the_path() -> None:
    plan = plan_for(fresh(local_repo=LocalRepo(path="/srv/doca", kind="missing")), LOCAL.format("/srv/doca"))
    assert plan.blockers == [
        "server1: local_repo /srv/doca is not on the host; copy it there (same path on every host)"
    ]


def test_local_directory_is_verified_with_its_key_when_signed_and_trusted_when_not() -> None:
    signed = LocalRepo(path="/srv/doca", kind="dir", indexed=True, signed=True)
    plan = plan_for(fresh(local_repo=signed), LOCAL.format("/srv/doca"))
    repo = next(c for c in plan.changes if c.summary.startswith("Add"))
    assert repo.files[0].path == LOCAL_LIST
    assert f"deb [signed-by={LOCAL_KEYRING}] file:/srv/doca ./" in repo.files[0].content
    key = next(c for c in plan.changes if c.summary.startswith("Import"))
    assert key.commands[0].argv == ["install", "-d", "-m", "0755", "/etc/apt/keyrings"]
    assert key.commands[1].argv[-1] == "/srv/doca/GPG-KEY-Mellanox.pub"
    unsigned = LocalRepo(path="/srv/doca", kind="dir", indexed=True)
    plan = plan_for(fresh(local_repo=unsigned), LOCAL.format("/srv/doca"))
    repo = next(c for c in plan.changes if c.summary.startswith("Add"))
    assert "deb [trusted=yes] file:/srv/doca ./" in repo.files[0].content
    assert "unsigned" in repo.summary


def test_local_directory_without_a_package_index_is_refused() -> None:
    plan = plan_for(fresh(local_repo=LocalRepo(path="/srv/x", kind="dir")), LOCAL.format("/srv/x"))
    assert "not a Debian repository" in plan.blockers[0]


def test_inbox_stack_installs_distribution_packages_and_no_vendor_repository() -> None:
    plan = plan_for(fresh(), "ofed:\n  stack: inbox\n")
    cmds = commands(plan)
    assert "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y ibverbs-utils infiniband-diags perftest" in cmds
    assert not any("mellanox" in c or "doca" in c or "openibd" in c for c in cmds)
    assert "rocep<bus>s<slot>f<fn>" in plan.notes[0]


def test_inbox_stack_on_a_doca_host_uninstalls_reinstalls_distribution_tools_and_reboots() -> None:
    plan = plan_for(doca_installed(), "ofed:\n  stack: inbox\n")
    assert plan.changes[0].summary.startswith("Uninstall DOCA-OFED 2.9.1")
    assert "apt-get install -y rdma-core ibverbs-utils infiniband-diags perftest" in commands(plan)[-1]
    assert plan.changes[-1].reboot


def test_mlnx_ofed_stack_uses_the_mlnx_ofed_repository_and_mlnx_ofed_basic() -> None:
    plan = plan_for(fresh(kernel_headers=True), "ofed:\n  stack: mlnx_ofed\n")
    cmds = commands(plan)
    list_url = "https://linux.mellanox.com/public/repo/mlnx_ofed/24.10-3.2.5.0/ubuntu22.04/mellanox_mlnx_ofed.list"
    assert f"sudo curl -fsSL -o /etc/apt/sources.list.d/mellanox_mlnx_ofed.list {list_url}" in cmds
    assert "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y mlnx-ofed-basic" in cmds
    assert "24.10 LTS is its last standalone release" in plan.notes[0]


def test_non_apt_operating_system_is_refused() -> None:
    plan = plan_for(fresh(), os_id="rhel", os_version="9.4", os_pretty="Red Hat Enterprise Linux 9.4")
    assert "Red Hat Enterprise Linux 9.4 is not apt-based" in plan.blockers[0]


def test_plan_explains_the_stack_choice_in_notes() -> None:
    plan = plan_for(fresh())
    assert "MLNX_OFED's last standalone release is 24.10 LTS" in plan.notes[0]
    assert plan.notes[1].startswith("Packages come from NVIDIA's online DOCA repository https://linux.mellanox.com")


# ---- rules from roce-correctness.md ---------------------------------------------------------------------------


def test_pick_one_stack_the_doca_plan_installs_no_distribution_rdma_packages() -> None:
    cmds = " ".join(commands(plan_for(fresh())))
    for distro_only in ("libibverbs-dev", "ibutils", "rdma-core ", "ifenslave"):
        assert distro_only not in cmds


SEED_FLAGS = ("--with-nvmf", "--enable-gds", "--add-kernel-support", "--dpdk", "--upstream-libs", "--with-xpmem")


def test_no_seed_installer_flags_and_no_ntp_in_any_plan() -> None:
    for yaml in ("", "ofed:\n  stack: mlnx_ofed\n", "ofed:\n  stack: inbox\n"):
        cmds = " ".join(commands(plan_for(fresh(), yaml)))
        for flag in SEED_FLAGS:
            assert flag not in cmds
        assert " ntp" not in cmds and "chrony" in cmds


def test_connectx4_non_lx_is_supported_only_up_to_doca_2_9_lts() -> None:
    for version, refused in (("2.9.1", False), ("2.10.0", True), ("3.0.0", True)):
        plan = plan_for(fresh(), f"ofed:\n  doca_version: {version}\n", device_id="1013")
        assert bool(plan.blockers) is refused, version


def test_openibd_restart_never_runs_over_the_link_the_session_uses() -> None:
    for ssh in ("ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"):
        assert "sudo /etc/init.d/openibd restart" not in commands(plan_for(fresh(), ssh_interface=ssh))


# ---- answers --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("ofed:\n  source: local\n", "source: local needs local_repo"),
        ("ofed:\n  local_repo: /srv/doca\n", "local_repo is only used with source: local"),
        ("ofed:\n  stack: inbox\n  source: local\n  local_repo: /srv/x\n", "source: local applies to stack doca"),
        (
            "ofed:\n  stack: mlnx_ofed\n  source: local\n  local_repo: /srv/x.deb\n",
            "needs local_repo to be a directory",
        ),
        ("ofed:\n  doca_version: '3.1'\n", "ofed.doca_version"),
        ("ofed:\n  source: local\n  local_repo: relative/path\n", "ofed.local_repo"),
    ],
)
def test_answers_refuse_inconsistent_ofed_sources(yaml: str, message: str) -> None:
    with pytest.raises(AnswersError) as info:
        fb.answers(yaml)
    assert message in " ".join(info.value.problems)


def test_local_repo_trailing_slash_is_dropped() -> None:
    answers = fb.answers("ofed:\n  source: local\n  local_repo: /srv/doca/\n")
    assert answers.ofed.local_repo == "/srv/doca"


def test_every_generated_command_line_is_valid_bash() -> None:
    plans = [
        plan_for(fresh()),
        plan_for(fresh(), "ofed:\n  stack: mlnx_ofed\n"),
        plan_for(doca_installed(), "ofed:\n  stack: inbox\n"),
    ]
    script = "\n".join(line for plan in plans for line in commands(plan))
    assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0


def test_doca_key_is_a_keyring_in_etc_apt_keyrings_named_by_signed_by_never_in_trusted_gpg_d() -> None:
    """Debian wiki DebianRepository/UseThirdParty: a third-party key MUST NOT go to /etc/apt/trusted.gpg.d (apt
    then trusts it for every repository and signed-by restricts nothing); it goes to /etc/apt/keyrings and the
    source names it with signed-by."""
    plan = plan_for(fresh())
    key = next(c for c in plan.changes if c.summary == "Import NVIDIA's package signing key")
    argv = [c.argv for c in key.commands]
    assert argv[0] == ["install", "-d", "-m", "0755", "/etc/apt/keyrings"]
    assert ["gpg", "--batch", "--yes", "--dearmor", "-o", "/etc/apt/keyrings/GPG-KEY-Mellanox.gpg"] == argv[2][:6]
    (listing,) = next(c for c in plan.changes if c.summary.startswith("Add")).files
    assert "deb [signed-by=/etc/apt/keyrings/GPG-KEY-Mellanox.gpg] https://" in listing.content
    assert "trusted.gpg.d" not in " ".join(commands(plan)) + listing.content


def test_a_doca_key_left_in_trusted_gpg_d_is_moved_to_etc_apt_keyrings() -> None:
    """A host set up the old way (NVIDIA's DOCA page writes the key to trusted.gpg.d): the key is imported into
    /etc/apt/keyrings, doca.list names it, and the globally trusted copy is removed."""
    old_line = DOCA_LINE.replace(
        "/etc/apt/keyrings/GPG-KEY-Mellanox.gpg", "/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub"
    )
    facts = doca_installed(
        files={DOCA_LIST: f"# written by roce-wizard (stage ofed)\n{old_line}\n"},
        keyrings=["/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub"],
    )
    plan = plan_for(facts)
    (move,) = plan.changes
    assert move.summary == "Move NVIDIA's package signing key from /etc/apt/trusted.gpg.d to /etc/apt/keyrings"
    shell = [c.shell() for c in move.commands]
    assert shell[-2:] == [
        "sudo rm -f /etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get update",
    ]
    assert move.files[0].content.endswith(f"{DOCA_LINE}\n")
