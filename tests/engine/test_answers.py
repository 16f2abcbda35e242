"""The answers file: the example loads, and every kind of bad input is refused naming its key and line."""

from __future__ import annotations

import pytest

from wizard.answers.model import load_answers, parse_answers
from wizard.errors import AnswersError
from wizard.paths import example_answers

BASE = """version: 1
hosts:
  - name: server1
    address: 10.0.0.11
  - name: server2
    address: 10.0.0.12
"""


def problems(text: str) -> list[str]:
    with pytest.raises(AnswersError) as caught:
        parse_answers(text)
    return caught.value.problems


def test_the_example_describes_the_reference_scenario() -> None:
    answers = load_answers(example_answers())
    assert [h.name for h in answers.hosts] == ["server1", "server2"]
    assert answers.network.topology == "rails"
    assert [r.subnet for r in answers.network.rails] == [f"192.168.{n}.0/24" for n in (11, 12, 13, 14)]
    assert answers.network.mtu == 9000
    assert answers.roce.tos == 106 and answers.roce.dscp == 26 and answers.roce.priority == 3
    assert answers.discovery.expect_rdma_ports == 4 and answers.discovery.expect_gpus == 8
    assert answers.host_id("server2") == 2


def test_every_key_of_the_example_has_a_comment() -> None:
    for number, line in enumerate(example_answers().read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and ":" in stripped and not stripped.endswith(":"):
            assert "#" in line, f"line {number} has no comment: {line}"


def test_a_minimal_file_gets_safe_defaults() -> None:
    answers = parse_answers(BASE)
    assert answers.ssh.accept_new_host_keys is False
    assert answers.ssh.max_parallel_hosts == 64
    assert answers.ofed.stack == "doca"


def test_unknown_keys_are_named_with_their_line() -> None:
    assert problems(BASE + "network:\n  mtuu: 9000\n") == ["network.mtuu (line 8): unknown key"]


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("network:\n  mtu: 100000\n", "network.mtu (line 8)"),
        ("network:\n  mtu: nine\n", "network.mtu (line 8)"),
        ("roce:\n  tos: 256\n", "roce.tos (line 8)"),
        ("roce:\n  pfc_priority: 8\n", "roce.pfc_priority (line 8)"),
        ("ssh:\n  port: 70000\n", "ssh.port (line 8)"),
        ("network:\n  rails:\n    - subnet: 192.168.1.5/24\n", "network.rails[0].subnet (line 9)"),
        (
            "network:\n  rails:\n    - subnet: 192.168.1.0/24\n      netdev: 'eth 0'\n",
            "network.rails[0].netdev (line 10)",
        ),
        (
            "network:\n  rails:\n    - subnet: 192.168.1.0/24\n      netdev: averyveryverylongname0\n",
            "network.rails[0].netdev",
        ),
        ("inference:\n  model: llama\n", "inference.model (line 8)"),
    ],
)
def test_out_of_range_and_malformed_values_name_the_key(extra: str, key: str) -> None:
    found = problems(BASE + extra)
    assert len(found) == 1 and found[0].startswith(key), found


def test_duplicate_host_names_and_addresses_are_refused() -> None:
    dup_name = BASE.replace("name: server2", "name: server1")
    assert problems(dup_name) == ["hosts[1].name (line 5): duplicate name 'server1' (also in entry 0)"]
    dup_address = BASE.replace("10.0.0.12", "10.0.0.11")
    assert problems(dup_address)[0].startswith("hosts[1].address (line 6): duplicate address '10.0.0.11'")


def test_same_address_on_different_ports_is_two_hosts() -> None:
    text = BASE.replace("10.0.0.12", "10.0.0.11") + "    port: 2222\n"
    assert len(parse_answers(text).hosts) == 2


@pytest.mark.parametrize("name", ["server_1", "-server", "a" * 64, "bad name"])
def test_invalid_host_names_are_refused(name: str) -> None:
    assert problems(BASE.replace("server2", name))[0].startswith("hosts[1].name (line 5)")


def test_malformed_addresses_are_refused() -> None:
    assert problems(BASE.replace("10.0.0.12", "10.0.0.300"))[0].startswith("hosts[1].address (line 6)")


def test_overlapping_subnets_are_refused() -> None:
    text = BASE + "network:\n  rails:\n    - subnet: 192.168.0.0/16\n    - subnet: 192.168.3.0/24\n"
    assert problems(text) == [
        "network.rails[1].subnet (line 10): 192.168.3.0/24 overlaps network.rails[0].subnet 192.168.0.0/16"
    ]


def test_rail_subnets_must_not_contain_the_management_addresses() -> None:
    text = BASE + "network:\n  rails:\n    - subnet: 10.0.0.0/24\n"
    assert problems(text)[0].startswith(
        "hosts[0].address (line 4): management address 10.0.0.11 of server1 lies inside"
    )


def test_pfc_priority_must_agree_with_the_tos() -> None:
    found = problems(BASE + "roce:\n  tos: 106\n  pfc_priority: 4\n")
    assert found[0].startswith("roce (line 7): pfc_priority 4 does not match tos 106")


@pytest.mark.parametrize("key", ["sudo_password", "password", "key_passphrase"])
def test_secrets_are_refused_with_advice(key: str) -> None:
    found = problems(BASE + f"ssh:\n  {key}: hunter2\n")
    assert "secrets do not belong in the answers file" in found[0]
    assert "hunter2" not in found[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\nhosts: [\n", "invalid YAML"),
        ("- just\n- a list\n", "must be a mapping"),
        ("hosts:\n  - name: a\n    address: 10.0.0.1\n", "version (line 1): required key is missing"),
        ("version: 2\nhosts:\n  - name: a\n    address: 10.0.0.1\n", "version (line 1)"),
    ],
)
def test_structural_problems_are_one_line_each(text: str, message: str) -> None:
    found = problems(text)
    assert any(message in p for p in found), found
    assert all("\n" not in p for p in found)


def test_a_host_can_have_its_own_key_file_and_others_use_the_common_one() -> None:
    from wizard.engine.session import production_targets

    text = BASE.replace(
        "    address: 10.0.0.12\n", "    address: 10.0.0.12\n    identity_file: ~/.ssh/server2_ed25519\n"
    )
    answers = parse_answers(text + "ssh:\n  identity_file: ~/.ssh/id_ed25519\n")
    targets = production_targets(answers, None)
    assert targets["server1"].identity_file == "~/.ssh/id_ed25519"
    assert targets["server2"].identity_file == "~/.ssh/server2_ed25519"
