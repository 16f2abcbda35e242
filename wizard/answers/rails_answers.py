"""Answers for the ``rails-N`` demo fabrics, made from the shipped rails-16 file rather than shipped 1,000 times.

The text of assets/answers.rails-16.yaml is kept (its comments are the documentation a demo user reads); only what
depends on N is rewritten: the header, the cluster name, the hosts (range entries: gpu-[001-N] from 10.0.0.11 on one
scalable unit, else one entry per SU on 10.0.<SU>.1..) and the rail subnets and gateways of the lab's plan
(wizard/lab/rails_plan.py). The files are written under the state root (``profiles/answers.rails-N.yaml``) and
rewritten whenever the text they should hold changes.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tempfile
from pathlib import Path

COMMENT_COLUMN = 32  # where the shipped file's comments start
FIRST_MGMT = "10.0.0.11"  # one SU: host k's management address is 10.0.0.10 + k, as rails-16's


def _line(text: str, comment: str) -> str:
    return f"{text.ljust(COMMENT_COLUMN - 1)} # {comment}"


def _header(n: int, plan: object) -> list[str]:
    from wizard.lab.rails_plan import HOSTS_PER_SU, RailPlan, host_names

    assert isinstance(plan, RailPlan)
    names = host_names(n)
    lines = [
        f"# roce-wizard answers for the rails-{n} demo fabric (roce-wizard --demo --profile rails-{n}), generated from",
        "# answers.rails-16.yaml: "
        f"{n} Ubuntu 22.04 HGX H100 servers {names[0]}..{names[-1]}, each with 8 GPUs and 8 single-port",
        "# ConnectX-7 400GbE NICs, one port per rail.",
    ]
    spines = f"spine-0..spine-{plan.spine_count - 1}"
    if plan.multi_su:
        lines += [
            f"# {plan.su_count} scalable units (SU) of {HOSTS_PER_SU} hosts (DGX SuperPOD): rail i of the hosts of",
            "# SU NN is cabled to leaf-suNN-r<i> (port swp<place in the SU>); every leaf has one uplink to each of",
            f"# {spines}. Each rail is one subnet stretched over its leaves (EVPN VNI), with an anycast",
            "# gateway on every leaf of the rail.",
        ]
    else:
        lines += [
            "# Rail i of every host is cabled to leaf switch leaf-r<i> port swp<host number>, the leaves uplink to",
            "# spine-0.",
        ]
    return [*lines, "# The management network (eno1) is a separate switch. No secrets belong here."]


def _hosts(n: int, plan: object) -> list[str]:
    """One range entry: gpu-[001-N] from 10.0.0.11 on one SU (rails-16's numbering); past one SU one entry per SU,
    SU NN's hosts on 10.0.NN.1.. (the management network is then 10.0.0.0/16: a range may not cross .255)."""
    from wizard.lab.rails_plan import HOSTS_PER_SU, RailPlan, host_names

    assert isinstance(plan, RailPlan)
    names = host_names(n)
    width = len(names[0]) - len("gpu-")
    out = [_line("hosts:", "the servers; management addresses carry SSH and are never reconfigured")]
    if not plan.multi_su:
        last = ipaddress.IPv4Address(FIRST_MGMT) + n - 1
        out.append(_line(f"  - name: gpu-[{1:0{width}d}-{n:0{width}d}]", f"{n} hosts (a range entry)"))
        out.append(_line(f"    address_start: {FIRST_MGMT}", f"management addresses (eno1) count up, to {last}"))
        return out
    for su in range(plan.su_count):
        first, last = su * HOSTS_PER_SU + 1, min(n, (su + 1) * HOSTS_PER_SU)
        name = f"  - name: gpu-[{first:0{width}d}-{last:0{width}d}]"
        out.append(_line(name, f"SU {su + 1:02d}: rail i on {plan.leaf_name(su, 0)[:-1]}<i>"))
        out.append(_line(f"    address_start: 10.0.{su + 1}.1", "management addresses (eno1) count up"))
    return out


def _rails(plan: object, netdevs: list[str]) -> list[str]:
    from wizard.lab.rails_plan import RailPlan

    assert isinstance(plan, RailPlan)
    last = plan.su_count - 1
    head = "rail i = leaf-r<i>; gpu-001 gets .1 ...; the leaf answers on the gateway"
    if plan.multi_su:
        head = f"rail i = leaf-su01-r<i> .. leaf-su{last + 1:02d}-r<i>, one subnet; host k gets host id k"
    out = [_line("  rails:", head)]
    for rail, netdev in enumerate(netdevs):
        leaves = plan.leaf_name(0, rail) + (f" .. {plan.leaf_name(last, rail)}" if plan.multi_su else "")
        who = f"every rail-{rail} leaf (anycast)" if plan.multi_su else f"{plan.leaf_name(0, rail)}'s address"
        out.append(_line(f"    - subnet: {plan.subnet(rail)}", f"rail {rail} ({netdev}, {leaves})"))
        gateway = f"      gateway: {plan.gateway(rail).ip}"
        out.append(_line(gateway, f"{who} on rail {rail} (other rails via the spines)"))
    return out


def rails_answers_text(n: int, source: str) -> str:
    """The answers of rails-``n`` made from ``source``, the text of the shipped rails-16 answers."""
    from wizard.lab.profile_rails import rails16_profile
    from wizard.lab.rails_plan import RailPlan

    netdevs = [p.netdev for p in rails16_profile(0).ports]
    plan = RailPlan(n, len(netdevs))
    lines = source.splitlines()
    start = _index(lines, r"version:")
    lines = _header(n, plan) + lines[start:]
    name = _index(lines, r"  name: rails-16\b")
    lines[name] = _line(f"  name: rails-{n}", "names the state directory (saved progress, facts and logs)")
    first, end = _block(lines, r"hosts:", top=True)
    lines[first:end] = _hosts(n, plan)
    first, end = _block(lines, r"  rails:", top=False)
    lines[first:end] = _rails(plan, netdevs)
    text = "\n".join(lines) + "\n"
    text = re.sub(r"all 16 hosts", f"all {n} hosts", text)
    return re.sub(r"\b8 replicas\b", f"{n // 2} replicas", text)


def _index(lines: list[str], pattern: str) -> int:
    for i, line in enumerate(lines):
        if re.match(pattern, line):
            return i
    raise RuntimeError(f"answers.rails-16.yaml has no line matching {pattern!r}: cannot make rails-N answers")


def _block(lines: list[str], pattern: str, *, top: bool) -> tuple[int, int]:
    """[first, end) of the block whose first line matches: up to the next key of the same (top or rail list) level."""
    first = _index(lines, pattern)
    indent = len(lines[first]) - len(lines[first].lstrip())
    end = first + 1
    while end < len(lines):
        line = lines[end]
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#") and len(line) - len(stripped) <= indent:
            break
        if not stripped and not top:
            break
        end += 1
    while end > first + 1 and not lines[end - 1].strip():
        end -= 1  # keep the blank line before the next section
    return first, end


def rails_answers_file(n: int) -> Path:
    """The answers file of rails-``n`` (written, or rewritten when stale, under the state root)."""
    from wizard.paths import assets_dir, default_state_root

    text = rails_answers_text(n, (assets_dir() / "answers.rails-16.yaml").read_text(encoding="utf-8"))
    folder = default_state_root() / "profiles"
    path = folder / f"answers.rails-{n}.yaml"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".answers.rails-{n}-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)  # atomic: two demos starting at once both read a whole file
    return path
