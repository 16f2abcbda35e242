"""Stage gpudirect against the lab: nvidia-peermem on DOCA hosts with the proprietary driver, kept across a
reboot; the no_peermem fault fails server1 with the module and the fix while server2 is verified."""

from __future__ import annotations

from tests.steps.test_roce_demo import EXAMPLE, lab_runner, reboot, rerun, run, stage_status
from wizard.answers.model import load_answers, parse_answers


async def test_peermem_is_loaded_and_persisted_and_no_peermem_fails_only_server1(tmp_path):
    async with lab_runner(tmp_path, load_answers(EXAMPLE), ("server1:no_peermem",)) as (lab, runner):
        assert await run(runner, ["discovery", "gpudirect"]) == 1
        status = stage_status(runner, "gpudirect")
        assert status["server2"][0] == "done", status["server2"]
        assert "nvidia_peermem" in lab.host("server2").modules
        state, reason = status["server1"]
        assert state == "failed"
        assert "nvidia_peermem loaded: nvidia_peermem is not loaded; kernel log: " in reason
        assert "Unknown symbol ib_register_peer_memory_client" in reason
        assert "reinstall the NVIDIA driver after DOCA-OFED" in reason

        # modules-load.d brings nvidia-peermem back at boot: server2 stays verified with nothing to change
        await reboot(lab, "server2")
        assert "nvidia_peermem" in lab.host("server2").modules
        async with lab_runner(tmp_path, load_answers(EXAMPLE), lab=lab) as (_, again):
            result = await rerun(again, "gpudirect")
        assert result["server2"][0] == "done" and result["server2"][2] == []
        assert result["server1"][0] == "failed"


async def test_inbox_host_with_open_gpu_kernel_modules_uses_dmabuf_and_loads_nothing(tmp_path):
    answers = parse_answers(EXAMPLE.read_text().replace("stack: doca", "stack: inbox"))
    async with lab_runner(tmp_path, answers, doca=False) as (lab, runner):
        for name in lab.names:  # the -open driver flavour: open GPU kernel modules (Dual MIT/GPL)
            lab.host(name).packages["nvidia-dkms-550-server-open"] = "550.127.05-0ubuntu0.22.04.1"
        assert await run(runner, ["discovery", "gpudirect"]) == 0, stage_status(runner, "gpudirect")
        status, reason = stage_status(runner, "gpudirect")["server1"]
        assert reason.startswith("verified; DMA-BUF: kernel 5.15.0-125-generic (>= 5.12) and the open GPU kernel")
        assert "nvidia_peermem" not in lab.host("server1").modules
