"""On InfiniBand the roce stage has no QoS to set; what it checks instead, where the answers ask for a service level
(fabric.ib_sl), is the lane that SL lands on: the subnet manager programs each port's SL-to-VL table, and a packet
whose SL maps to VL 15 or to a VL the port does not operate is dropped (IBTA vol. 1, 7.6.6 and 14.2.5.8).

Reads, with sudo (umad), per IB port with a LID: `smpquery sl2vl LID` and `smpquery portinfo LID 1`
(infiniband-diags smpquery.c: sl2vl_table prints "# SL2VL table: Lid N" and one "ports: in  0, out  0: | v| v|..."
row per port pair; portinfo prints libibmad's "OperVLs:....VL0-7").
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from wizard.engine.step import CheckItem
from wizard.executors.base import Executor, SudoRefused

_ROW = re.compile(r"^ports:\s*in\s+\d+,\s*out\s+\d+:\s*((?:\|\s*\d+)+)\|?\s*$")
_OPER = re.compile(r"^OperVLs:\.*\s*VL0(?:-(\d+))?\s*$")


class IbLane(BaseModel):
    """Where one port puts the answers' SL."""

    model_config = ConfigDict(extra="forbid")

    device: str
    lid: int
    sl: int
    vl: int | None = None
    oper_vls: int | None = None  # VL0..VL(n-1) operate
    error: str | None = None


def parse_sl2vl(text: str) -> list[int] | None:
    """The 16 VLs of a CA port's SL2VL table (index = SL), or None when the output has no table row."""
    for line in text.splitlines():
        match = _ROW.match(line.strip())
        if match:
            values = [int(v) for v in re.findall(r"\d+", match.group(1))]
            return values if len(values) == 16 else None
    return None


def parse_oper_vls(text: str) -> int | None:
    """How many data VLs operate (OperVLs VL0-7 -> 8, VL0 -> 1)."""
    for line in text.splitlines():
        match = _OPER.match(line.strip())
        if match:
            return int(match.group(1) or 0) + 1
    return None


async def probe_lanes(ex: Executor, ports: list[tuple[str, int]], sl: int) -> list[IbLane]:
    """SL -> VL and the operating VLs of each (device, LID)."""
    lanes = []
    for device, lid in ports:
        lane = IbLane(device=device, lid=lid, sl=sl)
        try:
            table = await ex.run(["smpquery", "sl2vl", str(lid)], sudo=True)
            info = await ex.run(["smpquery", "portinfo", str(lid), "1"], sudo=True)
        except SudoRefused:
            lane.error = "sudo refused"
            lanes.append(lane)
            continue
        if table.exit_status == 127:
            lane.error = "smpquery not installed (infiniband-diags)"
        elif not table.ok:
            lane.error = table.first_error_line()
        else:
            vls = parse_sl2vl(table.stdout)
            lane.vl = vls[sl] if vls else None
            lane.oper_vls = parse_oper_vls(info.stdout) if info.ok else None
            lane.error = None if vls else "no SL2VL table in smpquery's output"
        lanes.append(lane)
    return lanes


def lane_check(sl: int, lanes: list[IbLane]) -> CheckItem:
    """The answers' SL reaches an operating data VL on every IB port."""
    title = f"service level {sl} on an operating virtual lane"
    unread = [f"{lane.device}: {lane.error}" for lane in lanes if lane.error]
    dropped = [
        f"{lane.device} (LID {lane.lid}): SL {sl} -> VL {lane.vl}"
        + (" (VL 15: dropped)" if lane.vl == 15 else f", but only VL0-{(lane.oper_vls or 1) - 1} operate")
        for lane in lanes
        if lane.vl is not None and (lane.vl == 15 or (lane.oper_vls is not None and lane.vl >= lane.oper_vls))
    ]
    if dropped:
        return CheckItem(
            id="ib_sl",
            title=title,
            status="fail",
            evidence="; ".join(dropped) + ": NCCL_IB_SL traffic on it is dropped",
            fix=f"map SL {sl} to an operating VL in the subnet manager's QoS settings (opensm: qos_sl2vl in "
            "opensm.conf, or UFM), or choose another fabric.ib_sl",
        )
    if unread or not lanes:
        return CheckItem(
            id="ib_sl",
            title=title,
            status="warn",
            evidence="; ".join(unread) or "no IB port with a LID to ask",
            fix="install infiniband-diags (smpquery) so the SL-to-VL table can be read",
        )
    where = ", ".join(f"{lane.device} VL {lane.vl}" for lane in lanes)
    return CheckItem(id="ib_sl", title=title, status="pass", evidence=f"SL {sl} -> {where}")
