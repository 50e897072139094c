"""The passages defining what the pool's best passages name join the pool (cross-references)."""

from __future__ import annotations

from covrag.pipeline import retrieve_pool
from covrag.plan import C2Query
from covrag.retrieve import BM25Retriever
from covrag.retrieve.definitions import defines, identifiers, with_definitions
from covrag.types import DEFINES, Passage


def entry(pid: str, text: str, source: str) -> Passage:
    return Passage(pid, text, metadata={"source": source})


# ssh_config(5), cut as covrag ingests it: the TCPKeepAlive entry points to ServerAliveInterval,
# which another chunk of the same page defines; curl(1) has an entry of a similar subject
TCP = entry(
    "ssh_config#97",
    "TCPKeepAlive Specifies whether the system should send TCP keepalive messages to the other "
    "side. As such, you probably want the ServerAliveInterval option as well.",
    "ssh_config.5.txt",
)
ALIVE = entry(
    "ssh_config#90",
    "The default value is 3.\n\nServerAliveInterval Sets a timeout interval in seconds after "
    "which if no data has been received from the server, ssh(1) will send a message through "
    "the encrypted channel to request a response from the server.",
    "ssh_config.5.txt",
)
OTHER = entry(
    "curl#137",
    "ServerAliveInterval is not a curl option.\n\n--keepalive-time <seconds> This option sets "
    "the time a connection needs to remain idle before sending keepalive probes.",
    "curl.1.txt",
)
FORWARD = entry(
    "ssh_config#40",
    "ForwardAgent Specifies whether the connection to the authentication agent will be "
    "forwarded to the remote machine.",
    "ssh_config.5.txt",
)


def test_identifiers_are_config_keys_long_options_and_snake_case_names() -> None:
    text = "Use ServerAliveInterval, not TCPKeepAlive; see --keepalive-time, copy_file and Z_OK."
    assert identifiers(text) == [
        "ServerAliveInterval", "TCPKeepAlive", "--keepalive-time", "copy_file", "Z_OK",
    ]  # fmt: skip
    # plain words, short options and capitalised words are not identifiers
    assert identifiers("The Server sends -o options, then Alive.") == []


def test_a_definition_is_a_paragraph_opening_with_the_name() -> None:
    assert defines(ALIVE, "ServerAliveInterval")
    assert not defines(TCP, "ServerAliveInterval")  # named mid-sentence
    assert defines(OTHER, "--keepalive-time")
    assert defines(TCP, "TCPKeepAlive")  # the passage's first words
    assert not defines(ALIVE, "ServerAlive")  # a prefix of the name is not the name
    # an entry listing other spellings first defines each of them
    quiet = entry("grep#21", "Context.\n\n-q, --quiet, --silent Quiet; do not write anything.", "g")
    assert defines(quiet, "--quiet") and defines(quiet, "--silent") and defines(quiet, "-q")
    output = entry("curl#9", "-o, --output <file> Write output to <file>.", "curl.1.txt")
    assert defines(output, "--output")
    assert not defines(entry("x#1", "Use -q, --quiet to hush.", "x"), "--quiet")


def test_the_definition_joins_from_the_same_document_only() -> None:
    corpus = [TCP, OTHER, FORWARD, ALIVE]
    assert with_definitions([TCP], corpus) == (TCP, ALIVE)
    # curl's passage opening with the name is another document's: never taken
    assert with_definitions([TCP], [TCP, OTHER]) == (TCP,)
    # nothing is added when the pool defines it already, or when none may be
    assert with_definitions([TCP, ALIVE], corpus) == (TCP, ALIVE)
    assert with_definitions([TCP], corpus, most=0) == (TCP,)
    # only the passages read point: FORWARD names nothing
    assert with_definitions([FORWARD, TCP], corpus, read=[FORWARD]) == (FORWARD, TCP)


def test_at_most_most_definitions_in_the_order_named() -> None:
    names = [f"OptionNumber{i}" for i in range(6)]
    pointer = entry("doc#0", "See " + ", ".join(names) + ".", "doc")
    entries = [entry(f"doc#{i + 1}", f"{n} Sets option {i}.", "doc") for i, n in enumerate(names)]
    added = with_definitions([pointer], [pointer, *reversed(entries)], most=4)[1:]
    assert [p.id for p in added] == ["doc#1", "doc#2", "doc#3", "doc#4"]


def test_ask_pool_gets_the_definition_its_nearest_passage_points_to() -> None:
    index = BM25Retriever().index([TCP, ALIVE, OTHER, FORWARD])
    query = C2Query.explicit("How do I send TCP keepalive messages over SSH?")
    _, plain = retrieve_pool(query, [], index, pool=1)
    assert [p.id for p in plain.passages] == ["ssh_config#97"]
    _, topic = retrieve_pool(query, [], index, pool=1, definitions=4)
    assert [p.id for p in topic.passages] == ["ssh_config#97", "ssh_config#90"]
    assert topic.passages[1].metadata[DEFINES] == "ServerAliveInterval"
