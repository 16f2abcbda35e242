"""Simulated hosts keep their disks between labs, like real hosts between two wizard runs: files and packages
survive, runtime-only settings do not, and persisted configuration comes back at boot."""

from __future__ import annotations

from pathlib import Path

from wizard.lab import Lab, SimHost


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


async def saving_lab(tmp_path: Path) -> tuple[Lab, SimHost]:
    """The reference pair keeping its disks in ``tmp_path``, and server1 after one command (its first save)."""
    lab = Lab.reference(["server1", "server2"])
    lab.time_scale = 0.001
    lab.use_disks(tmp_path)
    await lab.start()
    host = lab.host("server1")
    await host.exec("true", out=lambda _: None, err=lambda _: None)
    return lab, host


async def test_a_command_that_changed_nothing_does_not_rewrite_the_disk(tmp_path: Path) -> None:
    lab, host = await saving_lab(tmp_path)
    image = tmp_path / "server1.json"
    first = image.stat()
    assert (await host.run("cat /etc/hostname")).stdout  # reads only
    assert image.stat().st_ino == first.st_ino, "an unchanged image is not written (nor fsynced) again"
    await host.run("touch /etc/changed")
    assert image.stat().st_ino != first.st_ino, "a change is saved at once, by an atomic replace"
    await lab.stop()


async def test_a_read_only_command_does_not_even_dump_the_image(tmp_path: Path, monkeypatch) -> None:
    """Dumping every host's files to compare them after each of a bandwidth round's thousands of commands was a fifth
    of the lab's work: with no node changed anywhere and the same package database, nothing is dumped."""
    from wizard.lab import disk

    lab, host = await saving_lab(tmp_path)
    dumped: list[str] = []
    real = disk._dump
    monkeypatch.setattr(disk, "_dump", lambda node: dumped.append("x") or real(node))
    for command in ("cat /etc/hostname", "ls -l /sys/class/net", "ip -j addr show", "grep -sH . /proc/uptime"):
        await host.run(command)
    assert dumped == [], "read-only commands dump nothing"
    await lab.stop()


async def test_a_mode_owner_or_package_change_alone_is_saved(tmp_path: Path) -> None:
    """What the skip above must not miss: chmod and chown change no byte of a file, apt changes no file the image
    shows, yet each survives a power cycle."""
    lab, host = await saving_lab(tmp_path)
    await host.run("echo x > /etc/kept && chmod 600 /etc/kept")
    image = tmp_path / "server1.json"
    for command in ("chmod 640 /etc/kept", "chown 1000:1000 /etc/kept"):
        before = image.stat().st_ino
        await host.run(command)
        assert image.stat().st_ino != before, f"{command} is saved"
    before = image.stat().st_ino
    host.packages["roce-wizard-demo"] = "1.0"  # what dpkg -i records, without a file the image shows
    await host.exec("true", out=lambda _: None, err=lambda _: None)
    assert image.stat().st_ino != before, "a package database change is saved"
    await lab.stop()

    again = Lab.reference(["server1", "server2"])
    assert again.use_disks(tmp_path) == ["server1"]
    await again.start()
    host = again.host("server1")
    assert (await host.run("stat -c '%a %u %g' /etc/kept")).stdout == "640 1000 1000\n"
    assert host.packages.get("roce-wizard-demo") == "1.0"
    await again.stop()
