"""The name filter: a question naming something no retrieved passage writes is not answered from
other passages (:func:`covrag.text.subject_names`, :func:`covrag.selectors.floor.absent_names`)."""

from __future__ import annotations

import dataclasses

from covrag.schema.ask import FiltersOut
from covrag.selectors.floor import absent_names, filter_pool
from covrag.text import subject_names
from covrag.types import Passage
from test_select_floor import pool


def test_the_names_a_question_asks_about() -> None:
    assert subject_names("How can I read a TOML config file using only the standard library?") == [
        "TOML"
    ]
    assert subject_names("What is the largest dictionary size of LZMA2 used by xz?") == ["LZMA2"]
    assert subject_names("What's the difference between shutil.copy and shutil.copy2?") == [
        "shutil.copy",
        "shutil.copy2",
    ]
    assert subject_names("Which files changed last week and contain the word TODO?") == []
    assert subject_names("Roll the log over once it reaches about 10 MB.") == []
    assert subject_names('Why does grep print "ERROR" twice?') == []
    assert subject_names("Should schools require uniforms?") == []
    assert subject_names("How do I use find -mtime to list old files?") == ["-mtime"]


def test_a_name_is_written_as_an_option_a_last_part_or_a_word_in_any_case() -> None:
    passages = (
        Passage("a", "copy2(src, dst) Copy data and metadata."),
        Passage("b", "-mtime n  File's data was last modified n*24 hours ago."),
        Passage("c", "The toml format is not supported."),
    )
    assert absent_names(["shutil.copy2", "-mtime", "TOML"], passages) == ()
    assert absent_names(["-MTIME", "LZMA2", "shutil.move"], passages) == (
        "-MTIME",
        "LZMA2",
        "shutil.move",
    )
    assert absent_names(["copy"], (Passage("d", "copy2(src, dst)"),)) == ("copy",)  # whole word
    # an acronym's plural and singular are one name
    urls = (Passage("e", "Each URL is fetched once; the IDs are kept."),)
    assert absent_names(["URLs", "ID", "URIs"], urls) == ("URIs",)


def test_an_absent_name_removes_every_passage_and_the_refusal_names_it() -> None:
    candidates = pool()
    kept, report = filter_pool(candidates, 0.0, names=["LZMA2"])
    assert len(kept) == 0 and report.kept == 0 and report.absent == ("LZMA2",)
    reason = report.reason()
    assert reason is not None and "name filter" in reason and "'LZMA2'" in reason
    assert FiltersOut.model_validate(report.as_dict()).absent == ["LZMA2"]
    # a name a passage writes keeps the pool as the other filters leave it
    written = dataclasses.replace(
        candidates,
        passages=(Passage("p0", "LZMA2 text", tokens=5), *candidates.passages[1:]),
    )
    kept, report = filter_pool(written, 0.0, names=["LZMA2"])
    assert len(kept) == len(candidates) and report.absent == () and report.reason() is None
