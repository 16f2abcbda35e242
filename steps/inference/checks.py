"""Verdicts of the inference stage: units, files, packages, the health check and the latency/throughput probe."""

from __future__ import annotations

from typing import Any

from steps.inference.layout import Layout, Node
from steps.inference.plan import desired_files, serving_units, token_in_sync
from steps.inference.units import (
    ENGINE_UNIT,
    ENV_PATH,
    KEY_ENV,
    KEY_HEADER,
    KEY_NGINX,
    LOCK_PATH,
    TOKEN_PATH,
    package_problems,
    uses_ray,
    version_tuple,
)
from steps.inference.weights import cached, repo_dir
from steps.nccl.conf import GID_AUTO_SINCE
from wizard.engine.step import CheckItem, ClusterView


def host_checks(view: ClusterView, layout: Layout, host: str) -> list[CheckItem]:
    cfg = view.answers.inference
    if host in layout.idle:
        return [CheckItem(id="role", title="serving group", status="pass", evidence=layout.idle[host])]
    refusals = layout.refusals(host)
    if refusals:
        return [CheckItem(id="plan", title="deployment", status="fail", evidence="; ".join(refusals))]
    facts = view.stage_facts(host, "inference") or {}
    node = layout.node(host)
    assert node is not None
    env_ok = (facts.get("files") or {}).get(ENV_PATH) == desired_files(view, layout, host)[ENV_PATH]
    items = [
        CheckItem(
            id="fabric_env",
            title="fabric environment for Ray/NCCL",
            status="pass" if env_ok else "fail",
            evidence=f"{ENV_PATH}: NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME={node.ifname}, host IP {node.ip},"
            f" NCCL_IB_HCA={','.join(node.hcas)}" + ("" if env_ok else " expected, but the file differs"),
            fix=None if env_ok else "re-run the inference stage: roce-wizard --answers FILE --only inference",
        )
    ]
    problems = package_problems(cfg, facts.get("packages") or {})
    packages = facts.get("packages") or {}
    items.append(
        CheckItem(
            id="packages",
            title=f"{cfg.engine} in {cfg.venv}",
            status="fail" if problems else "pass",
            evidence="; ".join(problems)
            or ", ".join(f"{n} {v}" for n, v in sorted(packages.items()) if n in (cfg.engine, "ray", "torch")),
            fix="re-run the inference stage to pip install into the venv" if problems else None,
        )
    )
    held = facts.get("weights") or {}
    items.append(
        CheckItem(
            id="weights",
            title=f"weights of {cfg.model}",
            status="pass" if cached(held) else "fail",
            evidence=f"{repo_dir(cfg)}: revision {str(held.get('revision'))[:12]}, {held.get('blobs')} file(s)"
            if cached(held)
            else f"{repo_dir(cfg)} holds no complete copy ({held.get('incomplete', 0)} partial file(s))",
            fix=None if cached(held) else "re-run the inference stage: it downloads the weights before the engine",
        )
    )
    if uses_ray(cfg) and cfg.ray_auth == "token":
        synced = token_in_sync(view, layout)
        items.append(
            CheckItem(
                id="ray_token",
                title="Ray token authentication",
                status="pass" if synced else "fail",
                evidence="RAY_AUTH_MODE=token; every host holds the same token (compared by SHA-256)"
                if synced
                else "the hosts' Ray tokens differ or are missing",
                fix=None if synced else "re-run the inference stage; it distributes a fresh token to every host",
            )
        )
    items += _secret_file_items(facts, node in layout.api_nodes(), uses_ray(cfg) and cfg.ray_auth == "token")
    for unit in serving_units(view, layout, host):
        state = (facts.get("units") or {}).get(unit) or {}
        good = state.get("active") == "active" and state.get("enabled") == "enabled"
        journal = " | ".join(state.get("journal") or [])
        items.append(
            CheckItem(
                id=f"unit_{unit.split('.')[0]}",
                title=f"{unit} running",
                status="pass" if good else "fail",
                evidence=f"{unit} is {state.get('active', '?')}, {state.get('enabled', '?')}"
                + (f"; journal: {journal}" if journal else ""),
                fix=None if good else f"on {host}: journalctl -u {unit} -e; then re-run the inference stage",
            )
        )
    items += _service_items(view, layout, host)
    return items


def _secret_file_items(facts: dict[str, Any], api: bool, token: bool) -> list[CheckItem]:
    """The key and token files are 0600 root (stat read by the probe); a file not read yet is left to the checks
    that need its content."""
    key = facts.get("api_key") or {}
    modes = {KEY_ENV: key.get("env"), KEY_HEADER: key.get("header"), KEY_NGINX: key.get("nginx")} if api else {}
    if token:
        modes[TOKEN_PATH] = facts.get("token_file_mode")
    read = {path: mode for path, mode in modes.items() if mode}
    if not read:
        return []
    bad = {path: mode for path, mode in read.items() if mode != "600 root"}
    return [
        CheckItem(
            id="secret_files",
            title="secret files 0600 root",
            status="fail" if bad else "pass",
            evidence="; ".join(f"{path} is {mode}" for path, mode in (bad or read).items())
            + (", expected 600 root" if bad else ""),
            fix=f"on the host: chown root:root {' '.join(bad)} && chmod 600 {' '.join(bad)}; then re-run the"
            " inference stage"
            if bad
            else None,
        )
    ]


def _service_items(view: ClusterView, layout: Layout, host: str) -> list[CheckItem]:
    cfg = view.answers.inference
    node = layout.node(host)
    assert node is not None
    head = layout.head_of(node)  # each group answers on its own head
    cluster: dict[str, Any] = (view.stage_facts(host, "inference") or {}).get("cluster") or {}
    if cluster.get("skipped"):
        return [CheckItem(id="health", title="API health", status="fail", evidence=cluster["skipped"])]
    health = cluster.get("health")
    if health is None:
        return [CheckItem(id="health", title="API health", status="skip", evidence="health check did not run")]
    where = f"http://127.0.0.1:{cfg.port}/health on {head.host}"
    if not health.get("healthy"):
        tail = " | ".join(health.get("journal") or [])
        return [
            CheckItem(
                id="health",
                title="API health",
                status="fail",
                evidence=f"{where} did not answer after {health.get('waited_s')} s (unit"
                f" {health.get('unit_state')}, curl exit {health.get('curl_exit')})"
                + (f"; journal: {tail}" if tail else ""),
                fix=f"on {head.host}: journalctl -u roce-wizard-inference -e (NCCL falls back or hangs when a rail"
                " or the RoCE QoS is wrong: re-run the nccl stage first)",
            )
        ]
    items = [
        CheckItem(
            id="health",
            title="API health",
            status="pass",
            evidence=f"{where} answered after {health.get('waited_s')} s"
            + (f" (serving group of {len(layout.members(node))} nodes, head {head.host})" if host != head.host else ""),
        )
    ]
    if host == head.host and cluster.get("nccl") is not None:
        torch = ((view.stage_facts(host, "inference") or {}).get("packages") or {}).get("torch")
        items.append(engine_nccl_item(layout, node, cluster["nccl"], torch))
    probe = cluster.get("probe")
    if host == head.host and probe is not None:
        items.append(_probe_item(cfg.model, probe))
    if cluster.get("entry") is not None:
        items.append(entry_item(view, layout, host, cluster["entry"]))
    return items


def entry_item(view: ClusterView, layout: Layout, host: str, entry: dict[str, Any]) -> CheckItem:
    """The smoke test through the entry point: every request answered, and every replica took some of them."""
    cfg = view.answers.inference
    where = f"http://{host}:{cfg.entry_port}/v1 (nginx on {host})"
    if not entry.get("answered", True):
        return CheckItem(id="entry_point", title="entry point", status="fail",
                         evidence=f"{where} did not answer /health within 60 s",
                         fix=f"on {host}: systemctl status nginx; nginx -t; journalctl -u nginx -e")  # fmt: skip
    heads = {f"{n.ip}:{cfg.port}": n for n in layout.api_nodes()}
    served = entry.get("served_by") or {}
    missed = [f"{n.host} (replica {n.group + 1})" for addr, n in heads.items() if addr not in served]
    all_ok = entry.get("succeeded") == entry.get("requests")
    enough = entry.get("requests", 0) >= len(heads)
    ok = all_ok and (not missed or not enough)
    spread = ", ".join(f"replica {heads[a].group + 1}: {c}" for a, c in sorted(served.items()) if a in heads)
    tag = " [simulated endpoint]" if entry.get("simulated") else ""
    evidence = (
        f"{entry.get('succeeded')}/{entry.get('requests')} /v1/completions through {where} reached"
        f" {len(heads) - len(missed)} of {len(heads)} replicas ({spread}): p50 {entry.get('p50_s')} s, p90"
        f" {entry.get('p90_s')} s, {entry.get('tokens_per_s')} tokens/s"
        + (f", time to first token {entry['ttft_s']} s" if entry.get("ttft_s") is not None else "")
        + tag
    )
    if missed and enough:
        evidence += f"; never answered by {', '.join(missed)}"
    if entry.get("errors"):
        evidence += "; errors: " + "; ".join(entry["errors"])
    return CheckItem(
        id="entry_point",
        title="entry point over the replicas",
        status="pass" if ok else "fail",
        evidence=evidence,
        fix=None if ok else f"on {host}: journalctl -u nginx -e, and the health of the replicas named above",
    )


def engine_nccl_item(layout: Layout, node: Node, nccl: dict[str, Any], torch: str | None) -> CheckItem:
    """The NCCL the engine itself loaded (its torch's bundled copy): version and transport from its init lines."""
    members = layout.members(node)
    spans = len(members) > 1
    where = f"{node.host} (replica {node.group + 1})" if layout.replicas else node.host
    bundled = f" (bundled with torch {torch})" if torch else ""
    fix_log = f"on {node.host}: journalctl -u {ENGINE_UNIT} -b | grep NCCL"

    def item(status: str, evidence: str, fix: str | None = None) -> CheckItem:
        return CheckItem(id="engine_nccl", title="the engine's NCCL and transport", status=status,  # type: ignore[arg-type]
                         evidence=evidence, fix=fix)  # fmt: skip

    if not nccl.get("read"):
        return item("warn", f"could not read the engine's journal on {where}: {nccl.get('error')}", fix_log)
    if not nccl.get("lines"):
        return item(
            "fail" if spans else "warn",
            f"{where}: no NCCL init lines in the engine's journal since its last start, so the transport between"
            " nodes is unproven",
            f"the unit sets NCCL_DEBUG=INFO; check that nothing overrides it ({fix_log})",
        )
    version = nccl.get("version") or "?"
    if not spans:
        return item("pass", f"NCCL {version}{bundled} on {where}; one node per replica, so no NCCL traffic crosses"
                            " the fabric")  # fmt: skip
    if nccl.get("transport") != "IB":
        sockets = ", ".join(nccl.get("socket_interfaces") or []) or "?"
        return item(
            "fail",
            f"{where}: the engine's NCCL {version}{bundled} runs over TCP sockets on"
            f" {', '.join(nccl.get('socket_hosts') or []) or '?'} (NET/Socket on {sockets}"
            + (", after NET/IB : No device found" if nccl.get("ib_no_device") else "")
            + f") between the {len(members)} nodes of its group: /health and the probe pass, at a fraction of the"
            " RDMA bandwidth",
            f"the engine's NCCL found no usable RDMA device: {fix_log}; check that libibverbs and the mlx5 provider"
            " load in the venv, NCCL_IB_DISABLE is unset and NCCL_IB_HCA names live ports, then re-run the stage",
        )
    ib_only = bool(nccl.get("ib_ports")) and all(str(p).endswith("/IB") for p in nccl.get("ib_ports") or [])
    # on InfiniBand NCCL addresses by LID: GID index 0 is the port's only GID and the right one
    if version_tuple(version) < GID_AUTO_SINCE and nccl.get("gid_index") is None and not ib_only:
        return item(
            "fail",
            f"{where}: the engine's NCCL {version}{bundled} predates 2.21 and, with NCCL_IB_GID_INDEX unset, uses"
            " GID index 0: RoCE v1 with no DSCP, so its traffic misses the lossless priority",
            "pin inference.engine_version to a release built on torch >= 2.5 (NCCL >= 2.21 picks the RoCE v2 GID"
            " itself), or set NCCL_IB_GID_INDEX to the RoCE v2 IPv4 index (show_gids) in the NCCL config, and re-run",
        )
    pinned = f", NCCL_IB_GID_INDEX={nccl['gid_index']}" if nccl.get("gid_index") is not None else ""
    hosts = ", ".join(nccl.get("hosts") or [])
    return item("pass", f"NCCL {version}{bundled} over NET/IB on {where} ({hosts} printed it):"
                        f" {' '.join(nccl.get('ib_ports') or [])}{pinned}")  # fmt: skip


def _probe_item(model: str, probe: dict[str, Any]) -> CheckItem:
    ok = probe.get("succeeded") == probe.get("requests") and probe.get("completion_tokens", 0) > 0
    tag = " [simulated endpoint]" if probe.get("simulated") else ""
    evidence = (
        f"{probe.get('succeeded')}/{probe.get('requests')} /v1/completions requests to {model}"
        f" (concurrency {probe.get('concurrency')}, max_tokens {probe.get('max_tokens')}):"
        f" p50 {probe.get('p50_s')} s, p90 {probe.get('p90_s')} s,"
        f" {probe.get('tokens_per_s')} tokens/s ({probe.get('completion_tokens')} completion tokens)"
        + (f", time to first token {probe['ttft_s']} s (streamed)" if probe.get("ttft_s") is not None else "")
        + tag
        if probe.get("succeeded")
        else f"0/{probe.get('requests')} requests succeeded"
    )
    if probe.get("errors"):
        evidence += "; errors: " + "; ".join(probe["errors"])
    return CheckItem(
        id="probe",
        title="latency/throughput probe",
        status="pass" if ok else "fail",
        evidence=evidence,
        fix=None if ok else "read the errors above and journalctl -u roce-wizard-inference on the head",
    )


def version_consistency(view: ClusterView, layout: Layout) -> dict[str, list[CheckItem]]:
    """Ray and the engine must be the same release on every host of a group (Ray refuses mismatched nodes); across
    independent replicas a difference only makes them answer differently (a warning)."""
    cfg = view.answers.inference
    result: dict[str, list[CheckItem]] = {}
    names = [cfg.engine] + (["ray"] if uses_ray(cfg) else [])
    seen = {}
    for node in layout.nodes:
        packages = (view.stage_facts(node.host, "inference") or {}).get("packages") or {}
        seen[node.host] = {name: packages.get(name) for name in names}
    scopes = [(layout.nodes, "warn" if layout.replicas else "fail")]
    if layout.replicas and not layout.single_node:
        scopes += [(group, "fail") for group in layout.groups()]
    for nodes, status in scopes:
        for name in names:
            versions = {n.host: seen[n.host][name] for n in nodes if seen[n.host][name]}
            if len(set(versions.values())) <= 1:
                continue
            listing = ", ".join(f"{h}: {v}" for h, v in sorted(versions.items()))
            where = "every host of the serving group" if status == "fail" else "every replica"
            for host in versions:
                items = result.setdefault(host, [])
                items[:] = [i for i in items if i.id != f"same_{name}"]  # a group's failure beats the fleet's warning
                items.append(
                    CheckItem(
                        id=f"same_{name}",
                        title=f"same {name} release on {where}",
                        status=status,  # type: ignore[arg-type]
                        evidence=listing,
                        fix=f"re-run the inference stage: every host installs from {LOCK_PATH} of its group's head"
                        f" (or set inference.engine_version to pin one release; {name} must match)",
                    )
                )
    return result
