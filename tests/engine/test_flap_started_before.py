"""Which jobs a flap may have left on a moved GID: `ps -eo pid=,etimes=,args=` read with etimes' whole seconds."""

from wizard.cli.verify_flap import started_before

PS = """\
  101      5 ray start --address=10.0.0.11:6379 --block
  102      4 ray start --address=10.0.0.11:6379 --block
  103   3600 sshd: root@pts/0
"""


def test_a_job_started_a_moment_before_the_flap_is_named_though_etimes_reads_one_second_less() -> None:
    # the flap began 5.8 s ago; pid 101 began 0.1 s before it, 5.9 s ago, which etimes prints as 5
    assert [pid for pid, _ in started_before(PS, 5.8)] == [101]


def test_a_job_started_well_after_the_flap_and_a_process_that_never_touches_the_rails_are_not_named() -> None:
    assert started_before(PS, 5.0) == [(101, "ray start --address=10.0.0.11:6379 --block")]
    assert started_before(PS, 7.0) == []
