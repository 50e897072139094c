from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.cli.common import EXCLUDE_SEED
from covrag.data import load_dataset, read_run
from covrag.data.exclusion import chosen_for, exclude_aspects
from covrag.errors import ConfigError
from covrag.evaluation import Judgments
from covrag.plan.sources import AspectSource
from covrag.types import Aspect, Passage, Topic


def topic(query_id: str = "q1") -> Topic:
    passages = tuple(Passage(f"p{i}", f"text {i}") for i in range(1, 5))
    aspects = (
        Aspect("a1", "air"),
        Aspect("a2", "shops"),
        Aspect("a3", "health"),
        Aspect("a4", "x"),
    )
    labels = {
        "p1": frozenset({"a1"}),
        "p2": frozenset({"a2"}),
        "p3": frozenset({"a3"}),
        "p4": frozenset(),
    }
    return Topic(query_id, "Should cities ban cars?", passages, aspects, labels)


def excluded(t: Topic) -> set[str]:
    return {a.id for a in t.aspects if a.polarity == "exclude"}


def test_random_exclusion_is_seeded_by_topic_and_leaves_a_wanted_aspect() -> None:
    first = exclude_aspects([topic("q1"), topic("q2")], ["random:1"], seed=3)
    again = exclude_aspects([topic("q1"), topic("q2")], ["random:1"], seed=3)
    assert [excluded(t) for t in first] == [excluded(t) for t in again]
    assert all(len(excluded(t)) == 1 and excluded(t) <= {"a1", "a2", "a3"} for t in first)
    # a4 is supported by no passage, so it is never drawn; one supported aspect stays wanted
    assert chosen_for(topic(), 10, 0) < {"a1", "a2", "a3"} and len(chosen_for(topic(), 10, 0)) == 2
    seeds = {frozenset(chosen_for(topic(), 1, s)) for s in range(20)}
    assert len(seeds) > 1  # the seed matters


def test_explicit_ids_and_bad_specs() -> None:
    (t,) = exclude_aspects([topic()], ["a2"])
    assert excluded(t) == {"a2"} and t.labels == topic().labels
    with pytest.raises(ConfigError, match=r"no topic has the aspects \['zz'\]"):
        exclude_aspects([topic()], ["a2", "zz"])
    with pytest.raises(ConfigError, match="random:N"):
        exclude_aspects([topic()], ["random:0"])
    assert exclude_aspects([topic()], []) == [topic()]


def test_estimated_aspects_keep_what_the_request_leaves_out() -> None:
    class Two(AspectSource):
        name = "two"

        def aspects(self, topic: Topic) -> tuple[Aspect, ...]:
            return (Aspect("a2", "Do shops lose money?"), Aspect("s2", "Is the air cleaner?"))

    (t,) = exclude_aspects([topic()], ["a2"])
    estimated = Two().apply(t)
    assert [(a.id, a.text, a.polarity) for a in estimated.aspects] == [
        ("a2", "Do shops lose money?", "neutral"),
        ("s2", "Is the air cleaner?", "neutral"),
        ("exclude:a2", "shops", "exclude"),  # renamed: the source already used the id
    ]


def test_select_and_eval_with_excluded_aspects(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    base = ["--dataset", "argkp2021:dev", "--exclude-aspects", "random:2"]
    runs = {}
    for mode in ("ignore", "forbid"):
        out = tmp_path / f"{mode}.trec"
        selector = f"greedy-coverage(exclude='{mode}')"
        args = ["select", *base, "--selector", selector, "--coverage", "gold", "--out", str(out)]
        assert main(args) == 0
        runs[mode] = read_run(out)
    capsys.readouterr()
    means = {}
    for mode in runs:
        args = ["eval", *base, "--run", str(tmp_path / f"{mode}.trec"), "--json"]
        assert main(args) == 0
        means[mode] = json.loads(capsys.readouterr().out)["means"]
    assert "Excl@10" in means["forbid"]
    assert means["forbid"]["Excl@10"] == 0.0 < means["ignore"]["Excl@10"]
    # with the excluded aspects out of the gains, forbidding them costs no wanted coverage
    assert means["forbid"]["StRecall@10"] >= means["ignore"]["StRecall@10"]
    # the same judgments by hand: every doc the forbid run picked supports no excluded aspect
    topics = exclude_aspects(load_dataset("argkp2021:dev"), ["random:2"], seed=EXCLUDE_SEED)
    judgments = Judgments.from_topics(topics)
    for query_id, docs in runs["forbid"].items():
        assert not set(docs) & judgments[query_id].excluded_docs
        assert len(judgments[query_id].excluded) == 2
