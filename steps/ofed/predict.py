"""What installing DOCA-OFED / MLNX_OFED changes in the facts later stages plan from (for planning ahead)."""

from __future__ import annotations

from typing import Any

from steps.discovery.facts import DiscoveryFacts
from wizard.engine.predict import HostFacts, Prediction, rename_everywhere
from wizard.engine.step import ClusterView, HostPlan

# Packages the doca-ofed profile and MLNX_OFED bring that later stages look for (tools, perftest).
_STACK_PACKAGES = ("mlnx-ofed-kernel-dkms", "mlnx-tools", "rdma-core", "ibverbs-utils", "infiniband-diags", "perftest")
PREDICTED = "predicted"


def predicted_device_names(disc: DiscoveryFacts) -> dict[str, str]:
    """Inbox RDMA device name -> the name the OFED stack's mlx5_ib gives it.

    With the inbox rdma-core, udev renames devices after their PCI address (``rocep59s0f0``: rdma-core
    kernel-boot/rdma-persistent-naming.rules, NAME_FALLBACK). DOCA-OFED and MLNX_OFED keep the kernel's names:
    mlx5_ib registers ``mlx5_%d`` in the order mlx5_core probes the PCI functions, which is PCI address order
    (roce-correctness.md item 9). Virtual functions are left out: they appear only once SR-IOV creates them.
    """
    names: dict[str, str] = {}
    physical = [p for p in sorted(disc.ports, key=lambda p: p.pci) if not (p.model or "").endswith(" VF")]
    for index, port in enumerate(physical):
        new = f"mlx5_{index}"
        if port.rdma_device and port.rdma_device != new:
            names[port.rdma_device] = new
    return names


def predict(view: ClusterView, host: str, plan: HostPlan) -> Prediction | None:
    """After the stack is installed and the driver restarted: OFED device names, tools and packages."""
    raw = view.stage_facts(host, "discovery")
    stack = view.answers.ofed.stack
    if raw is None or stack == "inbox":
        return None
    disc = DiscoveryFacts.model_validate(raw)
    if disc.ofed_stack:
        return None  # already on an OFED stack: an upgrade keeps the names
    names = predicted_device_names(disc)
    label = "DOCA-OFED" if stack == "doca" else "MLNX_OFED"
    values = [
        f"RDMA device {old} -> {new} ({label} names devices mlx5_<n> in PCI order; re-read after stage ofed)"
        for old, new in names.items()
    ]
    values.append(f"{label} tools present: mlnx_qos, show_gids, cma_roce_tos, ECN sysfs tree, perftest")
    guards = [
        f"test -e /sys/class/infiniband/{new} || {{ echo 'predicted RDMA device {new} is missing: "
        f"re-run roce-wizard plan on this host before this script' >&2; exit 1; }}"
        for new in names.values()
    ]
    return Prediction("ofed", values, lambda facts: _after_install(facts, names, stack), guards)


def _after_install(facts: HostFacts, names: dict[str, str], stack: str) -> HostFacts:
    facts = rename_everywhere(facts, names)
    disc = facts.get("discovery") or {}
    disc["ofed_stack"] = "DOCA" if stack == "doca" else "MLNX_OFED"
    packages: dict[str, Any] = disc.setdefault("packages", {})
    for name in (*_STACK_PACKAGES, "doca-ofed" if stack == "doca" else "mlnx-ofed-all"):
        packages[name] = PREDICTED
    roce = facts.get("roce")
    if roce:
        roce.update(qos_tool="mlnx_qos", cma_tool=True, openibd=True)
        for port in roce.get("ports", []):
            # The ECN tree exists with the OFED driver; its values are read at run time, so the plan writes all.
            if port.get("ecn") is None:
                port["ecn"] = {}
    gpudirect = facts.get("gpudirect")
    if gpudirect:
        gpudirect["ofed_stack"] = stack
        gpudirect["perftest_error"] = None
        gpudirect["kernel_headers"] = True  # stage ofed installs them first: DKMS builds the OFED modules with them
    return facts
