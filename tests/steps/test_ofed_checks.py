"""Stage ofed, verification and small parsers: what passes on a configured host and what each failure says."""

from __future__ import annotations

from typing import Any

from steps.ofed import support as sup
from steps.ofed.facts import keep_packages, parse_is_active, parse_local_repo, parse_rdma_pci
from steps.ofed.stage import Ofed
from tests.steps import facts_builder as fb
from tests.steps.test_ofed import doca_installed, fresh, plan_for
from wizard.engine.step import CheckItem


def checks_for(ofed: Any, yaml: str = "", host: str = "server1", **disc: Any) -> dict[str, CheckItem]:
    view = fb.view(fb.answers(yaml), {host: {"discovery": fb.reference_host(host, **disc), "ofed": ofed}})
    return {item.id: item for item in Ofed().checks(view, host)}


def test_configured_doca_host_passes_every_check() -> None:
    items = checks_for(doca_installed(), ofed_names=True)
    assert {k: v.status for k, v in items.items()} == {
        "stack": "pass",
        "driver": "pass",
        "modules": "pass",
        "rdma_devices": "pass",
        "user_tools": "pass",
        "time_sync": "pass",
        "firmware": "pass",
    }
    assert items["rdma_devices"].evidence.startswith("ens1f0np0 (0000:3b:00.0) -> mlx5_0")
    assert items["user_tools"].evidence == (
        "ibv_devinfo lists mlx5_0, mlx5_1, mlx5_2, mlx5_3; perftest 24.10.0-0.66.g9093bae.2410068"
    )
    assert "OFED-internal" not in items["stack"].evidence and "DOCA 24.10-1.1.4" in items["stack"].evidence


def test_old_firmware_fails_naming_host_netdev_firmware_and_fix() -> None:
    old = doca_installed(firmware_by_device={f"mlx5_{i}": "14.20.1010" for i in range(4)})
    item = checks_for(old, host="server2", firmware="14.20.1010")["firmware"]
    assert item.status == "fail"
    assert item.evidence == (
        "server2: ConnectX-4 Lx firmware 14.20.1010 on ens1f0np0 (0000:3b:00.0), ens1f1np1 (0000:3b:00.1),"
        " ens2f0np0 (0000:86:00.0), ens2f1np1 (0000:86:00.1) is older than the 14.32 line DOCA-OFED 2.9.1 supports"
        " (bundled: 14.32.1900)"
    )
    fix = item.fix or ""
    # one update per card (firmware belongs to the card), both named
    assert "mlxup --online -u -d 0000:3b:00.0 (to 14.32.1900); mlxup --online -u -d 0000:86:00.0 (to 14.32.1900)" in fix
    assert "mstflint -d <pci> -i <image for the card's PSID> burn" in fix and "mstfwreset -d <pci> reset" in fix


def test_old_firmware_is_a_plan_note_not_a_blocker() -> None:
    plan = plan_for(fresh(), firmware="14.20.1010")
    assert not plan.blockers and plan.changes
    assert any(n.startswith("server1: ConnectX-4 Lx firmware 14.20.1010 on ens1f0np0") for n in plan.notes)


def test_firmware_in_the_supported_line_but_older_build_passes() -> None:
    item = checks_for(doca_installed())["firmware"]  # 14.32.1010 < bundled 14.32.1900, same line
    assert item.status == "pass"
    assert "(lines from DOCA 2.9 General Support)" in item.evidence


def test_firmware_line_comes_from_the_closest_release_table_at_or_below_the_version() -> None:
    assert sup.release(fb.answers("ofed:\n  doca_version: 3.2.1\n").ofed).firmware_source == "DOCA 3.1"
    assert sup.release(fb.answers("ofed:\n  doca_version: 2.9.4\n").ofed).firmware["ConnectX-4"] == "12.28.2302"
    six_dx = doca_installed(firmware_by_device={f"mlx5_{i}": "22.43.2026" for i in range(4)})
    item = checks_for(six_dx, "ofed:\n  doca_version: 3.1.0\n", device_id="101d", firmware="22.43.2026")["firmware"]
    assert item.status == "fail" and "older than the 22.46 line DOCA-OFED 3.1.0 supports" in item.evidence


def test_inbox_stack_does_not_judge_firmware_against_an_nvidia_release() -> None:
    item = checks_for(fresh(), "ofed:\n  stack: inbox\n")["firmware"]
    assert item.status == "skip" and "14.32.1010" in item.evidence


def test_port_without_rdma_device_after_the_restart_fails_naming_it() -> None:
    facts = doca_installed()
    del facts.rdma_by_pci["0000:86:00.1"]
    del facts.rdma_by_netdev["ens2f1np1"]
    item = checks_for(facts)["rdma_devices"]
    assert item.status == "fail"
    assert item.evidence == "no RDMA device: ens2f1np1 (0000:86:00.1)"
    assert "openibd restart" in (item.fix or "")


def test_ibv_devinfo_must_list_every_rdma_device() -> None:
    item = checks_for(doca_installed(ibv_devices=["mlx5_0", "mlx5_1"]))["user_tools"]
    assert item.status == "fail" and item.evidence == "ibv_devinfo does not list mlx5_2, mlx5_3"
    missing = checks_for(doca_installed(ibv_devices=None, ibv_error="ibv_devinfo: command not found"))["user_tools"]
    assert missing.status == "fail" and "command not found" in missing.evidence


def test_installed_stack_with_inbox_driver_still_loaded_fails_with_openibd_fix() -> None:
    item = checks_for(doca_installed(driver_version=None))["driver"]
    assert item.status == "fail"
    assert "mlx5_core (inbox, no version) loaded; installed 24.10-1.1.4" == item.evidence
    assert "openibd restart" in (item.fix or "")


def test_missing_rdma_modules_fail_and_are_named() -> None:
    item = checks_for(doca_installed(modules=["mlx5_core", "ib_core"]))["modules"]
    assert item.status == "fail" and item.evidence == "not loaded: mlx5_ib, ib_uverbs, rdma_cm"


def test_wrong_version_fails_the_stack_check() -> None:
    item = checks_for(doca_installed("3.1.0-091000-25.07-ubuntu2204"))["stack"]
    assert item.status == "fail" and "DOCA-OFED 3.1.0" in item.evidence and item.fix


def test_time_sync_passes_on_timesyncd_fails_without_a_daemon_and_skips_when_off() -> None:
    timesyncd = doca_installed(services={"chrony": "inactive", "systemd-timesyncd": "active"})
    assert checks_for(timesyncd)["time_sync"].evidence == "systemd-timesyncd active"
    none = checks_for(doca_installed(services={"chrony": "failed", "systemd-timesyncd": "inactive"}))["time_sync"]
    assert none.status == "fail" and none.evidence == "chrony failed, systemd-timesyncd inactive"
    assert checks_for(doca_installed(), "ofed:\n  time_sync: none\n")["time_sync"].status == "skip"


def test_missing_facts_fail_instead_of_passing() -> None:
    view = fb.view(fb.answers(), {"server1": {}})
    assert Ofed().checks(view, "server1")[0].status == "fail"
    assert Ofed().plan(view, "server1").blockers


# ---- small parsers -------------------------------------------------------------------------------------------


def test_is_active_pairs_states_with_units_in_order() -> None:
    assert parse_is_active("inactive\nactive\n", ("chrony", "systemd-timesyncd")) == {
        "chrony": "inactive",
        "systemd-timesyncd": "active",
    }
    assert parse_is_active("active\n", ("chrony", "systemd-timesyncd")) == {}


def test_rdma_pci_map_reads_the_class_symlinks_relative_or_absolute() -> None:
    text = (
        "total 0\n"
        "lrwxrwxrwx 1 root root 0 Mar  3 10:12 mlx5_0 -> ../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband"
        "/mlx5_0\n"
        "lrwxrwxrwx 1 root root 73 Nov 22 16:13 rocep134s0f1 -> /sys/devices/pci0000:00/0000:00:0b.0/0000:86:00.1/"
        "infiniband/rocep134s0f1\n"
        "garbage -> nowhere\n"
    )
    assert parse_rdma_pci(text) == {"0000:3b:00.0": "mlx5_0", "0000:86:00.1": "rocep134s0f1"}


def test_local_repo_is_classified_by_what_is_on_disk() -> None:
    assert parse_local_repo("/srv/doca-host_2.9.1_amd64.deb", True, False, "").kind == "deb"
    assert parse_local_repo("/srv/none", False, False, "").kind == "missing"
    signed = parse_local_repo("/srv/r", False, True, "GPG-KEY-Mellanox.pub\nPackages\nRelease\nRelease.gpg\nx.deb\n")
    assert (signed.kind, signed.indexed, signed.signed) == ("dir", True, True)
    plain = parse_local_repo("/srv/r", False, True, "Packages.gz\nfoo.deb\n")
    assert (plain.indexed, plain.signed) == (True, False)


def test_uninstall_list_matches_nvidia_documented_pattern_only() -> None:
    installed = {
        "doca-ofed": "1",
        "doca-host": "1",
        "flexio": "1",
        "dpa-stats": "1",
        "rdma-core": "2410mlnx54",
        "libdoca-common": "1",
        "bash": "5",
        "linux-headers-5.15.0-125-generic": "5",
    }
    kept, stack = keep_packages(installed, "linux-headers-5.15.0-125-generic")
    assert stack == ["doca-host", "doca-ofed", "dpa-stats", "flexio", "libdoca-common"]
    assert "bash" not in kept and kept["linux-headers-5.15.0-125-generic"] == "5"


def test_versions_compare_numerically() -> None:
    assert sup.firmware_line("14.20.1010") < sup.firmware_line("14.32.1010")
    assert sup.firmware_line("16.35.4030") > sup.firmware_line("16.9.9999")
    assert sup.doca_package_version("2.9.1-018000-24.10-ubuntu2204") == "2.9.1"
    assert sup.driver_matches("24.10-1.1.4", "24.10-1.1.4")
    assert sup.driver_matches("23.10-1.1.9", "23.10-1.1.9.0")
    assert not sup.driver_matches(None, "24.10-1.1.4") and not sup.driver_matches("5.0-0", "24.10-1.1.4")
