"""The Hosts page imports an Ansible inventory: key i, a path and a group, and the host list is that group's hosts."""

from __future__ import annotations

from pathlib import Path

from screens.inventory_dialog import AskInventory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"


async def _import(pilot, app, path: str, group: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("n")
    await pilot.pause()
    app.main.current().query_one("#hosts-table").focus()
    await pilot.press("i")
    await pilot.pause()
    assert isinstance(app.screen, AskInventory)
    app.screen.query_one("#inventory-path").value = path
    app.screen.query_one("#inventory-group").value = group
    app.screen.query_one("#inventory-group").focus()
    await pilot.press("enter")
    await pilot.pause()


async def test_key_i_imports_a_group_of_an_ini_inventory_into_the_host_list(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _import(pilot, app, str(FIXTURES / "hgx.ini"), "gpu_rack2")
        hosts = app.engine.answers.hosts
        assert [h.name for h in hosts] == ["gpu-r2-01", "gpu-r2-02", "gpu-r2-03", "gpu-r2-04", "gpu-r2-05"]
        assert (hosts[4].address, hosts[4].port, hosts[4].user) == ("10.1.2.105", 2222, "hpcadmin")
        table = app.main.current().query_one("#hosts-table")
        assert table.row_count == 5
        assert app.progress.hosts == [h.name for h in hosts]
        messages = [n.message for n in app._notifications]
        assert any(
            m.startswith("skipped ansible_become_password (5 hosts), ansible_password (1 host)") for m in messages
        )
        assert "hunter2" not in app.engine.save_answers().read_text()


async def test_an_unknown_group_leaves_the_host_list_as_it_was_and_says_which_groups_exist(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _import(pilot, app, str(FIXTURES / "hgx.ini"), "gpu_rack9")
        assert [h.name for h in app.engine.answers.hosts] == ["server1", "server2"]
        messages = [n.message for n in app._notifications]
        assert any("gpu_rack9" in m and "gpu_rack1, gpu_rack2" in m for m in messages), messages
