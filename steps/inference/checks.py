"""Verdicts of the inference stage: units, files, packages, the health check and the latency/throughput probe."""

from __future__ import annotations

from typing import Any

from steps.inference.layout import Layout
from steps.inference.plan import desired_files, serving_units, token_in_sync
from steps.inference.units import ENV_PATH, KEY_ENV, KEY_HEADER, LOCK_PATH, TOKEN_PATH, package_problems, uses_ray
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
    modes = {KEY_ENV: key.get("env"), KEY_HEADER: key.get("header")} if api else {}
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
    probe = cluster.get("probe")
    if host == head.host and probe is not None:
        items.append(_probe_item(cfg.model, probe))
    return items


def _probe_item(model: str, probe: dict[str, Any]) -> CheckItem:
    ok = probe.get("succeeded") == probe.get("requests") and probe.get("completion_tokens", 0) > 0
    tag = " [simulated endpoint]" if probe.get("simulated") else ""
    evidence = (
        f"{probe.get('succeeded')}/{probe.get('requests')} /v1/completions requests to {model}"
        f" (concurrency {probe.get('concurrency')}, max_tokens {probe.get('max_tokens')}):"
        f" p50 {probe.get('p50_s')} s, p90 {probe.get('p90_s')} s,"
        f" {probe.get('tokens_per_s')} tokens/s ({probe.get('completion_tokens')} completion tokens){tag}"
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
