"""Rail addresses beyond 254 hosts: the subnet decides how many hosts a rail holds; gateways are never given out."""

from __future__ import annotations

import ipaddress

import pytest

from steps.network.design import design
from tests.steps.facts_builder import reference_host
from tests.steps.test_network_facts import live
from wizard.answers.model import Answers, parse_answers
from wizard.errors import AnswersError


def fleet(count: int, rails: str, hosts_extra: str = "") -> str:
    """``count`` hosts from one range entry; IPv6 management addresses count up without octet edges."""
    return (
        f"version: 1\nhosts:\n  - name: gpu[0001-{count:04d}]\n    address_start: fd00::1\n{hosts_extra}"
        "network:\n  rails:\n" + rails
    )


def problems(text: str) -> list[str]:
    with pytest.raises(AnswersError) as caught:
        parse_answers(text)
    return caught.value.problems


def rail_addresses(answers: Answers, host: str) -> list[str]:
    disc = reference_host(host, ssh_address=next(h.address for h in answers.hosts if h.name == host))
    result = design(answers, host, disc, live(disc))
    assert result.blockers == []
    return [e.address for e in result.endpoints]


def test_a_slash_23_rail_holds_host_300_past_the_third_octet() -> None:
    answers = parse_answers(fleet(500, "    - {subnet: 10.10.0.0/23, gateway: 10.10.1.254}\n"))
    assert rail_addresses(answers, "gpu0300") == ["10.10.1.44/23"]
    assert rail_addresses(answers, "gpu0255") == ["10.10.0.255/23"]  # a host address inside a /23
    assert rail_addresses(answers, "gpu0500") == ["10.10.1.244/23"]


def test_a_slash_24_is_refused_for_300_hosts_with_the_numbers() -> None:
    text = fleet(300, "    - {subnet: 10.10.0.0/24, gateway: 10.10.0.254}\n")
    assert problems(text) == [
        "network.rails[0].subnet (line 7): 10.10.0.0/24 holds 253 hosts besides its gateway 10.10.0.254, the answers "
        "name 300 (use a larger subnet)"
    ]


def test_a_slash_23_holds_510_hosts_minus_its_gateway() -> None:
    rails = "    - {subnet: 10.10.0.0/23, gateway: 10.10.1.254}\n"
    assert len(parse_answers(fleet(509, rails)).hosts) == 509
    (problem,) = problems(fleet(510, rails))
    assert "10.10.0.0/23 holds 509 hosts besides its gateway 10.10.1.254, the answers name 510" in problem
    assert len(parse_answers(fleet(510, "    - {subnet: 10.10.0.0/23}\n")).hosts) == 510


def test_a_gateway_host_part_is_skipped_on_every_rail_so_a_host_keeps_one_number() -> None:
    rails = "    - {subnet: 10.10.0.0/24, gateway: 10.10.0.1}\n    - {subnet: 10.11.0.0/24}\n"
    answers = parse_answers(fleet(4, rails))
    assert [answers.host_id(f"gpu000{n}") for n in range(1, 5)] == [2, 3, 4, 5]
    assert rail_addresses(answers, "gpu0001") == ["10.10.0.2/24", "10.11.0.2/24"]


def test_another_rails_gateway_lowers_what_a_rail_holds_and_the_message_says_so() -> None:
    rails = "    - {subnet: 10.10.0.0/24, gateway: 10.10.0.254}\n    - {subnet: 10.11.0.0/24, gateway: 10.11.0.1}\n"
    assert len(parse_answers(fleet(252, rails)).hosts) == 252
    (problem,) = problems(fleet(253, rails))
    assert problem.endswith(
        "10.10.0.0/24 holds 252 hosts besides its gateway 10.10.0.254 and host id 1 (skipped: other rails' gateways), "
        "the answers name 253 (use a larger subnet)"
    )


def test_no_host_gets_the_network_broadcast_or_gateway_address_of_a_small_rail() -> None:
    answers = parse_answers(fleet(5, "    - {subnet: 10.10.0.0/29, gateway: 10.10.0.3}\n"))
    net = ipaddress.ip_network("10.10.0.0/29")
    given = [rail_addresses(answers, h.name)[0].split("/")[0] for h in answers.hosts]
    assert given == ["10.10.0.1", "10.10.0.2", "10.10.0.4", "10.10.0.5", "10.10.0.6"]
    assert not {str(net.network_address), str(net.broadcast_address), "10.10.0.3"} & set(given)
    (problem,) = problems(fleet(6, "    - {subnet: 10.10.0.0/29, gateway: 10.10.0.3}\n"))
    assert "10.10.0.0/29 holds 5 hosts besides its gateway 10.10.0.3, the answers name 6" in problem


def test_an_explicit_host_id_on_the_gateway_or_past_the_subnet_is_refused() -> None:
    on_gateway = fleet(4, "    - {subnet: 10.10.0.0/24, gateway: 10.10.0.3}\n", "    host_id_start: 2\n")
    assert problems(on_gateway) == [
        "hosts[0].host_id_start (line 5): 3 gives gpu0002 the address 10.10.0.3 of network.rails[0].gateway; "
        "choose another host_id"
    ]
    past = (
        "version: 1\nhosts:\n  - {name: a, address: 10.0.0.1, host_id: 300}\nnetwork:\n  rails:\n"
        "    - {subnet: 10.10.0.0/24}\n"
    )
    assert problems(past) == [
        "hosts[0].host_id (line 3): host id 300 of a does not fit network.rails[0].subnet 10.10.0.0/24: its host ids "
        "run 1-254 (10.10.0.1 to 10.10.0.254)"
    ]


def test_explicit_host_ids_place_a_range_anywhere_in_a_large_rail() -> None:
    answers = parse_answers(fleet(3, "    - {subnet: 10.10.0.0/22}\n", "    host_id_start: 769\n"))
    assert rail_addresses(answers, "gpu0003") == ["10.10.3.3/22"]
