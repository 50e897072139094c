"""A command line the answer composes from documented options is supported option by option."""

from __future__ import annotations

from covrag.generate import SupportChecker
from covrag.generate.citations import ParsedAnswer
from covrag.generate.commands import command_words, composed
from covrag.generate.records import Draft
from covrag.types import Answer, Citation, Passage


def page(pid: str, title: str, text: str) -> Passage:
    return Passage(pid, text, metadata={"title": title})


FIND = page("find#36", "find.1", "-mtime n File's data was last modified less than, more than "
            "or exactly n*24 hours ago.\n\n-type c File is of type c: f regular file.")  # fmt: skip
EXEC = page("find#60", "find.1", "-exec command {} + This variant of the -exec action runs the "
            "specified command on the selected files.")  # fmt: skip
GREP = page("grep#20", "grep.1", "-l, --files-with-matches Suppress normal output; instead "
            "print the name of each input file with a match.")  # fmt: skip
STASH = page("stash#3", "git-stash.1", "-S, --staged This option is only valid for push and "
             "save commands. Stash only the changes that are currently staged.")  # fmt: skip
CONTEXT = (FIND, EXEC, GREP, STASH)
COMMAND = 'find . -mtime -7 -type f -exec grep -l "TODO" {} +'


def test_command_words_reads_a_command_line_not_prose() -> None:
    assert command_words(f"`{COMMAND}`.") == [
        "find", ".", "-mtime", "-7", "-type", "f", "-exec", "grep", "-l", "TODO", "{}", "+",
    ]  # fmt: skip
    assert command_words("$ git stash push --staged") == ["git", "stash", "push", "--staged"]
    assert command_words("Use find to list files.") is None  # a capitalised first word
    assert command_words("find") is None  # a word alone
    assert command_words("find 'unclosed") is None
    # prose that opens with a program's name: its claim is not a command's
    assert command_words("tar can leave files out with --exclude.") is None
    assert command_words('grep -r "the" docs') == ["grep", "-r", "the", "docs"]


def test_a_command_of_documented_options_cites_each_options_passage() -> None:
    checked = composed(Citation(COMMAND, ("find#36",)), CONTEXT)
    assert checked is not None and checked.check is not None
    assert checked.check.verified == "composed" and checked.supported
    assert checked.passage_ids == ("find#36", "find#60", "grep#20")  # -mtime/-type, -exec, -l
    start, end = checked.check.span or (0, 0)
    assert FIND.text[start:end] == "-mtime"
    # a subcommand's options are looked up in the subcommand's page
    stash = composed(Citation("git stash push --staged", ()), CONTEXT)
    assert stash is not None and stash.passage_ids == ("stash#3",)


def test_an_option_no_passage_writes_or_a_program_without_a_document_is_not_supported() -> None:
    assert composed(Citation("find . -mtime -7 -newer stamp", ()), CONTEXT) is None  # -newer
    assert composed(Citation("curl -L https://example.com", ()), CONTEXT) is None  # no curl page
    # grep's -l is written in grep's page only: a command running find alone does not get it
    assert composed(Citation("find . -l", ()), CONTEXT) is None
    assert composed(Citation("find .", ()), CONTEXT) is None  # no option: nothing to check
    assert composed(Citation("Use -mtime to match by age.", ()), CONTEXT) is None


def test_the_support_check_keeps_the_command_and_drops_the_rest() -> None:
    sentences = (
        Citation("To list them, run:", ()),
        Citation(COMMAND, ("find#36",)),
        Citation("find . -mtime -7 -newermt yesterday", ("find#36",)),
    )
    draft = Draft(ParsedAnswer(Answer(sentences)), raw="", target_sentences=3)
    checked = SupportChecker(unsupported="drop", complete=0).check(draft, CONTEXT)
    kept = checked.answer.sentences
    assert [s.text for s in kept] == [COMMAND]
    assert kept[0].check is not None and kept[0].check.verified == "composed"
