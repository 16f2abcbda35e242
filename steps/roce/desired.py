"""The RoCE state the answers ask for, derived from the one ToS value, and how a port's state differs from it."""

from __future__ import annotations

from dataclasses import dataclass

from steps.roce.facts import ROCE_V1, ROCE_V2, RdmaCm, RocePort, default_dscp2prio, pfc_vector
from wizard.answers.model import Answers


@dataclass(frozen=True)
class Desired:
    """DSCP, lossless priority, ECN and RDMA-CM defaults every RoCE port of every host must have."""

    tos: int
    dscp: int
    priority: int
    ecn: bool
    cm_mode: str
    cnp_dscp: int
    cnp_priority: int
    stop_lldpad: bool
    cable_len: int | None = None  # metres of cable the PFC headroom must cover; None: leave the adapter's

    @classmethod
    def from_answers(cls, answers: Answers) -> Desired:
        roce = answers.roce
        return cls(
            tos=roce.tos,
            dscp=roce.dscp,
            priority=roce.priority,
            ecn=roce.ecn,
            cm_mode=ROCE_V2 if roce.rdma_cm_roce_version == 2 else ROCE_V1,
            cnp_dscp=roce.cnp_dscp,
            cnp_priority=roce.cnp_priority,
            stop_lldpad=roce.stop_lldpad,
            cable_len=roce.cable_length_m,
        )

    @property
    def pfc(self) -> list[int]:
        return pfc_vector(self.priority)

    @property
    def pfc_csv(self) -> str:
        """The vector as ``mlnx_qos --pfc`` takes it: 0,0,0,1,0,0,0,0."""
        return ",".join(str(v) for v in self.pfc)

    @property
    def ecn_values(self) -> dict[str, int]:
        """ECN/DCQCN files under /sys/class/net/IF/ecn and their values: notification and reaction point on the
        lossless priority, CNPs sent with their own DSCP and 802.1p priority."""
        p = self.priority
        return {
            f"roce_np/enable/{p}": 1,
            f"roce_rp/enable/{p}": 1,
            "roce_np/cnp_dscp": self.cnp_dscp,
            "roce_np/cnp_802p_prio": self.cnp_priority,
        }

    def summary(self) -> str:
        return f"ToS {self.tos} = DSCP {self.dscp} -> priority {self.priority}"


def effective_dscp2prio(port: RocePort) -> dict[int, int]:
    """The DSCP map in force: what the tool showed, else the adapter default (mlnx_qos hides it under trust pcp)."""
    return {**default_dscp2prio(), **port.dscp2prio}


@dataclass(frozen=True)
class PortDelta:
    """What is wrong on one port relative to :class:`Desired` (empty: nothing)."""

    trust: bool
    pfc: bool
    dscp: bool
    ecn: dict[str, int]  # ECN files whose value must be written
    cable: bool = False  # the PFC headroom is sized for another cable length than the answers give

    @property
    def qos(self) -> bool:
        return self.trust or self.pfc or self.dscp or self.cable

    @property
    def empty(self) -> bool:
        return not (self.qos or self.ecn)


def port_delta(port: RocePort, want: Desired) -> PortDelta:
    """Compare one port with the desired state; ECN counts only where the port exposes the ecn tree."""
    ecn: dict[str, int] = {}
    if want.ecn and port.ecn is not None:
        ecn = {path: value for path, value in want.ecn_values.items() if port.ecn.get(path) != value}
    return PortDelta(
        trust=port.trust != "dscp",
        pfc=port.pfc != want.pfc,
        dscp=effective_dscp2prio(port).get(want.dscp) != want.priority,
        ecn=ecn,
        cable=want.cable_len is not None and port.cable_len != want.cable_len,
    )


def cm_needs(cm: RdmaCm, want: Desired) -> tuple[bool, bool]:
    """(mode, tos) to set on one RDMA device; None read back means the kernel default (RoCE v2, ToS 0)."""
    mode = cm.mode or ROCE_V2
    tos = cm.tos if cm.tos is not None else 0
    return mode != want.cm_mode, tos != want.tos


def pfc_text(vector: list[int] | None) -> str:
    """'priority 3', 'priorities 3,4', 'none' or 'unknown' for a PFC vector."""
    if vector is None:
        return "unknown"
    on = [str(i) for i, v in enumerate(vector) if v]
    if not on:
        return "none"
    return ("priority " if len(on) == 1 else "priorities ") + ",".join(on)
