"""Host ranges in the answers: one entry names many hosts, expanded before validation, errors name the entry's key."""

from __future__ import annotations

import pytest

from wizard.answers import ranges as host_ranges
from wizard.answers.model import parse_answers
from wizard.answers.write import dump_answers
from wizard.errors import AnswersError


def answers_with(hosts: str, extra: str = "") -> str:
    return "version: 1\nhosts:\n" + hosts + extra


def problems(text: str) -> list[str]:
    with pytest.raises(AnswersError) as caught:
        parse_answers(text)
    return caught.value.problems


def test_a_name_range_keeps_zero_padding_and_pairs_with_an_address_pattern_in_order() -> None:
    answers = parse_answers(answers_with("  - name: gpu[001-256]\n    address: 10.0.[0-1].[1-128]\n    user: ubuntu\n"))
    assert len(answers.hosts) == 256
    assert (answers.hosts[0].name, answers.hosts[0].address) == ("gpu001", "10.0.0.1")
    assert (answers.hosts[127].name, answers.hosts[127].address) == ("gpu128", "10.0.0.128")
    assert (answers.hosts[128].name, answers.hosts[128].address) == ("gpu129", "10.0.1.1")
    assert (answers.hosts[255].name, answers.hosts[255].address) == ("gpu256", "10.0.1.128")
    assert {h.user for h in answers.hosts} == {"ubuntu"}


def test_several_ranges_in_one_name_expand_leftmost_slowest() -> None:
    assert host_ranges.expand("r[1-2]n[01-03]") == ["r1n01", "r1n02", "r1n03", "r2n01", "r2n02", "r2n03"]
    assert host_ranges.expand("rack-[a-c]") == ["rack-a", "rack-b", "rack-c"]
    assert host_ranges.expand("gpu[01:10:3]", sep=":", stride=True) == ["gpu01", "gpu04", "gpu07", "gpu10"]


def test_address_start_gives_consecutive_addresses_and_shared_keys_go_to_every_host() -> None:
    answers = parse_answers(
        answers_with("  - name: gpu[01-16]\n    address_start: 10.0.0.11\n    port: 2222\n    identity_file: /k\n")
    )
    assert [h.address for h in answers.hosts] == [f"10.0.0.{n}" for n in range(11, 27)]
    assert {(h.port, h.identity_file) for h in answers.hosts} == {(2222, "/k")}


def test_plain_entries_and_ranges_mix_in_file_order() -> None:
    answers = parse_answers(
        answers_with("  - name: head\n    address: 10.0.9.1\n  - name: gpu[1-2]\n    address: 10.0.0.[1-2]\n")
    )
    assert [h.name for h in answers.hosts] == ["head", "gpu1", "gpu2"]
    assert answers.host_id("gpu2") == 3


def test_host_id_start_numbers_a_range_and_host_id_on_a_range_is_refused() -> None:
    ok = parse_answers(answers_with("  - name: gpu[1-3]\n    address: 10.0.0.[1-3]\n    host_id_start: 101\n"))
    assert [ok.host_id(h.name) for h in ok.hosts] == [101, 102, 103]
    assert problems(answers_with("  - name: gpu[1-3]\n    address: 10.0.0.[1-3]\n    host_id: 5\n")) == [
        "hosts[0].host_id (line 5): gpu[1-3] names 3 hosts and one host_id cannot number them all; use "
        "host_id_start (the first host's id; the others follow)"
    ]


def test_mismatched_counts_name_the_key_and_both_numbers() -> None:
    text = answers_with(
        "  - name: a\n    address: 10.1.0.1\n  - name: b\n    address: 10.1.0.2\n"
        "  - name: gpu[001-300]\n    address: 10.0.[0-1].[1-128]\n"
    )
    assert problems(text) == [
        "hosts[2].address (line 8): 10.0.[0-1].[1-128] gives 256 addresses but gpu[001-300] names 300 hosts"
    ]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("gpu[5-1]", "[5-1] runs backwards (start 5 is after end 1)"),
        ("gpu[a-3]", "[a-3]: start and end must both be numbers or both single letters of the same case"),
        ("gpu[1-3", "unbalanced brackets: '[' without ']' in gpu[1-3"),
        ("gpu1-3]", "unbalanced brackets: ']' without '[' in gpu1-3]"),
        ("gpu[1-[2-3]]", "unbalanced brackets: '[' inside a range in gpu[1-[2-3]]"),
        ("gpu[1-200000]", "gpu[1-200000] names 200,000 values, more than the limit of 100,000"),
        ("gpu[01-100]", "[01-100]: a zero-padded start needs an end of the same width (01 and 100)"),
        ("gpu_[1-3]", "gpu_[1-3]: 'gpu_1' is not a valid host name (letters, digits, '-', dots between labels)"),
    ],
)
def test_malformed_ranges_are_refused_with_one_line_naming_the_name_key(name: str, reason: str) -> None:
    assert problems(answers_with(f"  - name: {name}\n    address_start: 10.0.1.1\n")) == [
        f"hosts[0].name (line 3): {reason}"
    ]


def test_the_same_name_from_two_entries_names_both_entries() -> None:
    text = answers_with(
        "  - name: gpu[01-16]\n    address_start: 10.0.0.11\n  - name: gpu[10-20]\n    address_start: 10.0.1.11\n"
    )
    assert problems(text) == [
        "hosts[1].name (line 5): gpu10 is named twice: by hosts[0] (gpu[01-16]) and hosts[1] (gpu[10-20])"
    ]


def test_the_same_address_from_two_entries_names_both_entries() -> None:
    text = answers_with(
        "  - name: gpu[01-16]\n    address_start: 10.0.0.11\n  - name: x[10-20]\n    address: 10.0.0.[20-30]\n"
    )
    assert problems(text) == [
        "hosts[1].address (line 6): 10.0.0.20 port 22 is given twice: by hosts[0] (address_start 10.0.0.11) "
        "and hosts[1] (10.0.0.[20-30])"
    ]


def test_the_same_address_on_another_port_is_another_host() -> None:
    text = answers_with(
        "  - name: a[1-2]\n    address: 10.0.0.[1-2]\n  - name: b[1-2]\n    address: 10.0.0.[1-2]\n    port: 2222\n"
    )
    assert len(parse_answers(text).hosts) == 4


@pytest.mark.parametrize(
    ("start", "reason"),
    [
        ("255.255.255.250", "255.255.255.250 + 16 hosts runs past the last address 255.255.255.255"),
        ("10.0.0.250", "10.0.0.250 for the 16 hosts of gpu[01-16] reaches 10.0.0.255, an address ending in .0 or"),
        ("gpu-head", "'gpu-head' is not an IP address (address_start counts up from an address)"),
    ],
)
def test_address_start_must_not_overflow_or_cross_an_octet_edge(start: str, reason: str) -> None:
    (problem,) = problems(answers_with(f"  - name: gpu[01-16]\n    address_start: {start}\n"))
    assert problem.startswith(f"hosts[0].address_start (line 4): {reason}")


def test_a_shared_key_error_is_reported_once_against_the_range_entry() -> None:
    assert problems(answers_with("  - name: gpu[1-3]\n    address: 10.0.0.[1-3]\n    port: 99999\n")) == [
        "hosts[0].port (line 5): Input should be less than or equal to 65535"
    ]
    (secret,) = problems(answers_with("  - name: gpu[1-3]\n    address: 10.0.0.[1-3]\n    password: x\n"))
    assert secret.startswith("hosts[0].password (line 5): secrets do not belong in the answers file")


def test_range_only_keys_need_a_name_range() -> None:
    assert problems(answers_with("  - name: gpu1\n    address_start: 10.0.0.1\n")) == [
        "hosts[0].address_start (line 4): address_start only goes with a name range such as gpu[001-016]"
    ]


def test_saving_unchanged_answers_keeps_the_ranges_of_the_loaded_file() -> None:
    text = answers_with("  - name: gpu[001-256]\n    address: 10.0.[0-1].[1-128]\n    user: ubuntu\n")
    answers = parse_answers(text)
    saved = dump_answers(answers)
    assert "- name: gpu[001-256]\n  address: 10.0.[0-1].[1-128]\n  user: ubuntu\n" in saved
    assert "gpu002" not in saved
    assert parse_answers(saved) == answers


def test_saving_after_the_host_list_changed_writes_plain_entries() -> None:
    answers = parse_answers(answers_with("  - name: gpu[001-004]\n    address: 10.0.0.[1-4]\n"))
    data = answers.model_dump(mode="json")
    data["hosts"] = data["hosts"][:3]
    edited = type(answers).model_validate(data)
    saved = dump_answers(edited)
    assert "gpu[" not in saved
    assert [h.name for h in parse_answers(saved).hosts] == ["gpu001", "gpu002", "gpu003"]


def test_an_unrelated_edit_keeps_the_ranges() -> None:
    answers = parse_answers(answers_with("  - name: gpu[001-004]\n    address: 10.0.0.[1-4]\n"))
    data = answers.model_dump(mode="json")
    data["network"]["mtu"] = 4200
    saved = dump_answers(type(answers).model_validate(data))
    assert "- name: gpu[001-004]" in saved and "mtu: 4200" in saved


def test_the_run_line_of_a_fleet_names_the_count_and_the_ends_not_a_thousand_names() -> None:
    import io

    from wizard.cli.reporters import HumanReporter
    from wizard.engine.events import Event

    names = [f"gpu-{i:04d}" for i in range(1, 1025)]
    for hosts, expected in ((names[:3], "hosts gpu-0001, gpu-0002, gpu-0003;"),
                            (names, ", 1024 hosts (gpu-0001 .. gpu-1024);")):  # fmt: skip
        stream = io.StringIO()
        HumanReporter(stream)(Event("run_started", {"cluster": "c", "hosts": hosts, "stages": ["roce"]}))
        assert expected in stream.getvalue()
        assert len(stream.getvalue().splitlines()[0]) < 120
