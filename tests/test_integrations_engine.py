from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from covrag.errors import ConfigError, MissingExtraError
from covrag.integrations import CoverageChoice, resolve_aspects
from covrag.pipeline import DEFAULT_SELECTOR, LABEL_FREE_SELECTOR
from covrag.report import render_report, run_file_record
from covrag.selectors import parse_selector
from covrag.tokens import WhitespaceTokenCounter
from covrag.types import Aspect
from integration_support import ASPECTS, QUERY, TEXTS, KeywordCoverage


def test_greedy_coverage_picks_one_document_per_aspect_then_follows_relevance() -> None:
    choice = CoverageChoice(coverage=KeywordCoverage(), aspects=ASPECTS, k=4)
    result = choice.choose(TEXTS, QUERY)
    assert [p.index for p in result.picks] == [0, 3, 4, 1]
    assert [[a.text for a in p.newly_covered] for p in result.picks] == [
        ["pollution"],
        ["business"],
        ["access"],
        [],
    ]
    assert [p.rank for p in result.picks] == [1, 2, 3, 4]
    assert result.uncovered == ()


def test_topk_repeats_the_dominant_aspect_that_greedy_avoids() -> None:
    result = CoverageChoice(selector="topk", coverage=KeywordCoverage(), aspects=ASPECTS, k=3)
    picked = result.choose(TEXTS, QUERY)
    assert [p.index for p in picked.picks] == [0, 1, 2]
    assert picked.coverage is None  # topk reads no coverage: nothing is estimated


def test_scores_drive_relevance_when_every_document_has_one() -> None:
    choice = CoverageChoice(selector="topk", k=2)
    scores = [0.1, 0.2, 0.3, 0.9, 0.5, 0.4]
    assert [p.index for p in choice.choose(TEXTS, QUERY, scores=scores).picks] == [3, 4]
    partial = [None, 0.2, 0.3, 0.9, 0.5, 0.4]  # one missing: fall back to retrieval order
    assert [p.index for p in choice.choose(TEXTS, QUERY, scores=partial).picks] == [0, 1]


def test_token_budget_skips_what_does_not_fit_and_never_truncates() -> None:
    counter = WhitespaceTokenCounter()
    costs = counter.count(TEXTS)
    choice = CoverageChoice(
        coverage=KeywordCoverage(), aspects=ASPECTS, k=None, max_tokens=25, counter=counter
    )
    result = choice.choose(TEXTS, QUERY)
    assert sum(p.tokens for p in result.picks) <= 25
    assert [p.tokens for p in result.picks] == [costs[p.index] for p in result.picks]
    assert result.topic.passages[0].text == TEXTS[0]


def test_unwanted_uncovered_aspects_are_reported() -> None:
    aspects = [*ASPECTS, "ferries", Aspect(id="x", text="tax", polarity="exclude")]
    result = CoverageChoice(coverage=KeywordCoverage(), aspects=aspects, k=3).choose(TEXTS, QUERY)
    assert [a.text for a in result.uncovered] == ["ferries"]
    meta = result.metadata(result.picks[0])
    assert meta["uncovered"] == ["ferries"]
    assert meta["selector"] == "expected-coverage"
    assert meta["coverage"] == "keyword"


def test_query_aspects_and_aspects_planned_per_query() -> None:
    assert [a.text for a in resolve_aspects(None, QUERY)] == [QUERY]
    assert [a.text for a in resolve_aspects("query", QUERY)] == [QUERY]
    assert [a.text for a in resolve_aspects("pool", QUERY)] == [QUERY]  # no documents
    planned = resolve_aspects(lambda q: [f"{q} cost", f"{q} risk"], "ban")
    assert [(a.id, a.text) for a in planned] == [("a1", "ban cost"), ("a2", "ban risk")]
    choice = CoverageChoice(coverage=KeywordCoverage(), aspects=ASPECTS, k=2)
    override = choice.choose(TEXTS, QUERY, aspects=["access"])
    assert [p.index for p in override.picks][0] == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"selector": "nope"}, "nope"),
        ({"k": 0}, "max_passages"),
        ({"relevance": "bm25"}, "relevance"),
    ],
)
def test_bad_configuration_fails_at_construction(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CoverageChoice(**kwargs)  # type: ignore[arg-type]


def test_bad_aspects_fail_with_a_message() -> None:
    with pytest.raises(ConfigError, match="empty"):
        resolve_aspects([], QUERY)
    with pytest.raises(ConfigError, match="no query"):
        resolve_aspects(None, " ")
    with pytest.raises(ConfigError, match="unique"):
        resolve_aspects([Aspect("a", "x"), Aspect("a", "y")], QUERY)
    # a bare string is not a list of one-letter sub-questions
    with pytest.raises(ConfigError, match="got the string 'Does it cut pollution\\?'"):
        resolve_aspects("Does it cut pollution?", QUERY)


@pytest.mark.model
def test_shipped_cross_encoder_is_the_default_and_covers_distinct_aspects() -> None:
    aspects = [
        "Does it reduce pollution?",
        "Can emergency vehicles and disabled people get access?",
    ]
    result = CoverageChoice(aspects=aspects, k=2).choose(TEXTS, QUERY)
    assert result.coverage is not None and result.coverage.source.startswith("cross-encoder")
    assert result.selection.selector.startswith("expected-coverage")
    # One pollution passage (0-2) and the access passage (4), the most probable match first.
    assert sorted(p.index for p in result.picks)[1] == 4
    assert sorted(p.index for p in result.picks)[0] in (0, 1, 2)
    assert sorted(a.text for p in result.picks for a in p.newly_covered) == sorted(aspects)


def test_a_choice_becomes_a_report() -> None:
    result = CoverageChoice(coverage=KeywordCoverage(), aspects=ASPECTS, k=3).choose(TEXTS, QUERY)
    page = render_report(run_file_record([result.run_record()]))
    assert page.count('<rect class="cell') == len(TEXTS) * len(ASPECTS)
    assert page.count('<rect class="sel"') == 3


@pytest.mark.model
def test_without_aspects_or_selector_the_label_free_default_spreads_the_picks() -> None:
    default = CoverageChoice(k=3).choose(TEXTS, QUERY)
    # facility location over the shipped same-point similarity (LABEL_FREE_SELECTOR): no
    # estimator runs, and at most one of the three pollution passages is chosen
    assert default.selection.selector == repr(parse_selector(LABEL_FREE_SELECTOR))
    assert default.coverage is None and [a.id for a in default.aspects] == ["query"]
    assert len({p.index for p in default.picks} & {0, 1, 2}) == 1
    # given sub-questions, the default selector is expected coverage over them
    given = CoverageChoice(coverage=KeywordCoverage(), aspects=ASPECTS, k=3).choose(TEXTS, QUERY)
    assert given.selection.selector == repr(parse_selector(DEFAULT_SELECTOR))


@pytest.mark.model
def test_a_coverage_selector_without_aspects_covers_the_pools_representatives() -> None:
    default = CoverageChoice(selector=DEFAULT_SELECTOR, k=3)
    assert default.aspects == "pool"
    result = default.choose(TEXTS, QUERY)
    assert result.aspects and all(a.id.startswith("pool") for a in result.aspects)
    assert {a.text for a in result.aspects} <= set(TEXTS)
    # the choice spreads over the viewpoints: at most one of the three pollution passages
    assert len({p.index for p in result.picks} & {0, 1, 2}) == 1
    query_only = CoverageChoice(selector=DEFAULT_SELECTOR, k=3, aspects="query")
    picked = query_only.choose(TEXTS, QUERY)
    assert [a.id for a in picked.aspects] == ["query"]
    assert len({p.index for p in picked.picks} & {0, 1, 2}) >= 2


@pytest.mark.model
def test_mmr_diversifies_without_aspects() -> None:
    # No sub-questions: the query is the only aspect, and MMR (MiniLM embeddings) diversifies.
    topk = CoverageChoice(selector="topk", k=3).choose(TEXTS, QUERY)
    mmr = CoverageChoice(selector="mmr(lam=0.3)", k=3).choose(TEXTS, QUERY)
    assert [p.index for p in topk.picks] == [0, 1, 2]  # three pollution passages
    assert [p.index for p in mmr.picks][0] == 0
    assert len({p.index for p in mmr.picks} & {1, 2}) <= 1  # at most one more about pollution
    assert [a.text for a in mmr.aspects] == [QUERY]


def test_importing_the_integrations_package_imports_no_framework() -> None:
    code = (
        "import sys, covrag.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'llama_index', 'haystack')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "package"),
    [
        ("covrag.integrations.langchain", "langchain_core.documents", "langchain-core"),
        ("covrag.integrations.llama_index", "llama_index.core.schema", "llama-index-core"),
        ("covrag.integrations.haystack", "haystack", "haystack-ai"),
    ],
)
def test_a_missing_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, blocked: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # as if the package were not installed
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingExtraError, match=r"covrag\[integrations\]") as caught:
        importlib.import_module(module)
    assert caught.value.package == package
