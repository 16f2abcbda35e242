"""What NCCL really inherits on a host: per-user nccl.conf files that beat /etc/nccl.conf, and the memlock limit."""

from __future__ import annotations

from steps.nccl.conf import MANAGED, parse_conf
from steps.nccl.facts import NcclFacts
from wizard.engine.step import CheckItem

LIMITS_FILE = "/etc/security/limits.d/90-nccl-memlock.conf"


def user_overrides(facts: NcclFacts, content: str | None) -> list[str]:
    """Keys of a per-user ~/.nccl.conf that beat ``content`` (the /etc/nccl.conf the wizard wants).

    NCCL reads $NCCL_CONF_FILE or the ~/.nccl.conf of the process's user (getpwuid) first, then /etc/nccl.conf, and
    keeps the first value (NVIDIA/nccl src/misc/param.cc initEnvFunc; setenv without overwrite). The SSH user's file
    applies to mpirun, root's to the inference/Ray units (they run as root). A key conflicts when /etc/nccl.conf
    sets it to another value, or when it is one the wizard manages and /etc/nccl.conf leaves unset on purpose.
    """
    ours = {e.key: e.value for e in parse_conf(content)}
    found = []
    for path, text in ((facts.user_conf_path, facts.user_conf), (facts.root_conf_path, facts.root_conf)):
        for e in parse_conf(text):
            if (e.key in ours and ours[e.key] == e.value) or (e.key not in ours and e.key not in MANAGED):
                continue
            theirs = f"sets {e.key}={ours[e.key]}" if e.key in ours else "leaves it unset"
            found.append(f"{path} sets {e.key}={e.value} but {facts.conf_path} {theirs}")
    return found


def user_conf_check(facts: NcclFacts, overrides: list[str]) -> CheckItem:
    title = "no per-user nccl.conf overrides it"
    if not overrides:
        where = ", ".join(p for p in (facts.user_conf_path, facts.root_conf_path) if p) or "~/.nccl.conf"
        return CheckItem(id="user_conf", title=title, status="pass", evidence=f"{where}: no overriding key")
    return CheckItem(
        id="user_conf",
        title=title,
        status="fail",
        evidence="; ".join(overrides),
        fix=(
            "delete the line from that file (or make it match): NCCL reads ~/.nccl.conf of the user it runs as "
            f"before {facts.conf_path} and keeps the first value; then re-run: roce-wizard --only nccl"
        ),
    )


def memlock_problem(host: str, facts: NcclFacts) -> str | None:
    """Why an mpirun from this host would fail to register RDMA memory, or None when memlock is unlimited."""
    if facts.memlock in (None, "unlimited"):
        return None
    user = facts.ssh_user or "the SSH user"
    return (
        f"{host}: ulimit -l in a non-interactive SSH session as {user} is {facts.memlock} KB, not unlimited: RDMA "
        "pins every registered buffer and NCCL fails in ibv_reg_mr; fix: write "
        f"'{user} soft memlock unlimited' and '{user} hard memlock unlimited' to {LIMITS_FILE} (pam_limits, "
        "effective at the next SSH login), and LimitMEMLOCK=infinity in any systemd unit that runs NCCL"
    )


def memlock_check(host: str, facts: NcclFacts) -> CheckItem:
    """`bash -c 'ulimit -l'` over the executor: what mpirun's remote daemons get (NCCL troubleshooting, memlock)."""
    title = "memlock unlimited for mpirun over SSH"
    if facts.memlock is None:
        return CheckItem(id="memlock", title=title, status="warn", evidence="ulimit -l printed nothing",
                         fix=f"check: ssh {host} \"bash -c 'ulimit -l'\" must print unlimited")  # fmt: skip
    problem = memlock_problem(host, facts)
    if problem is None:
        return CheckItem(id="memlock", title=title, status="pass",
                         evidence=f"ulimit -l as {facts.ssh_user or 'the SSH user'}: unlimited")  # fmt: skip
    evidence, _, fix = problem.partition("; fix: ")
    return CheckItem(id="memlock", title=title, status="fail", evidence=evidence, fix=fix)
