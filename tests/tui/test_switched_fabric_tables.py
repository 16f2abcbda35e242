"""Host tables on a rail-optimized fabric: a host's leaves across all its rails in the leaf column (not rail 0's
alone), grouping by that leaf group so a mis-cabled host stands apart, and filters that find a host by any rail's
leaf. Fake facts (tests/tui/fleet_fakes.py) re-cabled per rail the way the lab's rails-16 names its leaves."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Label

from screens.app import WizardApp
from screens.vtable import VirtualTable
from tests.tui.fleet_fakes import fake_facts, host_names, make_fleet_app, send_discovery
from wizard.engine.state import StateStore
from wizard.parsers.lldp import LldpNeighbor

HOSTS = 16
MISCABLED = 4  # gpu-0005: its rail 2 port reaches leaf-r3 (the lab's wrong_leaf fault)


def _rails_app(state: Path) -> WizardApp:
    """16 hosts whose rail i reaches leaf-r<i> on front port host+1, as wizard/lab/switches.py cables rails-16."""
    app = make_fleet_app(state, HOSTS, facts=False)
    folder = StateStore(state).root / "facts"
    folder.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(host_names(HOSTS)):
        facts = fake_facts(name, index)
        for rail, port in enumerate(facts.rdma_ports()):
            leaf = rail + 1 if index == MISCABLED and rail == 2 else rail
            port.lldp = LldpNeighbor(local_port=port.netdev or "", chassis_name=f"leaf-r{leaf}", port_id=f"swp{index}")
        dumped = json.dumps({"discovery": facts.model_dump(mode="json")})
        (folder / f"{name}.json").write_text(dumped, encoding="utf-8")
    return app


async def _discovery_page(pilot, app: WizardApp):  # type: ignore[no-untyped-def]
    await pilot.press("n")
    await pilot.pause()
    send_discovery(app)
    for _ in range(100):
        await pilot.pause(0.05)
        if not app._dirty and not app._events:
            break
    app.main.show_page("discovery")
    await pilot.pause()
    return app.main.current()


async def test_the_leaf_column_names_every_rails_leaf_and_a_miscabled_rail(tmp_path: Path) -> None:
    app = _rails_app(tmp_path / "state")
    async with app.run_test(size=(160, 45)) as pilot:
        page = await _discovery_page(pilot, app)
        table = page.query_one("#disc-hosts", VirtualTable)
        leaves = {key: row[2] for key, row in zip(table.keys, table.rows, strict=True)}
        assert leaves["gpu-0001"] == "leaf-r0..r3"  # the reference server's four rails, one leaf each
        assert leaves["gpu-0005"] == "leaf-r0..r3, r2: leaf-r3"


async def test_grouping_by_leaf_puts_hosts_cabled_alike_together_and_the_miscabled_one_apart(tmp_path: Path) -> None:
    app = _rails_app(tmp_path / "state")
    async with app.run_test(size=(160, 45)) as pilot:
        page = await _discovery_page(pilot, app)
        await pilot.press("g")
        await pilot.pause()
        table = page.query_one("#disc-hosts", VirtualTable)
        headers = [(table.rows[i][0], table.rows[i][1]) for i in sorted(table.group_rows)]
        assert headers == [("▸ leaf-r0..r3", "15 hosts"), ("▸ leaf-r0..r3, r2: leaf-r3", "1 host")]
        assert str(page.query_one(".filter-state", Label).render()) == f"{HOSTS}/{HOSTS} hosts · by leaf"


async def test_a_filter_on_one_rails_leaf_finds_the_hosts_on_every_page(tmp_path: Path) -> None:
    app = _rails_app(tmp_path / "state")
    async with app.run_test(size=(160, 45)) as pilot:
        page = await _discovery_page(pilot, app)
        await pilot.press("slash", *"leaf-r3")
        await pilot.pause()
        assert len(page.query_one("#disc-hosts", VirtualTable).keys) == HOSTS  # every host's rail 3
        for name in ("summary", "hosts"):
            app.main.show_page(name)
            await pilot.pause()
            shown = app.main.current()
            await pilot.press("slash", *"leaf-r3")
            await pilot.pause()
            keys = [k for k in shown.query_one(VirtualTable).keys if k]
            assert len(keys) == HOSTS, name
