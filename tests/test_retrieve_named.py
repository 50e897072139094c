"""What a question names and the retrieved pool does not write is looked up in the corpus, so
the name filter refuses only what no document writes (the Node.js reference's ENOENT)."""

from __future__ import annotations

from covrag.pipeline import retrieve_pool
from covrag.plan import C2Query
from covrag.retrieve import BM25Retriever
from covrag.retrieve.named import with_named
from covrag.selectors.floor import absent_names
from covrag.text import subject_names
from covrag.types import Passage

# as seven pages of the Node.js API reference state it, cut into passages
SPAWN = Passage(
    "child_process#12",
    "The child_process.spawn() method spawns a new process using the given command, with "
    "command-line arguments in args.",
)
ERROR = Passage(
    "child_process#30",
    "Event: 'error'. The 'error' event is emitted whenever the process could not be spawned. "
    "Any ENOENT error is reported when the command does not exist.",
)
FS = Passage("fs#400", "ENOENT (No such file or directory): commonly raised by fs operations.")
OTHER = Passage("path#3", "The path.join() method joins all given path segments together.")
QUESTION = "Why does spawn() of a missing tool crash my process with spawn ENOENT?"


def test_a_name_the_pool_does_not_write_brings_the_passages_that_do() -> None:
    added = with_named([SPAWN], [SPAWN, OTHER, FS, ERROR], QUESTION)[1:]
    # both passages write ENOENT; the one sharing more of the question's words comes first
    assert [p.id for p in added] == ["child_process#30", "fs#400"]
    assert [p.id for p in with_named([SPAWN], [SPAWN, OTHER, FS, ERROR], QUESTION, most=1)] == [
        "child_process#12",
        "child_process#30",
    ]
    # nothing to add: the pool writes it, or no document does (the filter refuses then)
    assert with_named([ERROR], [SPAWN, FS, ERROR], QUESTION) == (ERROR,)
    toml = "How do I read TOML with the standard library?"
    assert with_named([SPAWN], [SPAWN, OTHER, FS, ERROR], toml) == (SPAWN,)


def test_ask_pool_with_names_leaves_the_filter_nothing_absent() -> None:
    index = BM25Retriever().index([SPAWN, ERROR, FS, OTHER])
    query = C2Query.explicit("Why does spawn() of a missing tool crash with spawn ENOENT")
    names = subject_names(query.base)
    _, plain = retrieve_pool(query, [], index, pool=1)
    assert [p.id for p in plain.passages] == ["child_process#12"]
    assert absent_names(names, plain.passages) == ("ENOENT",)  # refused: "none writes ENOENT"
    _, topic = retrieve_pool(query, [], index, pool=1, named=True)
    assert [p.id for p in topic.passages][0] == "child_process#12"
    assert "child_process#30" in [p.id for p in topic.passages]
    assert absent_names(names, topic.passages) == ()
