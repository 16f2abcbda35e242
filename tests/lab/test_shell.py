"""The simulated shell behaves like bash for what clients and generated scripts use."""

from __future__ import annotations

import pytest

from wizard.lab import SimHost
from wizard.lab.profile import reference_profile


@pytest.fixture
def host() -> SimHost:
    h = SimHost("node", reference_profile(0), "10.0.0.11/24")
    h.time_scale_override = 0.001
    return h


async def test_lists_run_in_order_and_short_circuit(host: SimHost) -> None:
    r = await host.run("echo a; false && echo never || echo fallback; true || echo never; echo $?")
    assert r.stdout == "a\nfallback\n0\n"


async def test_redirections_go_to_files_devnull_and_merge_streams(host: SimHost) -> None:
    r = await host.run("echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f /nope 2>/dev/null; ls /nope >/dev/null 2>&1")
    assert (r.stdout, r.stderr, r.status) == ("one\ntwo\n", "", 2)
    r = await host.run("cat /nope 2>&1")
    assert r.stdout == "cat: /nope: No such file or directory\n"


async def test_env_assignments_and_quoting(host: SimHost) -> None:
    r = await host.run("X='a b' printenv X; Y=1; echo \"$Y ${Y:-z} ${UNSET:-dflt}\" '$Y'")
    assert r.stdout == "a b\n1 1 dflt $Y\n"


async def test_unquoted_globs_expand_against_the_virtual_filesystem(host: SimHost) -> None:
    r = await host.run("echo /sys/class/net/ens1*; echo '/sys/class/net/ens1*'; echo /nothing/*")
    assert r.stdout == "/sys/class/net/ens1f0np0 /sys/class/net/ens1f1np1\n/sys/class/net/ens1*\n/nothing/*\n"


async def test_unknown_commands_and_root_only_actions_fail_like_bash(host: SimHost) -> None:
    r = await host.run("frobnicate --now", user="ubuntu")
    assert (r.status, r.stderr) == (127, "bash: line 1: frobnicate: command not found\n")
    r = await host.run("echo x > /etc/hostname", user="ubuntu")
    assert (r.status, r.stderr) == (1, "bash: line 1: /etc/hostname: Permission denied\n")
    r = await host.run("modprobe bonding", user="ubuntu")
    assert r.stderr == "modprobe: ERROR: could not insert 'bonding': Operation not permitted\n"
    r = await host.run("sh -c 'nothere'", user="ubuntu")
    assert (r.status, r.stderr) == (127, "sh: 1: nothere: not found\n")


async def test_sudo_reads_the_password_line_and_passes_the_rest_on(host: SimHost) -> None:
    r = await host.run("sudo -S -p '' tee /etc/motd", user="ubuntu", stdin="pw\nwelcome\n")
    assert (r.status, r.stdout) == (0, "welcome\n")
    assert host.fs.read_text("/etc/motd") == "welcome\n"
    r = await host.run("sudo -n -- sh -c 'id -u; whoami'", user="ubuntu")
    assert r.stdout == "0\nroot\n"
    r = await host.run("sudo -n nosuchtool", user="ubuntu")
    assert r.stderr == "sudo: nosuchtool: command not found\n"


async def test_scripts_with_set_euo_pipefail_if_and_for(host: SimHost) -> None:
    script = (
        "#!/bin/bash\nset -euo pipefail\n# comment\nfor nd in ens1f0np0 ens1f1np1; do\n"
        '  if [ -e /sys/class/net/$nd ]; then\n    echo "up $nd $(cat /sys/class/net/$nd/mtu)"\n'
        "  else\n    echo missing\n  fi\ndone\nfalse\necho never\n"
    )
    host.fs.install("/usr/local/sbin/t.sh", script, 0o755)
    r = await host.run("/usr/local/sbin/t.sh; echo rc=$?")
    assert r.stdout == "up ens1f0np0 1500\nup ens1f1np1 1500\nrc=1\n"
    r = await host.run("bash /usr/local/sbin/t.sh")
    assert r.status == 1
    r = await host.run("bash -n /usr/local/sbin/t.sh && echo syntax-ok")
    assert r.stdout == "syntax-ok\n"


async def test_unbound_variables_and_syntax_errors_stop_the_script(host: SimHost) -> None:
    r = await host.run("bash -c 'set -u; echo $MISSING; echo after'")
    assert (r.status, r.stderr) == (1, "bash: line 1: MISSING: unbound variable\n")
    r = await host.run("bash -c 'if true; then echo x'")
    assert r.status == 2 and "syntax error" in r.stderr


async def test_here_documents_case_and_functions(host: SimHost) -> None:
    script = (
        "greet() { echo \"hi $1\"; }\ngreet lab\ncat > /tmp/h <<'EOF'\nliteral $HOME\nEOF\ncat /tmp/h\n"
        "case ens1f0np0 in ens1*) echo card-a ;; *) echo other ;; esac\necho $((2 + 3 * 4))\n"
    )
    r = await host.run(script)
    assert r.stdout == "hi lab\nliteral $HOME\ncard-a\n14\n"


async def test_timeout_and_sleep_use_the_time_scale(host: SimHost) -> None:
    r = await host.run("timeout 1 sleep 5; echo $?; timeout 5 sleep 0.1; echo $?")
    assert r.stdout == "124\n0\n"


async def test_files_commands_keep_owner_mode_and_checksums(host: SimHost) -> None:
    r = await host.run(
        "d=$(mktemp -d) && echo data > $d/f && install -m 0640 $d/f /etc/x.conf && stat -c '%a %U %G %s' /etc/x.conf"
        " && sha256sum /etc/x.conf && cp -a /etc/x.conf /root/x.bak && mv /root/x.bak /root/y && rm -f /root/nope"
        " && mkdir -p /a/b/c && test -d /a/b/c && ls /root"
    )
    assert r.stdout.splitlines() == [
        "640 root root 5",
        "6667b2d1aab6a00caa5aee5af8ad9f1465e567abf1c209d15727d57b3e8f6e5f  /etc/x.conf",
        "y",
    ]


async def test_grep_reports_files_and_exit_codes_like_gnu_grep(host: SimHost) -> None:
    r = await host.run("grep -sH . /sys/class/net/lo/mtu /sys/class/net/lo/nope; echo rc=$?")
    assert r.stdout == "/sys/class/net/lo/mtu:65536\nrc=2\n"
    r = await host.run("grep -q VARIANT_ID /etc/os-release && echo yes")
    assert r.stdout == "yes\n"


async def test_a_script_parsed_once_runs_the_same_on_every_host_and_again() -> None:
    """The parse of a script is shared by the hosts that run the same text (a fleet's probe batch): running it must
    leave the tree as it was, so a second host and a second run see what the first saw."""
    from wizard.lab.shell.parser import parse

    script = (
        'f() { echo "fn:$1"; }\n'
        'for x in a b; do f "$x"; done\n'
        "case $(hostname) in h1) echo first;; *) echo other;; esac\n"
        "cat <<EOF\nbody $((1 + 2))\nEOF\n"
        'n=0; while [ $n -lt 2 ]; do n=$((n + 1)); echo "n=$n"; done\n'
    )
    assert parse(script) is parse(script)
    hosts = [SimHost(name, reference_profile(i), f"10.0.0.{11 + i}/24") for i, name in enumerate(("h1", "h2"))]
    runs = [(await h.run(script)).stdout for h in (hosts[0], hosts[1], hosts[0])]
    assert runs[0] == "fn:a\nfn:b\nfirst\nbody 3\nn=1\nn=2\n"
    assert runs[1] == runs[0].replace("first", "other") and runs[2] == runs[0]


async def test_sh_s_reads_the_script_from_stdin_and_takes_the_arguments_as_positional(host: SimHost) -> None:
    """bash(1) -s: what the wizard's probe batch runs (`sh -s -- <token>`, wizard/executors/batch.py)."""
    r = await host.run("sh -s -- a 'b c'", stdin='echo "[$1][$2][$#]"\n')
    assert (r.stdout, r.status) == ("[a][b c][2]\n", 0)
    r = await host.run("bash -s", stdin='echo "[$#]"\n')
    assert r.stdout == "[0]\n"
