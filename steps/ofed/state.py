"""Where a host stands against the requested stack: wanted release installed, or another one in the way."""

from __future__ import annotations

from dataclasses import dataclass

from steps.ofed import support as sup
from steps.ofed.facts import TOOL_PACKAGES, OfedFacts
from wizard.answers.sections import OfedSection


@dataclass(frozen=True)
class State:
    """Where the host stands against the requested release."""

    wanted_installed: bool
    foreign: str | None  # another OFED stack/version that must be uninstalled first
    installed_label: str


def assess(ofed: OfedSection, facts: OfedFacts) -> State:
    doca = facts.installed("doca-ofed")
    ofed_present = facts.ofed_stack is not None or bool(facts.installed("mlnx-ofed-kernel-dkms"))
    found = _found_label(facts)
    if ofed.stack == "doca":
        wanted = bool(doca) and sup.doca_package_version(doca or "") == ofed.doca_version
    elif ofed.stack == "mlnx_ofed":
        wanted = facts.ofed_stack == "MLNX_OFED" and facts.ofed_version == ofed.mlnx_ofed_version
    else:
        wanted = all(facts.installed(p) for p in TOOL_PACKAGES) and not ofed_present and not facts.nvidia_userspace()
        ofed_present = ofed_present or facts.nvidia_userspace()
    return State(wanted, None if wanted or not ofed_present else found, found)


def _found_label(facts: OfedFacts) -> str:
    doca = facts.installed("doca-ofed")
    if doca:
        return f"DOCA-OFED {sup.doca_package_version(doca)} (doca-ofed {doca})"
    if facts.ofed_stack == "MLNX_OFED":
        return f"MLNX_OFED {facts.ofed_version}"
    if facts.ofed_stack:
        return f"{facts.ofed_stack} OFED {facts.ofed_version} (OFED-internal, no doca-ofed package)"
    if facts.installed("mlnx-ofed-kernel-dkms"):
        return f"NVIDIA OFED kernel packages (mlnx-ofed-kernel-dkms {facts.installed('mlnx-ofed-kernel-dkms')})"
    if facts.nvidia_userspace():
        return f"NVIDIA's rdma-core build {facts.installed('rdma-core')} without an OFED stack"
    rdma = facts.installed("rdma-core")
    return f"inbox rdma-core {rdma}" if rdma else "no RDMA stack"
