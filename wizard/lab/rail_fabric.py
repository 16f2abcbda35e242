"""Build the switches of a rail fabric (wizard/lab/rails_plan.py): one leaf per rail per scalable unit, the spines,
every leaf cabled to every spine, and a management switch; then the cabling of every host port.

Front panels: on a one-SU fabric (rails-16) a leaf has 64 ports, or enough for every host twice (its own port and a
``wrong_leaf`` spare), the last one toward spine-0, host k on port k. On a multi-SU fabric a leaf has its SU's 32
hosts on ports 1-32, their ``wrong_leaf`` spares on 33-64 and its uplinks on 65.. (one per spine, in spine order);
spine j's port toward leaf L is port L+1 (leaves numbered SU by SU, rail by rail). The spine's port count is logical
(a chassis or a second tier in a real fabric of 256 leaves); what matters to the lab is which cable a flow crosses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wizard.lab.faults import Fault
from wizard.lab.rails_plan import HOSTS_PER_SU, RailPlan
from wizard.lab.switches import Switch, SwitchFabric, SwitchPort, Uplink, fault_rail

UPLINK_INDEX = 64  # a one-SU leaf's port toward the spine on a 64-port leaf (hosts from port 1, the spine on the last)
SPARES_FROM = HOSTS_PER_SU  # a multi-SU leaf's wrong_leaf spare for host port k is port 32 + k
MGMT_DESCR = "Cumulus Linux version 5.9.1 running on Nvidia SN2201"


def _chassis_mac(n: int) -> str:
    return f"1c:34:da:{(n >> 8) & 0xFF:02x}:{n & 0xFF:02x}:00"


def _target_port(faults: list[Fault], host: str, rail: int, netdevs: list[str]) -> bool:
    """Whether ``wrong_leaf`` moves this host port's cable."""
    return any(f.host == host and f.kind == "wrong_leaf" and fault_rail(f, netdevs) == rail for f in faults)


def rail_fabric(
    hosts: list[str],
    netdevs: list[str],
    faults: Iterable[Fault] = (),
    switch_os: str = "cumulus",
    os_of: Mapping[str, str] | None = None,
    plan: RailPlan | None = None,
    line_gbps: float = 400.0,
) -> SwitchFabric:
    """The leaves and spines of ``plan`` (default: the one-SU rails-16 fabric), every leaf and spine running
    ``switch_os`` (the NOS's port names: swp5, Ethernet32 alias etp5, Ethernet5/1) or the one ``os_of`` names for it
    (the answers' switches.os_of: a mixed fabric). ``netdevs`` are a host's data ports in rail order; ``line_gbps``
    their rate, which the uplinks share.

    Faults change the cabling or a leaf port's state: ``wrong_leaf`` moves the cable of one host port to a spare port
    of the next rail's leaf of its SU, so LLDP names that leaf and the port sits in the wrong rail's segment;
    ``switch_pfc_off``/``switch_mtu``/``switch_ecn_off`` change the leaf port the host port is cabled to, on top of
    what was loaded (wizard/lab/switches.py apply_faults); ``degraded_uplink`` slows one leaf-spine cable
    (wizard/lab/degraded.py).
    """
    from wizard.lab.degraded import apply_uplink_faults
    from wizard.lab.switch_os import descr_of, rebuild

    faults = list(faults)
    plan = plan or RailPlan(16, len(netdevs))
    fab = SwitchFabric(faults=faults, netdevs=list(netdevs))
    os_of = dict(os_of or {})

    def switch(name: str, number: int, mgmt_ip: str, role: str, **kw: object) -> Switch:
        nos = os_of.get(name, switch_os)
        made = Switch(name, _chassis_mac(number), mgmt_ip, role, os=nos, descr=descr_of(nos), **kw)  # type: ignore[arg-type]
        fab.switches[name] = made
        return made

    nsus = max(plan.su_count, plan.su_of(len(hosts) - 1) + 1) if hosts else plan.su_count
    single = not plan.multi_su
    for j in range(plan.spine_count):
        # one SU: spine-0 is switch 100 at 10.0.255.100, as rails-16 always had it
        spine = switch(plan.spine_name(j), 100 + j if single else 0x300 + j, f"10.0.255.{100 + j}", "spine")
        fab.spines.append(spine.name)
    radix = max(UPLINK_INDEX, 2 * len(hosts) + 1) if single else SPARES_FROM + HOSTS_PER_SU
    leaves: dict[tuple[int, int], Switch] = {}
    for su in range(nsus):
        for rail in range(plan.rails):
            number = su * plan.rails + rail  # leaves SU by SU, rail by rail
            mgmt_ip = f"10.0.255.{rail + 1}" if single else f"10.0.{248 + number // 64}.{number % 64 + 1}"
            leaf = switch(
                plan.leaf_name(su, rail), number + 1 if single else 0x100 + number, mgmt_ip, "leaf",
                rail=rail, su=su, segment=f"rail{rail}", gateway=plan.gateway(rail),
            )  # fmt: skip
            leaves[(su, rail)] = leaf
            for index in range(1, radix if single else radix + 1):
                leaf.front(index)
            for j, spine_name in enumerate(fab.spines):
                front = radix if single else radix + 1 + j
                _cable_uplink(fab, leaf, fab.switches[spine_name], front, number + 1, line_gbps)
    _cable_hosts(fab, hosts, netdevs, plan, leaves)
    apply_uplink_faults(fab, plan)
    for sw in fab.switches.values():
        rebuild(fab, sw)
    return fab


def _cable_uplink(
    fab: SwitchFabric, leaf: Switch, spine: Switch, leaf_index: int, spine_index: int, line_gbps: float
) -> None:
    up = leaf.front(leaf_index)
    up.descr = f"uplink to {spine.name}"
    leaf.uplinks.append(up.port)
    down = spine.front(spine_index)
    down.descr = f"downlink to {leaf.name}"
    spine.uplinks.append(down.port)
    fab.links[(leaf.name, spine.name)] = Uplink(up, down, line_gbps, line_gbps)


def _cable_hosts(
    fab: SwitchFabric, hosts: list[str], netdevs: list[str], plan: RailPlan, leaves: dict[tuple[int, int], Switch]
) -> None:
    """Every host's management port on mgmt-sw-0 (port = host number) and rail i on its SU's rail-i leaf."""
    mgmt = Switch("mgmt-sw-0", _chassis_mac(200), "10.0.255.200", "mgmt", descr=MGMT_DESCR)
    fab.switches[mgmt.name] = mgmt
    nrails, single = len(netdevs), not plan.multi_su
    for k, host in enumerate(hosts, start=1):
        mport = mgmt.front(k)
        mport.descr = f"{host} eno1"
        fab.mgmt_attach[host] = mport
        su, front = plan.su_of(k - 1), plan.leaf_port(k - 1)
        for rail in range(nrails):
            sp: SwitchPort
            if _target_port(fab.faults, host, rail, netdevs):
                spare = len(hosts) + k if single else SPARES_FROM + front
                sp = leaves[(su, (rail + 1) % nrails)].front(spare)
            else:
                sp = leaves[(su, rail)].front(front)
            sp.descr = f"{host} {netdevs[rail]}"
            sp.peer = (host, rail)
            fab.attach[(host, rail)] = sp
