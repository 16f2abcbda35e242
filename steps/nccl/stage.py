"""Stage nccl: /etc/nccl.conf from discovered facts, nccl-tests across hosts, transport proven from the NCCL log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from steps.discovery.facts import DiscoveryFacts
from steps.nccl.build import SMOKE_SCRIPT, plan_tests
from steps.nccl.conf import (
    HcaChoice,
    choose_hcas,
    gid_index,
    needs_gid_index,
    parse_conf,
    render_conf,
    split_existing,
)
from steps.nccl.env import memlock_check, user_conf_check, user_overrides
from steps.nccl.facts import NcclFacts, sources_nccl_conf
from steps.nccl.launch import run_cluster_test
from steps.nccl.probe import BASHRC, DEPENDENT, nccl_prefetch, probe_host
from steps.nccl.verdict import Expect, bandwidth_causes, perf_checks, rail_ceiling, rail_health, run_checks
from wizard.engine.step import Change, CheckItem, ClusterView, FileWrite, HostPlan, ProbeContext, Step
from wizard.executors.base import Executor


@dataclass
class Desired:
    """The nccl.conf this host should have, or why it cannot be written."""

    content: str | None = None
    hcas: list[str] = field(default_factory=list)
    socket_ifname: str | None = None
    gid: int | None = None
    choice: HcaChoice = field(default_factory=HcaChoice)
    notes: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)


class Nccl(Step):
    id = "nccl"
    title = "NCCL"
    summary = "/etc/nccl.conf from discovered facts, all_reduce_perf across hosts, transport proven from the NCCL log."

    dependent_probes: ClassVar[dict[str, str]] = DEPENDENT

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        disc = ctx.facts.get("discovery") or {}
        user = ctx.host.user or ctx.answers.ssh.user
        return list(nccl_prefetch(ctx.answers.nccl, user, "libnccl2" in (disc.get("packages") or {})))

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        facts = await probe_host(ctx.executor, ctx.answers.nccl)
        return facts.model_dump(mode="json")

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        plan = HostPlan(stage=self.id, host=host)
        loaded = _load(view, host)
        if loaded is None:
            plan.blockers.append(f"{host}: no discovery facts; run the discovery stage first")
            return plan
        disc, facts = loaded
        tests = plan_tests(view.answers.nccl, facts, host)
        want = desired(view, host, disc, facts, tests.nccl_version_after)
        plan.notes += want.notes + tests.notes + _launch_notes(view)
        plan.blockers += want.blockers + tests.blockers
        if want.content is not None and want.content != facts.conf:
            plan.changes.append(
                Change(
                    summary=f"Write {facts.conf_path}: NCCL_IB_HCA=={','.join(want.hcas)}",
                    why="NCCL reads this file itself: exact HCA names, the bootstrap interface, no crossing of "
                    "rails and the RoCE traffic class; new NCCL processes pick it up, running ones keep theirs",
                    files=[FileWrite(path=facts.conf_path, content=want.content, before=facts.conf)],
                )
            )
        if facts.bashrc is not None:
            kept = "".join(line + "\n" for line in facts.bashrc.splitlines() if not sources_nccl_conf(line))
            plan.changes.append(
                Change(
                    summary=f"Remove the line that sources nccl.conf from {BASHRC}",
                    why="NCCL reads nccl.conf itself; sourcing it in every shell exports nothing to child "
                    "processes and runs any stray line as a command",
                    files=[FileWrite(path=BASHRC, content=kept, before=facts.bashrc)],
                )
            )
        plan.changes += tests.changes
        if not plan.changes and not plan.blockers:
            plan.noop_reason = (
                f"{facts.conf_path} already sets NCCL_IB_HCA=={','.join(want.hcas)} and bootstrap on "
                f"{want.socket_ifname}; {tests.ready or 'the test is ready'}"
            )
        return plan

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        loaded = _load(view, host)
        if loaded is None:
            return [CheckItem(id="facts", title="facts collected", status="fail", evidence="no discovery facts")]
        disc, facts = loaded
        cfg = view.answers.nccl
        want = desired(view, host, disc, facts, facts.nccl_version)
        overrides = user_overrides(facts, want.content)
        items = [_conf_check(facts, want), user_conf_check(facts, overrides), _bashrc_check(facts)]
        items.append(_tests_check(cfg, facts))
        if cfg.test != "none":
            items.append(memlock_check(host, facts))  # the launcher's SSH session, as mpirun/torchrun get it
        if cfg.test == "none":
            items.append(CheckItem(id="run", title="cross-host NCCL test", status="skip", evidence="nccl.test: none"))
            return items
        run = (view.stage_facts(host, self.id) or {}).get("cluster")
        gdr = view.answers.gpudirect.mode != "off" and not want.choice.soft_roce
        expect = Expect(want.hcas, gdr, want.gid is not None, overrides, facts.modules)
        items += run_checks(host, run, expect)
        everyone = {h.name: pair[1] for h in view.answers.hosts if (pair := _load(view, h.name)) is not None}
        causes = bandwidth_causes(everyone, view.answers.network.mtu)
        items += perf_checks(run, cfg.min_busbw_gbytes, causes, rail_ceiling(disc, want.hcas))
        items.append(rail_health(host, facts, view.answers.network.mtu))
        return items

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        versions = {
            h.name: (view.stage_facts(h.name, self.id) or {}).get("packages", {}).get("libnccl2")
            for h in view.answers.hosts
            if view.stage_facts(h.name, self.id)
        }
        distinct = {v for v in versions.values() if v}
        if len(distinct) <= 1:
            return {}
        listing = ", ".join(f"{h}: {v or 'none'}" for h, v in versions.items())
        item = CheckItem(
            id="versions",
            title="same NCCL on every host",
            status="warn",
            evidence=f"libnccl2 differs ({listing})",
            fix="install the same libnccl2 version everywhere (apt-get install libnccl2=VERSION libnccl-dev=VERSION)",
        )
        return {h: [item] for h in versions}

    async def cluster_probe(self, view: ClusterView, executors: dict[str, Executor]) -> dict[str, dict[str, Any]]:
        return await run_cluster_test(view, executors)


def ib_kind(layer: str) -> str:
    return {"ethernet": "RoCE", "infiniband": "InfiniBand"}.get(layer, "RDMA")


def desired(view: ClusterView, host: str, disc: DiscoveryFacts, facts: NcclFacts, version: str | None) -> Desired:
    """The nccl.conf content for ``host`` (pure): HCAs, bootstrap interface, traffic class, GID index if needed."""
    cfg, want = view.answers.nccl, Desired()
    version = version or facts.nccl_version or disc.nccl_version
    layer = view.answers.fabric.link_layer_of(host)
    want.choice = choose_hcas(facts, disc, layer)
    ib = any(p.link_layer == "InfiniBand" for p in want.choice.chosen)
    want.hcas = [p.name for p in want.choice.chosen]
    want.notes += [f"not in NCCL_IB_HCA: {why}" for why in want.choice.skipped]
    if want.choice.soft_roce:
        want.notes.append("only Soft-RoCE devices: NCCL works over them but GPUDirect RDMA is impossible")
    if not want.hcas:
        want.blockers.append(
            f"{host}: no {ib_kind(layer)} port NCCL can use "
            f"({'; '.join(want.choice.skipped) or 'no RDMA device found'}); run the ofed and network stages first"
        )
    want.socket_ifname = cfg.socket_ifname or disc.ssh_interface
    known = set(disc.other_interfaces) | {p.netdev for p in disc.ports if p.netdev}
    if want.socket_ifname is None:
        want.blockers.append(f"{host}: the interface carrying SSH is unknown; set nccl.socket_ifname")
    elif want.socket_ifname not in known:
        want.blockers.append(f"{host}: nccl.socket_ifname {want.socket_ifname} does not exist on this host")
    if needs_gid_index(version) and want.hcas and not ib:
        want.gid, problem = gid_index(want.choice.chosen)
        if problem:
            want.blockers.append(
                f"{host}: NCCL {version} needs NCCL_IB_GID_INDEX but {problem}; upgrade to NCCL "
                ">= 2.21 (selects per HCA) or give every rail port one IPv4 address"
            )
        else:
            want.notes.append(f"NCCL {version} < 2.21: NCCL_IB_GID_INDEX={want.gid} (RoCE v2 IPv4 on every HCA)")
    kept, dropped = split_existing(facts.conf, version, ib)
    want.notes += [f"removed from {facts.conf_path}: {why}" for why in dropped]
    if cfg.conf_path != "/etc/nccl.conf":
        want.notes.append(f"NCCL reads {cfg.conf_path} only through NCCL_CONF_FILE (NCCL >= 2.23); jobs must set it")
    if want.blockers:
        return want
    want.content = render_conf(
        host=host,
        conf_path=cfg.conf_path,
        hcas=want.hcas,
        socket_ifname=str(want.socket_ifname),
        tos=view.answers.roce.tos,
        gid=want.gid,
        nccl_version=version,
        kept=kept,
        ib=ib,
        ib_sl=view.answers.fabric.ib_sl,
    )
    return want


def _launch_notes(view: ClusterView) -> list[str]:
    """What the operator must provide for the cross-host run (the wizard does not hand out SSH keys)."""
    cfg, hosts = view.answers.nccl, view.answers.hosts
    if cfg.test == "none" or len(hosts) < 2:
        return []
    first, user = hosts[0].name, hosts[0].user or view.answers.ssh.user
    if cfg.test == "torch":
        return [
            f"torchrun runs on every host and meets at {first}'s management address, TCP port {cfg.master_port}; "
            "that port and NCCL's bootstrap ports between the management addresses must be open"
        ]
    return [
        f"mpirun starts on {first} as {user} and reaches the other hosts over ssh: {user}@{first} needs a key the "
        "other hosts accept without a password or prompt (checked with ssh -o BatchMode=yes before the run), and "
        "TCP between the management addresses must be open for MPI and NCCL's bootstrap"
    ]


def _load(view: ClusterView, host: str) -> tuple[DiscoveryFacts, NcclFacts] | None:
    raw = view.stage_facts(host, "discovery")
    if not raw:
        return None
    mine = {k: v for k, v in (view.stage_facts(host, "nccl") or {}).items() if k != "cluster"}
    return DiscoveryFacts.model_validate(raw), NcclFacts.model_validate(mine)


def _conf_check(facts: NcclFacts, want: Desired) -> CheckItem:
    title = f"{facts.conf_path} matches the discovered HCAs"
    if want.content is None:
        return CheckItem(id="conf", title=title, status="fail", evidence="; ".join(want.blockers))
    if facts.conf == want.content:
        extra = f", NCCL_IB_GID_INDEX={want.gid}" if want.gid is not None else ""
        evidence = f"NCCL_IB_HCA=={','.join(want.hcas)}, NCCL_SOCKET_IFNAME=={want.socket_ifname}{extra}"
        return CheckItem(id="conf", title=title, status="pass", evidence=evidence)
    pinned = {e.key: e.value for e in parse_conf(facts.conf)}.get("NCCL_IB_GID_INDEX")
    if pinned is not None and want.gid is not None and pinned != str(want.gid):
        # A flap or a reboot moved the GID (NVIDIA/nccl#2157): every job would use an index that is no longer the
        # rail's RoCE v2 IPv4 GID.
        return CheckItem(
            id="conf",
            title=title,
            status="fail",
            evidence=f"NCCL_IB_GID_INDEX={pinned}, but the RoCE v2 IPv4 GID of {','.join(want.hcas)} is now at index "
            f"{want.gid}",
            fix="re-run: roce-wizard --only nccl (it writes the current index), then restart the NCCL jobs",
        )
    return CheckItem(
        id="conf",
        title=title,
        status="fail",
        evidence="the file differs from what the facts call for",
        fix="re-run: roce-wizard --only nccl",
    )


def _bashrc_check(facts: NcclFacts) -> CheckItem:
    if facts.bashrc is None:
        return CheckItem(id="bashrc", title="no shell sources nccl.conf", status="pass", evidence=f"{BASHRC} clean")
    lines = [line.strip() for line in facts.bashrc.splitlines() if sources_nccl_conf(line)]
    return CheckItem(
        id="bashrc",
        title="no shell sources nccl.conf",
        status="fail",
        evidence="; ".join(lines),
        fix=f"remove those lines from {BASHRC} (re-run: roce-wizard --only nccl)",
    )


def _tests_check(cfg: Any, facts: NcclFacts) -> CheckItem:
    title = "cross-host test available"
    if cfg.test == "none":
        return CheckItem(id="tests", title=title, status="skip", evidence="nccl.test: none")
    if cfg.test == "torch":
        ok = bool(facts.torchrun) and facts.smoke_script is not None
        evidence = f"{cfg.torchrun} {'found' if facts.torchrun else 'missing'}, {SMOKE_SCRIPT} " + (
            "installed" if facts.smoke_script else "missing"
        )
        return CheckItem(id="tests", title=title, status="pass" if ok else "fail", evidence=evidence)
    binary = facts.all_reduce_perf
    if binary and binary.exists and binary.mpi and facts.mpirun:
        return CheckItem(
            id="tests", title=title, status="pass", evidence=f"{binary.path} (MPI, {binary.libnccl}); {facts.mpirun}"
        )
    evidence = "all_reduce_perf missing" if not (binary and binary.exists) else "all_reduce_perf has no MPI"
    if not facts.mpirun:
        evidence += f"; {cfg.mpirun} missing"
    return CheckItem(id="tests", title=title, status="fail", evidence=evidence, fix="see this stage's plan")
