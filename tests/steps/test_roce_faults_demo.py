"""Stage roce with the lab's pfc_off fault: lldpad on server2 rewrites PFC; the stage fails there with the fix."""

from __future__ import annotations

from tests.steps.test_roce_demo import EXAMPLE, lab_runner, rerun, run, stage_status
from wizard.answers.model import load_answers, parse_answers


async def test_pfc_off_fails_only_server2_naming_its_ports_then_stop_lldpad_repairs_it(tmp_path):
    async with lab_runner(tmp_path, load_answers(EXAMPLE), ("server2:pfc_off",)) as (lab, runner):
        assert await run(runner, ["discovery", "roce"]) == 1
        status = stage_status(runner, "roce")
        assert status["server1"][0] == "done"
        state, reason = status["server2"]
        assert state == "failed"
        assert reason == (
            "server2: lldpad is active/enabled and overwrites PFC on ens1f0np0, ens1f1np1, ens2f0np0, ens2f1np1; "
            "fix: sudo systemctl disable --now lldpad, or set roce.stop_lldpad: true"
        )
        assert lab.host("server1").netdevs["ens1f0np0"].qos.pfc[3] == 1
        assert lab.host("server2").netdevs["ens1f0np0"].qos.pfc == [0] * 8

        # the same hosts and state, answers now allowing the wizard to stop lldpad: server2 is repaired
        allowed = parse_answers(EXAMPLE.read_text().replace("stop_lldpad: false", "stop_lldpad: true"))
        async with lab_runner(tmp_path, allowed, lab=lab) as (_, again):
            result = await rerun(again, "roce")
            assert result["server2"][0] == "done", result["server2"][1]
            assert result["server2"][2][0].summary == "stop and disable lldpad.service"
            server2 = lab.host("server2")
            assert not server2.lldpad_active()
            assert server2.netdevs["ens1f0np0"].qos.pfc == [0, 0, 0, 1, 0, 0, 0, 0]
