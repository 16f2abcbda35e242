"""Which hosts a rolling reboot takes down together, and how what a reboot lost is explained (pure functions)."""

from __future__ import annotations

import pytest

from wizard.engine.reboot_check import HostReboot, console_hint, explain, reboot_and_wait
from wizard.engine.reboot_waves import Serving, plan_waves
from wizard.engine.step import Change, FileWrite, HostPlan, RemoteCommand
from wizard.executors.base import CommandResult

HOSTS = [f"gpu-{i:02d}" for i in range(1, 9)]


def test_without_a_service_hosts_go_in_answers_order_at_most_n_at_a_time() -> None:
    assert plan_waves(HOSTS[:5], 1) == [[h] for h in HOSTS[:5]]
    assert plan_waves(HOSTS[:5], 2) == [HOSTS[0:2], HOSTS[2:4], HOSTS[4:5]]
    with pytest.raises(ValueError):
        plan_waves(HOSTS, 0)


def test_a_serving_group_goes_down_together_and_never_beside_another_group() -> None:
    # Four replicas of two nodes each, the entry point (nginx) on the first replica's head.
    groups = [HOSTS[i : i + 2] for i in range(0, 8, 2)]
    waves = plan_waves(HOSTS, 4, Serving(groups, entry="gpu-01"))

    assert waves[-1] == ["gpu-01"]  # the entry point's outage comes last, after every other host came back
    for wave in waves:
        assert len(wave) <= 4
        touched = {i for i, g in enumerate(groups) for h in wave if h in g}
        assert len(touched) <= 1, wave  # the other replicas keep serving behind the entry point
    assert sorted(h for w in waves for h in w) == HOSTS
    assert ["gpu-03", "gpu-04"] in waves  # a replica's two nodes share their one outage


def test_hosts_outside_the_service_fill_the_waves_beside_one_group() -> None:
    waves = plan_waves(HOSTS[:6], 3, Serving([["gpu-02", "gpu-03"], ["gpu-05", "gpu-06"]]))

    assert waves == [["gpu-01", "gpu-02", "gpu-03"], ["gpu-04", "gpu-05", "gpu-06"]]


def test_a_group_larger_than_n_is_split_and_the_parts_stay_apart_from_other_groups() -> None:
    waves = plan_waves(HOSTS[:4], 1, Serving([HOSTS[:4]]))

    assert waves == [[h] for h in HOSTS[:4]]


def _plan(*changes: Change) -> HostPlan:
    return HostPlan(stage="roce", host="gpu-01", changes=list(changes))


def test_what_a_reboot_lost_is_explained_by_the_file_or_unit_that_should_have_restored_it() -> None:
    missing = Change(summary="write the QoS unit", files=[FileWrite(path="/etc/systemd/system/q.service", content="x")])
    changed = Change(summary="write sysctls", files=[FileWrite(path="/etc/sysctl.d/60.conf", content="a", before="b")])
    enable = Change(summary="enable q.service", commands=[RemoteCommand(argv=["systemctl", "enable", "q.service"])])

    causes = explain(_plan(missing, changed, enable))

    assert causes == [
        "/etc/systemd/system/q.service is missing: nothing restores it at boot (the stage would: write the QoS unit)",
        "/etc/sysctl.d/60.conf is not what the wizard wrote (the stage would: write sysctls)",
        "not restored at boot; the stage would: enable q.service",
    ]


def test_a_failure_with_nothing_to_re_apply_is_not_called_a_persistence_problem() -> None:
    (cause,) = explain(_plan())

    assert "not a setting lost at boot" in cause and "link" in cause


@pytest.mark.parametrize(
    ("detail", "says"),
    [
        ("connection refused", "sshd does not listen"),
        ("connect timed out after 10s", "nothing answers"),
        ("authentication failed (publickey)", "refuses the login"),
    ],
)
def test_a_host_that_did_not_come_back_is_described_by_its_last_connection_error(detail: str, says: str) -> None:
    assert says in console_hint(detail)


class RefusingHost:
    """An executor whose host answers but whose policy refuses `systemctl reboot` (polkit, a sudoers rule)."""

    def __init__(self) -> None:
        self.reconnects = 0

    async def run(self, argv: list[str], **_: object) -> CommandResult:
        if argv[:2] == ["systemctl", "reboot"]:
            return CommandResult("systemctl reboot", 1, "", "Failed to reboot: Access denied", 0.1)
        return CommandResult("cat", 0, "5b0f2d4e-boot", "", 0.1)

    async def wait_until_back(self, *, timeout_s: float) -> None:
        self.reconnects += 1


async def test_a_host_that_refuses_the_reboot_is_named_with_its_error_and_never_waited_for() -> None:
    host = RefusingHost()
    result = HostReboot("gpu-01", 1)

    await reboot_and_wait(host, result, timeout_s=5)

    assert not result.rebooted and not result.came_back and host.reconnects == 0
    assert result.last_seen == "refused the reboot: Failed to reboot: Access denied"
