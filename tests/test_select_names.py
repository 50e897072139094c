"""The name filter: a question naming something no retrieved passage writes is not answered from
other passages (:func:`covrag.text.subject_names`, :func:`covrag.selectors.floor.absent_names`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from covrag.schema.ask import FiltersOut
from covrag.selectors.base import Candidates
from covrag.selectors.floor import absent_names, filter_pool, subject_documents
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


def test_a_name_keeps_the_version_its_slash_gives_it() -> None:
    # wget's release notes write HTTP/1.1 and never HTTP/2: a question about HTTP/2 is not
    # answered from them (the news corpus's news-12)
    question = "Does wget support HTTP/2, and if so since which release and with which option?"
    assert subject_names(question) == ["HTTP/2"]
    assert subject_names("Does MPL/2.0 allow it, and does HTTP/1.1 or OS/2?") == [
        "MPL/2.0",
        "HTTP/1.1",
        "OS/2",
    ]
    notes = (Passage("n", "** Wget now uses HTTP/1.1 persistent connections by default."),)
    assert absent_names(["HTTP/2", "HTTP/1.1", "HTTP/1"], notes) == ("HTTP/2", "HTTP/1")
    # the same version as a document writes it: a space, no separator, trailing zeros
    for text in ("Adds HTTP/2 support.", "HTTP 2 is on.", "the HTTP2 code", "HTTP/2.0 draft"):
        assert absent_names(["HTTP/2"], (Passage("w", text),)) == (), text
    for text in ("HTTP/2.1 only", "HTTP 200 OK", "HTTP/20"):
        assert absent_names(["HTTP/2"], (Passage("w", text),)) == ("HTTP/2",), text
    kept, report = filter_pool(pool(), 0.0, names=subject_names(question))
    assert len(kept) == 0 and report.absent == ("HTTP/2",)
    assert "'HTTP/2'" in (report.reason() or "")


def test_an_absent_name_removes_every_passage_and_the_refusal_names_it() -> None:
    candidates = pool()
    kept, report = filter_pool(candidates, 0.0, names=["LZMA2"])
    assert len(kept) == 0 and report.kept == 0 and report.absent == ("LZMA2",)
    reason = report.reason()
    assert reason is not None and "name filter" in reason and "'LZMA2'" in reason
    assert FiltersOut.model_validate(report.as_dict()).absent == ["LZMA2"]
    # a name every document writes keeps the pool as the other filters leave it
    written = dataclasses.replace(
        candidates,
        passages=tuple(
            Passage(p.id, f"LZMA2 {p.text}", tokens=5, metadata={"doc_id": "xz.1"})
            for p in candidates.passages
        ),
    )
    kept, report = filter_pool(written, 0.0, names=["LZMA2"])
    assert len(kept) == len(candidates) and report.absent == () and report.reason() is None
    assert report.off_subject == 0


def manuals_pool() -> Candidates:
    """Five passages of three manuals, as a search for an SSH keepalive question pools them."""
    texts = {
        ("ssh_config.5", "ServerAliveInterval"): "ServerAliveInterval Sets a timeout interval in "
        "seconds after which if no data has been received from the server, ssh(1) will send a "
        "message through the encrypted channel.",
        ("ssh_config.5", "ServerAliveCountMax"): "ServerAliveCountMax Sets the number of server "
        "alive messages which may be sent without receiving any messages back.",
        ("curl.1", "keepalive"): "--keepalive-time <seconds> This option sets the time a "
        "connection needs to remain idle before sending keepalive probes.",
        ("curl.1", "no-keepalive"): "--no-keepalive Disables the use of keepalive messages on the "
        "TCP connection.",
        ("ssh.1", "-o"): "-o option Can be used to give options in the format used in the "
        "configuration file.",
    }
    base = pool()
    passages = tuple(
        Passage(f"p{i}", text, tokens=5, metadata={"doc_id": f"{doc}.txt", "title": doc})
        for i, ((doc, _), text) in enumerate(texts.items())
    )
    return dataclasses.replace(base, passages=passages)


QUESTION = "How do I keep an SSH connection from timing out when idle?"


def test_the_passages_of_a_document_that_never_writes_the_asked_name_go() -> None:
    candidates = manuals_pool()
    assert subject_documents(["SSH"], QUESTION, candidates.passages).tolist() == [
        True,  # ssh_config: its title shares "ssh" with the question, and it writes ssh(1)
        True,
        False,  # curl: neither passage writes SSH, and "curl" is not a word of the question
        False,
        True,  # ssh: by its title
    ]
    kept, report = filter_pool(candidates, 0.0, names=["SSH"], question=QUESTION)
    assert [p.metadata["title"] for p in kept.passages] == ["ssh_config.5"] * 2 + ["ssh.1"]
    assert report.off_subject == 2 and report.kept == 3 and report.absent == ()
    assert FiltersOut.model_validate(report.as_dict()).off_subject == 2
    # one passage of a document writing the name keeps all of that document's passages
    curl_ssh = dataclasses.replace(
        candidates,
        passages=(
            *candidates.passages[:3],
            Passage(
                "p3",
                "--ssh-compression Enables SSH compression.",
                tokens=5,
                metadata={"doc_id": "curl.1.txt", "title": "curl.1"},
            ),
            candidates.passages[4],
        ),
    )
    assert subject_documents(["SSH"], QUESTION, curl_ssh.passages).all()
    # a question naming the document's subject by its title keeps it ("curl")
    asked = "How do I send a POST request with curl?"
    assert subject_documents(["POST"], asked, candidates.passages)[2:4].all()


def test_the_subject_test_steps_aside_without_names_or_when_no_document_is_about_them() -> None:
    candidates = manuals_pool()
    assert subject_documents([], QUESTION, candidates.passages).all()
    # no document writes LZMA2: absent_names refuses instead, and nothing is counted off subject
    kept, report = filter_pool(candidates, 0.0, names=["LZMA2"], question=QUESTION)
    assert len(kept) == 0 and report.absent == ("LZMA2",) and report.off_subject == 0
    # the words that say what kind a document is ("manual", "README") name no subject
    readme = (
        Passage("r", "Install with make.", metadata={"doc_id": "README.md", "title": "README"}),
        Passage("z", "zstd is fast.", metadata={"doc_id": "zstd.txt"}),
    )
    assert subject_documents(["zstd"], "What does the README say about zstd?", readme).tolist() == [
        False,
        True,
    ]


def test_the_refusal_says_the_name_filter_took_passages_the_other_filters_left() -> None:
    candidates = manuals_pool()
    # the only passages clearing the floor are curl's
    probs = np.array(
        [[0.1, 0.1, 0.0], [0.1, 0.1, 0.0], [0.9, 0.1, 0.0], [0.7, 0.1, 0.0], [0.1, 0.1, 0.0]]
    )
    assert candidates.coverage is not None
    coverage = dataclasses.replace(candidates.coverage, probs=probs)
    kept, report = filter_pool(
        dataclasses.replace(candidates, coverage=coverage), 0.5, names=["SSH"], question=QUESTION
    )
    assert len(kept) == 0 and report.off_subject == 2 and report.cleared_floor == 2
    reason = report.reason()
    assert reason is not None and "name filter removed 2" in reason and "--no-names" in reason
