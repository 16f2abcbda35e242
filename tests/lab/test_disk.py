"""Simulated hosts keep their disks between labs, like real hosts between two wizard runs: files and packages
survive, runtime-only settings do not, and persisted configuration comes back at boot."""

from __future__ import annotations

from pathlib import Path

from wizard.lab import Lab


async def test_files_packages_and_persisted_modules_survive_runtime_settings_do_not(tmp_path: Path) -> None:
    first = Lab.reference(["server1", "server2"])
    first.time_scale = 0.001
    assert first.use_disks(tmp_path) == [], "no saved disks yet: bare hosts"
    await first.start()
    host = first.host("server1")
    await host.run("mkdir -p /etc/demo && echo kept > /etc/demo/file")
    await host.run("echo bonding > /etc/modules-load.d/demo.conf")
    await host.run("ip link set dev ens1f0np0 mtu 9000")  # runtime only
    await host.exec("true", out=lambda _: None, err=lambda _: None)  # what an SSH command triggers: a save
    await first.stop()

    second = Lab.reference(["server1", "server2"])
    second.time_scale = 0.001
    assert second.use_disks(tmp_path) == ["server1"]
    await second.start()
    again = second.host("server1")
    assert (await again.run("cat /etc/demo/file")).stdout == "kept\n"
    assert "bonding" in (await again.run("lsmod")).stdout, "modules-load.d is applied at boot"
    assert "mtu 1500" in (await again.run("ip link show ens1f0np0")).stdout, "a runtime MTU is gone after a boot"
    await second.stop()


async def test_a_disk_of_another_host_or_version_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "server1.json").write_text('{"version": 99, "host": "server1", "tree": {}, "attrs": {}}')
    (tmp_path / "server2.json").write_text("not json")
    lab = Lab.reference(["server1", "server2"])
    assert lab.use_disks(tmp_path) == []


async def test_a_command_that_changed_nothing_does_not_rewrite_the_disk(tmp_path: Path) -> None:
    lab = Lab.reference(["server1", "server2"])
    lab.time_scale = 0.001
    lab.use_disks(tmp_path)
    await lab.start()
    host = lab.host("server1")
    await host.exec("true", out=lambda _: None, err=lambda _: None)
    image = tmp_path / "server1.json"
    first = image.stat()
    assert (await host.run("cat /etc/hostname")).stdout  # reads only
    assert image.stat().st_ino == first.st_ino, "an unchanged image is not written (nor fsynced) again"
    await host.run("touch /etc/changed")
    assert image.stat().st_ino != first.st_ino, "a change is saved at once, by an atomic replace"
    await lab.stop()
