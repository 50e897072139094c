"""The answer benchmark's nugget checks: a nugget stated with support, stated without it, missing;
the reader's support check; narration; misattribution; the nugget file's errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from covrag.errors import DataError
from covrag.evaluation.nuggets import (
    CitedSentence,
    Nugget,
    NuggetQuestion,
    Source,
    check_answer,
    check_sources,
    matches,
    narrates,
    normalise,
    read_nugget_questions,
)
from covrag.types import Passage

KEEPALIVE = Nugget(
    "ssh-a",
    "Set ServerAliveInterval so the client sends keepalive messages.",
    (("ServerAliveInterval",),),
    (Source("ssh_config.5.txt", "Sets a timeout interval in seconds"),),
    vital=True,
)
COUNT = Nugget(
    "ssh-b",
    "ServerAliveCountMax sets how many unanswered messages end the session.",
    (("ServerAliveCountMax",), ("disconnect", "terminate")),
    (Source("ssh_config.5.txt", "ServerAliveCountMax"),),
)
QUESTION = NuggetQuestion(
    "manuals-01", "manuals", "howto", "How do I keep SSH alive?", (KEEPALIVE, COUNT)
)


def _passage(pid: str, source: str, text: str) -> Passage:
    return Passage(pid, text, metadata={"source": f"/corpus/{source}", "doc_id": source})


POOL = [
    _passage(
        "p1",
        "ssh_config.5.txt",
        "ServerAliveInterval Sets a timeout interval in seconds after which if no data has been "
        "re\u2010\n   ceived from the server, ssh will send a message.",
    ),
    _passage(
        "p2",
        "ssh_config.5.txt",
        "ServerAliveCountMax Sets the number of server alive messages which may be sent; ssh "
        "will disconnect from the server when it is reached.",
    ),
    _passage(
        "p3",
        "curl.1.txt",
        "--keepalive-time <seconds> This option sets the time a connection needs to remain "
        "idle before sending keepalive probes. ServerAliveInterval is not a curl option.",
    ),
]


def test_terms_match_whole_tokens_after_normalising() -> None:
    assert normalise("re\u2010\n   ceived \u201cx\u201d \u2013 y") == "re" + 'ceived "x" - y'
    assert matches([["-z", "--gzip"]], "tar -c -z -f out.tgz")
    assert not matches([["-z"]], "the -zip option")
    assert not matches([["gzip"]], "a gzipped file")
    assert matches([["thread-safe"]], "zlib is thread safe")
    assert not matches([["json.dump"]], "use json.dumps")
    assert matches([["keepalive"]], "sends keepalives")
    assert matches([["-L"]], "curl -L https://example.org")
    # options match as written: -L and -l are different options; no longer option matches
    assert not matches([["-L"]], "curl -l ftp://example.org")
    assert not matches([["--exclude"]], "tar --exclude-backups")
    assert matches([["--exclude"]], "tar --exclude=PATTERN --exclude-backups")
    assert not matches([["ServerAliveInterval"], ["seconds"]], "ServerAliveInterval only")


def test_a_nugget_stated_with_support_stated_without_and_missing() -> None:
    sentences = [
        # stated, and cites the passage of ssh_config that states it
        CitedSentence("Set ServerAliveInterval to a number of seconds.", ("p1",)),
        # stated, but cites curl's passage: that document is not a source of the nugget
        CitedSentence("ServerAliveCountMax makes ssh disconnect after missed replies.", ("p3",)),
    ]
    check = check_answer(QUESTION, POOL, ["p1", "p3"], sentences)
    first, second = check.verdicts
    assert (first.in_pool, first.in_context, first.stated, first.supported) == (
        True,
        True,
        (0,),
        (0,),
    )
    # in the pool but not selected; stated in sentence 1 without support
    assert (second.in_pool, second.in_context, second.stated, second.supported) == (
        True,
        False,
        (1,),
        (),
    )
    assert check.v_strict == 1.0
    assert check.st_recall == 0.5
    assert check.context_recall == 0.5
    assert check.transfer == 1.0
    assert not check.refused and check.refusal_right
    missing = check_answer(QUESTION, POOL, ["p3"], [CitedSentence("Use curl.", ("p3",))])
    assert missing.pool_recall == 1.0 and missing.context_recall == 0.0
    assert missing.v_strict == 0.0 and missing.stated_recall == 0.0


def test_a_passage_of_another_document_does_not_state_a_nugget() -> None:
    # curl's passage holds the term, but curl's manual is not a source of the nugget
    check = check_answer(QUESTION, POOL[2:], ["p3"], [])
    assert check.verdicts[0].in_pool is False


def test_reader_support_narration_misattribution_repeats_and_refusal() -> None:
    sentences = [
        CitedSentence("Passage 2 explains the --post301 option.", ("p3",)),
        CitedSentence("In curl, ServerAliveInterval sets a timeout interval in seconds.", ("p1",)),
        CitedSentence("In curl, ServerAliveInterval sets a timeout interval in seconds.", ("p1",)),
        CitedSentence("The moon is made of cheese and cheddar.", ("p2",)),
        CitedSentence("Nothing here answers that.", ()),
    ]
    check = check_answer(QUESTION, POOL, ["p1", "p2", "p3"], sentences)
    # p3 (curl's) names nothing of ssh_config; a sentence copying a passage's own mention of
    # another document is not misattributed
    copied = check_answer(
        QUESTION,
        [*POOL, _passage("p4", "ssh_config.5.txt", "See curl.1 for curl's options.")],
        ["p4"],
        [CitedSentence("See curl for its options.", ("p4",))],
    )
    assert copied.misattributed == ()
    assert check.narrating == (0,)
    # names curl's manual, cites only ssh_config's passage
    assert check.misattributed == (1, 2)
    assert check.repeated == (2,)
    assert check.reader_ok == (False, True, True, False, None)
    assert check.cited == 4 and check.reader_supported == 2
    refusal = check_answer(
        NuggetQuestion("m-9", "manuals", "unanswerable", "?", why="nothing"),
        POOL,
        [],
        [CitedSentence("The documents do not say.", ())],
    )
    assert refusal.refused and refusal.refusal_right


def test_narration_catches_talk_about_passages_not_subjects() -> None:
    assert narrates("The passage from ssh_config describes the option.")
    assert narrates("According to the documentation text, ...") is False
    assert narrates("According to the document, tar can exclude files.")
    assert not narrates("Set ServerAliveInterval in ~/.ssh/config.")
    assert not narrates("Open the file in a text editor.")


def test_check_sources_names_a_missing_quote_and_a_term_far_from_it() -> None:
    text = "ServerAliveInterval Sets a timeout interval in seconds." + " filler" * 200
    assert check_sources(KEEPALIVE, {"ssh_config.5.txt": text}) == []
    far = Nugget("x", "t", (("ClientAliveInterval",),), (Source("ssh_config.5.txt", "filler"),))
    problems = check_sources(far, {"ssh_config.5.txt": text + " ClientAliveInterval"})
    assert len(problems) == 1 and "ClientAliveInterval" in problems[0]
    gone = Nugget("y", "t", (("x",),), (Source("ssh_config.5.txt", "not in the text"),))
    assert "does not hold the quote" in check_sources(gone, {"ssh_config.5.txt": text})[0]
    assert "no document" in check_sources(gone, {})[0]


def test_a_bad_nugget_file_names_the_line_and_field(tmp_path: Path) -> None:
    good = {
        "id": "c-01",
        "corpus": "c",
        "kind": "single",
        "question": "Q?",
        "nuggets": [
            {"id": "c-01-a", "vital": True, "text": "t", "terms": [["x"]],
             "sources": [{"doc": "d.txt", "quote": "x"}]}
        ],
    }  # fmt: skip
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(good) + "\n", encoding="utf-8")
    (question,) = read_nugget_questions(path)
    assert question.nuggets[0].docs == frozenset({"d.txt"})
    bad = dict(good, kind="unanswerable")
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_nugget_questions(path)
    assert "line 2" in str(caught.value) and "nuggets" in str(caught.value)
    empty_terms = dict(good, nuggets=[dict(good["nuggets"][0], terms=[[]])])  # type: ignore[arg-type]
    path.write_text(json.dumps(empty_terms) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="terms"):
        read_nugget_questions(path)


def test_the_answer_benchmarks_nuggets_hold_in_their_documents() -> None:
    """Every quote of the bundled answer benchmark is in its document, every term near it."""
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench_answer_nuggets.py"), "--validate"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    counts = [int(n) for n in re.findall(r"documents, (\d+) questions", done.stdout)]
    assert len(counts) == 8 and all(n >= 10 for n in counts), done.stdout  # eight corpora


def test_the_benchmark_counts_vital_nuggets_a_reader_sees_first() -> None:
    # the answer benchmark's v_strict_lead: a vital nugget stated with support within the first
    # five sentences counts; the same nugget first supported in sentence six does not
    import importlib.util
    import sys

    path = Path(__file__).parent.parent / "benchmarks" / "bench_answer_nuggets.py"
    spec = importlib.util.spec_from_file_location("bench_answer_nuggets_lead", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    filler = [CitedSentence(f"Sentence {i} says nothing of keepalives.", ("p3",)) for i in range(5)]
    stating = CitedSentence("Set ServerAliveInterval to a number of seconds.", ("p1",))
    early = check_answer(QUESTION, POOL, ["p1", "p3"], [stating, *filler])
    late = check_answer(QUESTION, POOL, ["p1", "p3"], [*filler, stating])
    assert early.v_strict == late.v_strict == 1.0
    assert bench._lead([early]) == 1.0
    assert bench._lead([late]) == 0.0
    figures = bench.summary([(early, {}), (late, {})], answered=True)
    assert figures["v_strict_lead"] == 0.5 and figures["median_sentences"] == 6
