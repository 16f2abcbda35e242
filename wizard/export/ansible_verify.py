"""What each stage's checks rely on that a command can show, as host vars and `ansible.builtin.assert` tasks."""

from __future__ import annotations

from typing import Any

from wizard.engine.step import ClusterView


def host_vars(view: ClusterView, host: str) -> dict[str, Any]:
    """The discovery facts the roles need, and the state the verification asserts expect, for one host."""
    out: dict[str, Any] = {}
    disc = view.stage_facts(host, "discovery") or {}
    out["roce_wizard_discovery"] = {
        "hostname": disc.get("hostname"),
        "os": f"{disc.get('os_id', '?')} {disc.get('os_version', '?')}",
        "kernel": disc.get("kernel"),
        "ssh_interface": disc.get("ssh_interface"),
        "ports": [
            {k: p.get(k) for k in ("netdev", "pci", "rdma_device", "model") if k in p} for p in disc.get("ports", [])
        ],
        "soft_rdma": [
            {k: p.get(k) for k in ("netdev", "rdma_device") if k in p} for p in disc.get("soft_rdma", []) or []
        ],
    }
    network = _network(view, host)
    if network:
        out["roce_wizard_network"] = network
    roce = _roce(view, host)
    if roce:
        out["roce_wizard_roce"] = roce
    return out


def _network(view: ClusterView, host: str) -> dict[str, Any] | None:
    from steps.network.render import wanted_sysctls
    from steps.network.stage import load_design, sysctls_wanted

    if view.stage_facts(host, "network") is None:
        return None
    loaded = load_design(view, host)
    if isinstance(loaded, str) or loaded[2].blockers:
        return None
    d = loaded[2]
    mtu = view.answers.network.mtu
    interfaces = []
    bonds = []
    for e in d.endpoints:
        interfaces.append({"netdev": e.netdev, "address": e.address, "mtu": mtu})
        interfaces += [{"netdev": m, "address": None, "mtu": mtu} for m in e.members]
        if e.bond is not None:
            policy = e.bond.transmit_hash_policy if e.bond.mode in ("802.3ad", "balance-xor", "balance-tlb") else None
            # iproute2's names, which `ip -d` prints in the bond's linkinfo (kernel bond_mode_tbl)
            bonds.append({"name": e.netdev, "mode": e.bond.mode, "transmit_hash_policy": policy})
    sysctls = wanted_sysctls(d.sysctl_netdevs) if sysctls_wanted(view, d) else {}
    return {
        "mtu": mtu,
        "interfaces": interfaces,
        "bonds": bonds,
        "sysctls": [{"key": k, "path": _proc_sys(k), "value": v} for k, v in sysctls.items()],
    }


def _proc_sys(key: str) -> str:
    """/proc/sys path of a dotted sysctl name (whose '/' stand for dots in an interface name): read with cat, as
    sysctl may not be on a login user's PATH (Debian keeps it in /usr/sbin)."""
    return "/proc/sys/" + "/".join(part.replace("/", ".") for part in key.split("."))


def _roce(view: ClusterView, host: str) -> dict[str, Any] | None:
    from steps.roce.desired import Desired

    facts = view.stage_facts(host, "roce")
    if not facts or not facts.get("ports"):
        return None
    want = Desired.from_answers(view.answers)
    return {
        "qos_tool": facts.get("qos_tool", "none"),
        "priority": want.priority,
        "pfc_enabled": " ".join(str(v) for v in want.pfc),
        "pfc_pattern": r"enabled\s+" + r"\s+".join(str(v) for v in want.pfc),
        "ecn": [{"path": k, "value": str(v)} for k, v in (want.ecn_values.items() if want.ecn else [])],
        "ports": [p["netdev"] for p in facts["ports"]],
    }


def verify_tasks(stage: str) -> list[dict[str, Any]]:
    """The role's verify.yml: reads with changed_when false, asserts that name host and port."""
    if stage == "network":
        return _network_tasks()
    if stage == "roce":
        return _roce_tasks()
    return []


def _read(name: str, argv: list[str], loop: str, reg: str, when: str | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {
        "name": name,
        "ansible.builtin.command": {"argv": argv},
        "loop": loop,
        "register": reg,
        "changed_when": False,
        "failed_when": False,
    }
    if when:
        task["when"] = when
    return task


def _assert(name: str, that: list[str], msg: str, loop: str, label: str) -> dict[str, Any]:
    return {
        "name": name,
        "ansible.builtin.assert": {"that": that, "fail_msg": msg, "quiet": True},
        "loop": loop,
        "loop_control": {"label": label},
    }


def _network_tasks() -> list[dict[str, Any]]:
    """One read for all ports and bonds and one for all sysctls (each read is a module run on the host, seconds
    apiece on a slow one), then one assert per port, bond and sysctl naming it."""
    net = "roce_wizard_network"
    guard = f"{net} is defined"
    return [
        {
            "name": "Network | read the ports",
            # -d adds each link's details: a bond's mode and hash policy come from the same read
            "ansible.builtin.command": {"argv": ["ip", "-j", "-d", "addr", "show"]},
            "register": "network_ip",
            "changed_when": False,
            "failed_when": False,
            "when": guard,
        },
        {
            **_assert(
                "Network | MTU and address as planned",
                [
                    "network_ip.rc == 0",
                    "network_port.mtu is defined",
                    "network_port.mtu == item.mtu",
                    "item.address is none or item.address in (network_port.addr_info | map(attribute='local')"
                    " | zip(network_port.addr_info | map(attribute='prefixlen')) | map('join', '/') | list)",
                ],
                "{{ inventory_hostname }} port {{ item.netdev }}: expected MTU {{ item.mtu }}"
                "{{ ' and address ' ~ item.address if item.address else '' }}; "
                "the host shows: {{ network_port if network_port else 'no such interface' }}",
                f"{{{{ {net}.interfaces | default([]) }}}}",
                "{{ item.netdev }}",
            ),
            "vars": {
                "network_port": "{{ network_ip.stdout | default('[]', true) | from_json"
                " | selectattr('ifname', 'equalto', item.netdev) | first | default({}) }}"
            },
            "when": guard,
        },
        {
            **_assert(
                "Network | bond mode as planned",
                [
                    "network_ip.rc == 0",
                    "network_bond.get('linkinfo', {}).get('info_kind') == 'bond'",
                    "network_bond.get('linkinfo', {}).get('info_data', {}).get('mode') == item.mode",
                    "item.transmit_hash_policy is none or "
                    "network_bond.get('linkinfo', {}).get('info_data', {}).get('xmit_hash_policy')"
                    " == item.transmit_hash_policy",
                ],
                "{{ inventory_hostname }} bond {{ item.name }}: expected mode {{ item.mode }}"
                "{{ ', hash ' ~ item.transmit_hash_policy if item.transmit_hash_policy else '' }}; "
                "ip -d shows: {{ network_bond.get('linkinfo') if network_bond else 'no such interface' }}",
                f"{{{{ {net}.bonds | default([]) }}}}",
                "{{ item.name }}",
            ),
            "vars": {
                "network_bond": "{{ network_ip.stdout | default('[]', true) | from_json"
                " | selectattr('ifname', 'equalto', item.name) | first | default({}) }}"
            },
            "when": guard,
        },
        {
            "name": "Network | read the multi-NIC sysctls",
            "ansible.builtin.command": {
                "cmd": "grep -H . {{ " + net + ".sysctls | map(attribute='path') | map('quote') | join(' ') }}"
            },
            "register": "network_sysctl",
            "changed_when": False,
            "failed_when": False,
            "when": f"{guard} and {net}.sysctls | default([]) | length > 0",
        },
        {
            **_assert(
                "Network | sysctls as planned",
                ["(item.path ~ ':' ~ item.value) in network_sysctl.stdout_lines"],
                "{{ inventory_hostname }}: {{ item.key }} should be {{ item.value }}; the host shows: "
                "{{ network_sysctl.stdout_lines | select('match', item.path ~ ':') | list | first "
                "| default('nothing (' ~ (network_sysctl.stderr | default('not read')) ~ ')') }}",
                f"{{{{ {net}.sysctls | default([]) }}}}",
                "{{ item.key }}",
            ),
            "when": guard,
        },
    ]


def _roce_tasks() -> list[dict[str, Any]]:
    roce = "roce_wizard_roce"
    guard = f"{roce} is defined and {roce}.qos_tool == 'mlnx_qos'"
    return [
        {
            **_read(
                "Roce | read each port's QoS",
                ["mlnx_qos", "-i", "{{ item }}"],
                f"{{{{ {roce}.ports | default([]) }}}}",
                "roce_qos",
            ),
            "when": guard,
            "become": True,  # mlnx_qos talks DCB netlink, which needs root (and /usr/sbin on the PATH)
        },
        {
            **_assert(
                "Roce | trust DSCP and PFC on the lossless priority only",
                [
                    "item.rc == 0",
                    "'Priority trust state: dscp' in item.stdout",
                    f"item.stdout is search({roce}.pfc_pattern)",
                ],
                "{{ inventory_hostname }} port {{ item.item }}: expected trust dscp and PFC enabled "
                f"{{{{ {roce}.pfc_enabled }}}} (priority {{{{ {roce}.priority }}}}); mlnx_qos shows: "
                "{{ item.stdout | default(item.stderr) }}",
                "{{ roce_qos.results | default([]) }}",
                "{{ item.item }}",
            ),
            "when": guard,
        },
        {
            **_read(
                "Roce | read each port's ECN settings",
                ["cat", "/sys/class/net/{{ item.0 }}/ecn/{{ item.1.path }}"],
                f"{{{{ {roce}.ports | product({roce}.ecn) | list }}}}",
                "roce_ecn",
            ),
            "when": f"{roce} is defined",
        },
        {
            **_assert(
                "Roce | ECN/DCQCN as planned",
                ["item.rc == 0", "item.stdout | trim == item.item.1.value"],
                "{{ inventory_hostname }} port {{ item.item.0 }}: ecn/{{ item.item.1.path }} should be "
                "{{ item.item.1.value }}, is {{ item.stdout | default(item.stderr) }}",
                "{{ roce_ecn.results | default([]) }}",
                "{{ item.item.0 }} {{ item.item.1.path }}",
            ),
            "when": f"{roce} is defined",
        },
    ]
