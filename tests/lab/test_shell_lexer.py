"""The lab shell's tokeniser: words, quoting, expansions, operators and redirections split as bash splits them.

The lab tokenises every probe batch and perftest command line anew (each carries its own token, port or address),
so ordinary text is taken a run at a time; these pin down what that must not change."""

from __future__ import annotations

from wizard.lab.shell.lexer import CmdSub, Lit, Param, read_word, tokenize


def shape(src: str) -> list[object]:
    """Each token as a comparable value: a word as its parts, anything else as (kind, value, fd)."""
    out: list[object] = []
    for tok in tokenize(src):
        if tok.kind == "WORD":
            assert tok.word is not None
            out.append([(type(p).__name__, getattr(p, "text", getattr(p, "name", getattr(p, "source", ""))),
                         p.quoted) for p in tok.word.parts])  # fmt: skip
        else:
            out.append((tok.kind, tok.value, tok.fd))
    return out


def test_a_perftest_command_line_is_plain_words() -> None:
    src = "timeout 33 stdbuf -oL ib_write_bw -d mlx5_0 -x 3 -p 18516 -F --tclass=106 --report_gbits 10.1.2.3"
    words = [w for w in shape(src) if isinstance(w, list)]
    assert [w[0][1] for w in words] == src.split()
    assert all(len(w) == 1 and w[0][0] == "Lit" and not w[0][2] for w in words)


def test_quotes_escapes_and_expansions_inside_one_word() -> None:
    assert shape("a\"b $X c\"'d e'\\ f$HOME") == [
        [("Lit", "a", False), ("Lit", "b ", True), ("Param", "X", True), ("Lit", " c", True), ("Lit", "d e", True),
         ("Lit", " ", True), ("Lit", "f", False), ("Param", "HOME", False)],
        ("EOF", "", None),
    ]  # fmt: skip
    assert shape("x=$(hostname)/`uname -r`") == [
        [("Lit", "x=", False), ("CmdSub", "hostname", False), ("Lit", "/", False), ("CmdSub", "uname -r", False)],
        ("EOF", "", None),
    ]


def test_operators_and_redirections_end_words_without_spaces() -> None:
    assert shape("echo a>b 2>&1|wc -l&&true;x") == [
        [("Lit", "echo", False)], [("Lit", "a", False)], ("REDIR", ">", None), [("Lit", "b", False)],
        ("REDIR", ">&", 2), [("Lit", "1", False)], ("OP", "|", None), [("Lit", "wc", False)],
        [("Lit", "-l", False)], ("OP", "&&", None), [("Lit", "true", False)], ("OP", ";", None),
        [("Lit", "x", False)], ("EOF", "", None),
    ]  # fmt: skip


def test_a_hash_starts_a_comment_only_at_a_word_start_and_digits_are_words_unless_an_fd() -> None:
    assert shape("echo a#b # gone\n12 3<x") == [
        [("Lit", "echo", False)], [("Lit", "a#b", False)], ("NL", "\n", None), [("Lit", "12", False)],
        ("REDIR", "<", 3), [("Lit", "x", False)], ("EOF", "", None),
    ]  # fmt: skip


def test_a_whole_string_word_keeps_shell_metacharacters() -> None:
    word, end = read_word("a b;c|d>e $V", 0, stop_at_space=False)
    assert end == len("a b;c|d>e $V")
    assert [(type(p), getattr(p, "text", getattr(p, "name", ""))) for p in word.parts] == [
        (Lit, "a b;c|d>e "),
        (Param, "V"),
    ]
    assert not any(isinstance(p, CmdSub) for p in word.parts)


def test_a_heredoc_body_is_attached_to_its_redirection() -> None:
    toks = tokenize("cat <<EOF >out\nline $X\nEOF\necho done")
    heredoc = next(t for t in toks if t.heredoc is not None)
    assert heredoc.heredoc is not None and heredoc.heredoc.body == "line $X\n"
    assert [t.word.parts[0].text for t in toks if t.kind == "WORD" and t.word] == ["cat", "out", "echo", "done"]
