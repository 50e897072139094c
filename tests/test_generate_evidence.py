"""Draft evidence: the corpus entries that define what a draft names and its context does not,
looked up in real manuals (the answer benchmark's, indexed as ``covrag index --docs`` does)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from covrag.generate import SupportChecker
from covrag.generate.citations import parse_citations
from covrag.generate.commands import composed
from covrag.generate.evidence import Evidence, wanted
from covrag.generate.generator import CritiqueRewriteGenerator
from covrag.generate.records import Draft
from covrag.generate.writer import CitedWriter
from covrag.ingest import update_index
from covrag.llm.prompts import document_of
from covrag.retrieve import load_index
from covrag.retrieve.definitions import defines
from covrag.types import Citation, Passage
from llm_support import ScriptedLLM

MANUALS = Path(__file__).parent.parent / "benchmarks" / "answers" / "corpora" / "manuals"
COMMAND = 'find . -mtime -7 -type f -exec grep -l "TODO" {} +'


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Passage, ...]:
    """find's, grep's, gzip's and tar's manuals, cut into passages as ``covrag index`` cuts them."""
    folder = tmp_path_factory.mktemp("manuals")
    for name in ("find.1.txt", "grep.1.txt", "gzip.1.txt", "tar.1.txt"):
        shutil.copy(MANUALS / name, folder / name)
    out = tmp_path_factory.mktemp("index") / "index"
    update_index([folder], out)
    return tuple(load_index(str(out)).passages)


def entry(corpus: tuple[Passage, ...], document: str, name: str) -> Passage:
    return next(p for p in corpus if document_of(p) == document and defines(p, name))


def draft_of(text: str, context: tuple[Passage, ...]) -> Draft:
    return Draft(parse_citations(text, [p.id for p in context]), text, 3)


def test_a_commands_options_are_looked_up_in_its_programs_manuals(
    corpus: tuple[Passage, ...],
) -> None:
    atime = entry(corpus, "find.1", "-atime")  # the neighbour the context held (manuals-07)
    found = Evidence(corpus).lookup([COMMAND], (atime,))
    assert [document_of(p) for p in found] == ["find.1", "find.1", "find.1", "grep.1"]
    for passage, name in zip(found, ("-mtime", "-type", "-exec", "-l"), strict=True):
        assert defines(passage, name)
    # the check reads the command against them, option by option; without them it drops it
    sentence = Citation(COMMAND, ())
    assert composed(sentence, (atime,)) is None
    checked = composed(sentence, (atime, *found))
    assert checked is not None and checked.check is not None
    assert checked.check.verified == "composed"
    assert set(checked.passage_ids) <= {p.id for p in found}
    # at most `most`, in the order the draft names them
    assert Evidence(corpus, most=2).lookup([COMMAND], (atime,)) == found[:2]


def test_an_option_the_context_defines_is_not_looked_up(corpus: tuple[Passage, ...]) -> None:
    mtime = entry(corpus, "find.1", "-mtime")
    assert mtime not in Evidence(corpus).lookup(["find . -mtime -7"], (mtime,))
    assert Evidence(corpus).lookup(["find . -mtime -7"], (mtime,)) == ()


def test_a_sentence_s_option_is_taken_from_the_program_it_is_about(
    corpus: tuple[Passage, ...],
) -> None:
    # grep and gzip both define -q: the sentence about grep gets grep's entry, whichever
    # document comes first in the context
    context = (entry(corpus, "gzip.1", "-d"), entry(corpus, "grep.1", "-i"))
    found = Evidence(corpus).lookup(["Use grep with the -q option to print nothing."], context)
    assert [document_of(p) for p in found] == ["grep.1"] and defines(found[0], "-q")
    # an option of a program the sentence names comes from that program's documents or from
    # none: gzip's manual has no -i entry, tar's has, and tar's is not gzip's
    context = (entry(corpus, "gzip.1", "-d"), entry(corpus, "tar.1", "--exclude"))
    assert Evidence(corpus).lookup(["Run gzip with the -i option."], context) == ()
    found = Evidence(corpus).lookup(["Run tar with the -i option."], context)
    assert [document_of(p) for p in found] == ["tar.1"]
    # an option explained after the draft's command is that command's program's option
    context = (entry(corpus, "gzip.1", "-d"), entry(corpus, "tar.1", "--exclude"))
    explained = ["tar -czvf out.tar.gz --exclude=tmp src", "The -v option lists the files."]
    found = Evidence(corpus).lookup(explained, context)
    assert found and all(document_of(p) == "tar.1" for p in found)


def test_combined_short_options_are_read_one_by_one(corpus: tuple[Passage, ...]) -> None:
    assert wanted(["tar -czvf out.tar.gz src"]) == [("tar", "-czvf", ())]
    context = tuple(entry(corpus, "tar.1", name) for name in ("-c", "-z", "--exclude"))
    found = Evidence(corpus).lookup(["tar -czvf out.tar.gz --exclude=tmp src"], context)
    assert all(document_of(p) == "tar.1" for p in found)
    checked = composed(Citation("tar -czvf out.tar.gz --exclude=tmp src", ()), (*context, *found))
    assert checked is not None and checked.supported
    # a passage writing the combination whole is enough on its own
    whole = Passage("t#1", "Create it with tar -czvf out.tar.gz src.", metadata={"title": "tar.1"})
    assert composed(Citation("tar -czvf out.tar.gz src", ()), (whole,)) is not None


def test_the_check_cites_the_evidence_and_keeps_the_fallback_to_the_context(
    corpus: tuple[Passage, ...],
) -> None:
    atime = entry(corpus, "find.1", "-atime")
    draft = draft_of(COMMAND, (atime,))
    alone = SupportChecker(complete=0).check(draft, (atime,))
    assert alone.fallback == "quote"  # nothing holds the command: the context is quoted
    found = Evidence(corpus).lookup([COMMAND], (atime,))
    checked = SupportChecker(complete=0).check(draft, (atime,), evidence=found)
    assert checked.fallback is None
    [sentence] = checked.answer.sentences
    assert sentence.check is not None and sentence.check.verified == "composed"
    assert set(sentence.passage_ids) <= {p.id for p in found}


def test_the_generator_records_the_evidence_of_each_draft(corpus: tuple[Passage, ...]) -> None:
    atime = entry(corpus, "find.1", "-atime")
    llm = ScriptedLLM([COMMAND])
    generator = CritiqueRewriteGenerator(
        CitedWriter(llm), passes=0, checker=SupportChecker(), evidence=Evidence(corpus)
    )
    result = generator.generate("Which files changed last week hold TODO?", [atime])
    assert [p.id for p in result.evidence] == [p.id for p in result.drafts[0].evidence]
    assert result.drafts[0].evidence and result.answer.sentences[0].check is not None
    assert result.answer.sentences[0].check.verified == "composed"
    record = result.to_record()
    assert record.drafts[0].evidence == [p.id for p in result.evidence]
    # none looked up: the generator reads the context alone, as before
    plain = CritiqueRewriteGenerator(CitedWriter(ScriptedLLM([COMMAND])), passes=0,
                                     checker=SupportChecker())  # fmt: skip
    assert plain.generate("q", [atime]).evidence == ()


def test_a_modules_function_is_looked_up_in_that_modules_reference() -> None:
    # pydoc's entries open with the function's own name (benchmarks/answers/corpora/python-api)
    entry_ = Passage(
        "shutil#40",
        "    copytree(src, dst, symlinks=False, ignore=None, dirs_exist_ok=False)\n"
        "        Recursively copy a directory tree and return the destination directory.",
        metadata={"title": "shutil"},
    )
    other = Passage(
        "os#9", "copytree(src, dst)\n    Not shutil's entry.", metadata={"title": "os.path"}
    )
    intro = Passage("shutil#1", "The shutil module offers high-level file operations.",
                    metadata={"title": "shutil"})  # fmt: skip
    sentence = "Use shutil.copyTree to copy the whole folder."  # the name as the draft wrote it
    assert wanted([sentence]) == [("shutil", "copyTree", ())]
    found = Evidence((intro, other, entry_)).lookup(["Call shutil.copytree(src, dst)."], (intro,))
    assert found == (entry_,)  # the shutil module's entry, not another module's
    assert Evidence((intro, other, entry_)).lookup(["Call shutil.copytree()."], (entry_,)) == ()
