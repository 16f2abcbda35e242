"""What a user's non-interactive SSH session inherits on a simulated host: the memlock limit and per-user files.

- ``ulimit -l``: sshd opens a PAM session, and pam_limits sets the limits of /etc/security/limits.conf and
  /etc/security/limits.d/*.conf (limits.conf(5): ``<domain> <type> memlock <KB|unlimited>``; a user-name line beats
  a ``*`` line, and ``*`` never applies to root). Without a memlock line the session keeps what sshd got: the
  ``memlock_limited`` fault gives 8192 KB, the default since Linux 5.16 (commit 9dcc38e2813e "Increase default
  MLOCK_LIMIT to 8 MiB") and systemd's DefaultLimitMEMLOCK=8M (systemd commit 852b625); older kernels give 64 KB.
  RDMA pins every registered buffer, so NCCL needs ``unlimited`` (NCCL troubleshooting guide, "memlock"; an
  ``ibv_reg_mr failed`` otherwise). Hosts without the fault model GPU servers already set to unlimited.
  The lab reads the files at each ``ulimit`` call; real sshd applies them once per login (a connection opened
  before the file changed keeps the old limit).
- ``user_nccl_conf``: ~USER/.nccl.conf with NCCL_IB_TC=0. NCCL reads $NCCL_CONF_FILE or the ~/.nccl.conf of the
  process's user before /etc/nccl.conf and keeps the first value (NVIDIA/nccl src/misc/param.cc initEnvFunc,
  setenv without overwrite): the services (run as root) and mpirun (the SSH user) would send RDMA on traffic class
  0, the lossy class, while /etc/nccl.conf says the RoCE ToS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab.shell.builtins import builtin
from wizard.lab.vfs import FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.shell.interp import IO, Shell

LIMITS = "/etc/security/limits.conf"
LIMITS_D = "/etc/security/limits.d"
DEFAULT_LIMITED_KB = "8192"
USER_CONF_LINE = "NCCL_IB_TC=0\n"


def _limit_files(host: SimHost) -> list[str]:
    try:
        extra = sorted(n for n in host.fs.listdir(LIMITS_D) if n.endswith(".conf"))
    except (FsError, OSError):
        extra = []
    return [LIMITS] + [f"{LIMITS_D}/{n}" for n in extra]


def memlock(host: SimHost, user: str) -> str:
    """The soft RLIMIT_MEMLOCK (KB, or ``unlimited``) of a new SSH session of ``user``."""
    fault = host.fault("memlock_limited")
    value = (fault.arg or DEFAULT_LIMITED_KB) if fault else "unlimited"
    best = -1  # 0: a "*" line, 1: a line naming the user
    for path in _limit_files(host):
        try:
            text = host.fs.read_text(path)
        except FsError:
            continue
        for line in text.splitlines():
            fields = line.split("#", 1)[0].split()
            if len(fields) != 4 or fields[2] != "memlock" or fields[1] not in ("soft", "-"):
                continue
            rank = 1 if fields[0] == user else 0 if fields[0] == "*" and user != "root" else -1
            if rank >= best and rank >= 0:
                best = rank
                value = "unlimited" if fields[3] in ("unlimited", "infinity", "-1") else fields[3]
    return value


@builtin("ulimit")
async def _ulimit(sh: Shell, argv: list[str], io: IO) -> int:
    """``ulimit -l`` prints the memlock limit; other resources and setting values stay no-ops here."""
    flags = "".join(a.lstrip("-") for a in argv[1:] if a.startswith("-"))
    if "l" in flags and not any(not a.startswith("-") for a in argv[1:]):
        io.out.write(memlock(sh.host, sh.cred.user) + "\n")
    return 0


def install_fault_files(host: SimHost) -> None:
    """Files the user_nccl_conf fault puts in a home directory (also after a saved disk is restored)."""
    fault = host.fault("user_nccl_conf")
    if fault is None:
        return
    user = fault.arg or "root"
    cred = host.cred_for(user)
    home = "/root" if user == "root" else f"/home/{user}"
    host.fs.install(f"{home}/.nccl.conf", USER_CONF_LINE, 0o644)
    node = host.fs.resolve(f"{home}/.nccl.conf")
    node.uid = node.gid = cred.uid
