"""The lab's NCCL prints log lines the way current NCCL does, and the nccl stage still reads every one of them.

NCCL >= 2.26 prefixes WARN lines with ``[%F %T] `` by default (NCCL env.rst, NCCL_DEBUG_TIMESTAMP_FORMAT and
NCCL_DEBUG_TIMESTAMP_LEVELS; NCCL src/debug.cc ncclDebugLogV also starts every WARN with an empty line); older NCCL
prints no timestamp at all. Real 2.26.2 lines: https://github.com/NVIDIA/nccl/issues/1647.
"""

from __future__ import annotations

import re

from steps.nccl.run import lines_by_host, summarize_log
from tests.lab.test_nccl_sim import ready_lab, run_job
from wizard.parsers.nccl import parse_nccl_debug

STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] server\d:\d+:\d+ \[0\] ")
CURRENT = "2.26.2-1+cuda12.8"  # "NCCL version 2.26.2+cuda12.8" in NVIDIA/nccl#1647


def _upgrade(lab, version: str = CURRENT) -> None:
    for host in lab.hosts.values():
        host.packages["libnccl2"] = version


async def test_current_nccl_stamps_warn_lines_only_and_the_stage_keeps_them_per_host():
    lab = await ready_lab("server2:crosswire")
    _upgrade(lab)
    output, status = await run_job(lab)
    warns = [line for line in output.splitlines() if "NCCL WARN" in line]
    infos = [line for line in output.splitlines() if "NCCL INFO" in line]
    assert status == 1 and warns and all(STAMP.match(line) for line in warns)
    assert infos and not any(line.startswith("[") for line in infos)
    summary = summarize_log(lines_by_host(output)["server2"])
    assert any("Network is unreachable" in e for e in summary["errors"])
    assert "NCCL version 2.26.2+cuda12.8" in output


async def test_timestamp_levels_all_stamps_info_lines_too():
    lab = await ready_lab()
    _upgrade(lab)
    for host in lab.hosts.values():
        host.fs.install("/etc/nccl.conf", host.fs.read_text("/etc/nccl.conf") + "NCCL_DEBUG_TIMESTAMP_LEVELS=ALL\n")
    output, status = await run_job(lab)
    infos = [line for line in output.splitlines() if "NCCL INFO" in line]
    assert status == 0 and infos and all(STAMP.match(line) for line in infos)
    log = parse_nccl_debug(output)
    assert log.transport == "IB" and log.ib_devices == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"] and log.timestamped


async def test_nccl_older_than_2_26_prints_no_timestamp_even_when_asked():
    lab = await ready_lab("server2:crosswire")
    for host in lab.hosts.values():
        host.fs.install("/etc/nccl.conf", host.fs.read_text("/etc/nccl.conf") + "NCCL_DEBUG_TIMESTAMP_LEVELS=ALL\n")
    output, _ = await run_job(lab)
    assert not any(line.startswith("[") for line in output.splitlines() if "NCCL " in line)
