"""QTree: a hierarchy of sub-queries for a query (QPlanner; 3 levels x 3 children by default).

Level 1 holds broad sub-queries, each deeper level more specific ones; node ids give the path
(``2`` -> ``2.1`` -> ``2.1.3``). The LLM writes the whole tree as nested JSON; with a schema-capable
backend the schema fixes every level's count. Quality checks (QPlanner's): exact counts per level,
parsable output, and no overlapping sub-queries (content-word Jaccard >= ``overlap``), with
bounded retries that show the model what was wrong.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.plan.conditioned import C2Query
from covrag.schema.llm import Reply, reply_model, reply_schema, sized, with_fields
from covrag.text import content_words, words

logger = logging.getLogger(__name__)

SYSTEM = (
    "You plan how to research a request as a tree of sub-queries: broad sub-queries at the top, "
    "more specific ones below each. You reply with JSON only."
)


@dataclass(frozen=True, slots=True)
class QTreeNode:
    """One sub-query. ``id`` is its path (``1.2.3``); its level is the number of parts."""

    id: str
    text: str

    @property
    def level(self) -> int:
        return self.id.count(".") + 1

    @property
    def parent_id(self) -> str | None:
        return self.id.rsplit(".", 1)[0] if "." in self.id else None


@dataclass(frozen=True)
class QTree:
    """A tree of sub-queries, nodes in depth-first order.

    ``notes`` says where the tree is short of the asked shape (a node whose children the LLM
    could not complete without repeating itself).
    """

    query: str
    nodes: tuple[QTreeNode, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        ids = [n.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise ConfigError("QTree node ids must be unique")

    def __iter__(self) -> Iterator[QTreeNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return any(n.id == node_id for n in self.nodes)

    def node(self, node_id: str) -> QTreeNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes)

    def children(self, node_id: str | None) -> tuple[str, ...]:
        """Ids of the children of ``node_id`` (None: the top level)."""
        return tuple(n.id for n in self.nodes if n.parent_id == node_id)

    def siblings(self, node_id: str) -> tuple[str, ...]:
        parent = self.node(node_id).parent_id
        return tuple(i for i in self.children(parent) if i != node_id)

    def adjacent(self, node_id: str) -> tuple[str, ...]:
        """Parent, children and siblings: the nodes "connected or neighbouring" this one."""
        parent = self.node(node_id).parent_id
        around = ([parent] if parent else []) + list(self.children(node_id))
        return tuple(around) + self.siblings(node_id)

    def level_counts(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for node in self.nodes:
            counts[node.level] = counts.get(node.level, 0) + 1
        return counts

    def render(self) -> str:
        """One line per node, indented by level: ``1.2 text``."""
        return "\n".join(f"{'  ' * (n.level - 1)}{n.id} {n.text}" for n in self.nodes)


class TreeReply(Reply):
    """``{"tree": [{"q": ..., "children": [...]}, ...]}``."""

    tree: list[Any]


class SubQueriesReply(Reply):
    """``{"sub_queries": [...]}``."""

    sub_queries: list[str]


@functools.lru_cache(maxsize=64)
def tree_reply(depth: int, branching: int) -> type[TreeReply]:
    """The tree with exactly ``branching`` children per node, ``depth`` levels."""
    level = reply_model(f"Level{depth}", q=str)
    for d in range(depth - 1, 0, -1):
        level = reply_model(f"Level{d}", q=str, children=sized(level, branching, branching))
    return with_fields(TreeReply, tree=sized(level, branching, branching))


def tree_schema(depth: int, branching: int) -> dict[str, Any]:
    """Nested JSON schema with exactly ``branching`` children per node, ``depth`` levels."""
    return reply_schema(tree_reply(depth, branching))


@functools.lru_cache(maxsize=64)
def sub_queries_reply(n: int) -> type[SubQueriesReply]:
    return with_fields(SubQueriesReply, sub_queries=sized(str, n, n))


def _skeleton(depth: int, branching: int, d: int = 1) -> str:
    inner = f', "children": [{_skeleton(depth, branching, d + 1)}, ...]' if d < depth else ""
    return '{"q": "level-' + str(d) + ' sub-query"' + inner + "}"


def flatten(items: Sequence[Any], prefix: str = "") -> list[QTreeNode]:
    """Depth-first nodes of parsed JSON ``[{"q": ..., "children": [...]}, ...]``."""
    nodes: list[QTreeNode] = []
    for i, item in enumerate(items, start=1):
        node_id = f"{prefix}{i}"
        nodes.append(QTreeNode(node_id, " ".join(str(item["q"]).split())))
        nodes.extend(flatten(item.get("children", []), node_id + "."))
    return nodes


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' content words (stopwords left out)."""
    x, y = content_words(a), content_words(b)
    return len(x & y) / len(x | y) if x | y else 1.0


def overlapping(nodes: Sequence[QTreeNode], threshold: float) -> list[tuple[str, str]]:
    """Pairs of node ids whose sub-queries overlap (word Jaccard >= ``threshold``)."""
    pairs = []
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            if word_overlap(a.text, b.text) >= threshold:
                pairs.append((a.id, b.id))
    return pairs


def check_tree(query: str, value: Any, depth: int, branching: int, overlap: float = 0.8) -> QTree:
    """The QTree in ``value``, or a ValueError saying what is wrong with it."""
    nodes = flatten(value["tree"])
    tree = QTree(query, tuple(nodes))
    expected = {d: branching**d for d in range(1, depth + 1)}
    if tree.level_counts() != expected:
        raise ValueError(f"levels have {tree.level_counts()} nodes, expected {expected}")
    empty = [n.id for n in nodes if len(words(n.text)) < 2]
    if empty:
        raise ValueError(f"nodes {empty} are empty or one word; write a real sub-query")
    clashes = overlapping(nodes, overlap)
    if clashes:
        shown = ", ".join(f"{a} and {b}" for a, b in clashes[:4])
        raise ValueError(f"sub-queries overlap ({shown}); every node must ask something different")
    return tree


@dataclass
class QTreeBuilder:
    """Writes the QTree of a (coverage-conditioned) query with an LLM.

    Args:
        llm: The backend.
        depth: Levels (QPlanner: 3).
        branching: Children per node (QPlanner: 3), so 3 + 9 + 27 = 39 nodes by default.
        overlap: Content-word overlap (Jaccard) at or above which two sub-queries count as
            the same.
        retries: Extra attempts when the tree (or one node's children) fails a check.
        strategy: ``whole`` writes the tree in one reply (QPlanner); ``levels`` writes the
            children of one node per call, top down, each checked against every node written
            so far (1 + 3 + 9 = 13 calls by default; small local models write far fewer
            overlapping sub-queries this way). A repeated child is dropped and only the
            missing ones asked for again, at most ``retries`` times.
        short_ok: With ``levels``, a node below the top level whose children the LLM cannot
            complete without repeating itself keeps those it wrote (none makes it a leaf), and
            the tree's ``notes`` say so; False = fail instead (QPlanner's exact-count check).
            The top level must be complete.
    """

    llm: LLM
    depth: int = 3
    branching: int = 3
    overlap: float = 0.8
    retries: int = 2
    strategy: str = "levels"
    short_ok: bool = True

    def __post_init__(self) -> None:
        if self.depth < 1 or self.branching < 1:
            raise ConfigError("depth and branching must be >= 1")
        if self.strategy not in ("whole", "levels"):
            raise ConfigError(f"strategy must be 'whole' or 'levels', got {self.strategy!r}")

    @property
    def size(self) -> int:
        return sum(self.branching**d for d in range(1, self.depth + 1))

    def build(self, query: C2Query | str) -> QTree:
        """The tree for ``query`` (its base query; the tree covers the topic broadly).

        Raises:
            StructuredOutputError: when no attempt passes the checks.
        """
        base = query.base if isinstance(query, C2Query) else query
        if self.strategy == "levels":
            return self._by_levels(base)
        prompt = (
            f"Query: {base}\n\n"
            f"Write a tree of sub-queries for researching this query: {self.branching} broad "
            f"sub-queries at level 1, and under every node exactly {self.branching} more "
            f"specific sub-queries, down to level {self.depth} ({self.size} sub-queries in "
            "all). Each sub-query is a short search question about one subtopic; no two may "
            "ask the same thing.\n"
            f'Reply with JSON: {{"tree": [{_skeleton(self.depth, self.branching)}, ...]}}'
        )
        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            tree_reply(self.depth, self.branching),
            task=f"QTree for {base!r}",
            check=lambda v: check_tree(
                base, v.model_dump(), self.depth, self.branching, self.overlap
            ),
            retries=self.retries,
            params=ChatParams(max_tokens=40 * self.size + 100),
        )
        tree: QTree = result.value
        return tree

    def _by_levels(self, base: str) -> QTree:
        nodes: list[QTreeNode] = []
        notes: list[str] = []
        frontier: list[QTreeNode | None] = [None]
        for _ in range(self.depth):
            next_frontier: list[QTreeNode | None] = []
            for parent in frontier:
                children = self._children(base, parent, nodes, notes)
                nodes.extend(children)
                next_frontier.extend(children)
            frontier = next_frontier
        order = {n.id: tuple(int(p) for p in n.id.split(".")) for n in nodes}
        return QTree(base, tuple(sorted(nodes, key=lambda n: order[n.id])), tuple(notes))

    def _children(
        self, base: str, parent: QTreeNode | None, written: list[QTreeNode], notes: list[str]
    ) -> list[QTreeNode]:
        """The children of ``parent``: sub-queries that overlap nothing written so far.

        A reply's new sub-queries are kept and its repeats dropped; while fewer than
        ``branching`` are kept, the LLM is asked for only the missing ones, shown those kept,
        at most ``retries`` more times. (Rejecting a whole reply for one repeat makes a small
        model write the same repeat again.) If the children are still short and ``short_ok``,
        a node below the top level keeps the ones found (possibly none, making it a leaf), noted
        in ``notes``.
        """
        n = self.branching
        path = f"{parent.id}." if parent is not None else ""
        task = f"QTree children of {parent.id if parent else 'the root'} for {base!r}"
        context = [node.text for node in written] + ([parent.text] if parent else [])
        kept: list[str] = []
        failures: list[tuple[str, str]] = []
        for _ in range(self.retries + 1):
            want = n - len(kept)
            taken = [*context, *kept]
            try:
                result = chat_json(
                    self.llm,
                    [
                        system(SYSTEM),
                        user(self._children_prompt(base, parent, written, kept, want)),
                    ],
                    sub_queries_reply(want),
                    task=task,
                    check=functools.partial(self._new_children, taken=taken),
                    retries=self.retries,
                    params=ChatParams(max_tokens=40 * want + 60),
                )
            except StructuredOutputError as exc:
                failures.extend(exc.attempts)
                break
            new, rejected = result.value
            kept += new[:want]
            if len(kept) == n:
                break
            failures.append((result.results[-1].text, "; ".join(rejected)))
        if len(kept) < n:
            if not (self.short_ok and parent is not None):
                raise StructuredOutputError(task, failures)
            note = f"node {parent.id} has {len(kept)} of {n} children: {failures[-1][1]}"
            logger.warning("QTree for %r: %s", base, note)
            notes.append(note)
        return [QTreeNode(f"{path}{i}", text) for i, text in enumerate(kept, start=1)]

    def _children_prompt(
        self,
        base: str,
        parent: QTreeNode | None,
        written: list[QTreeNode],
        kept: list[str],
        want: int,
    ) -> str:
        # What changes between calls comes last, so a local model reuses the cached prefix.
        prompt = f"Query: {base}\n\n"
        if written:
            taken = "\n".join(f"- {node.text}" for node in written)
            prompt += f"Sub-queries already written (do not repeat any of them):\n{taken}\n\n"
        if parent is None:
            prompt += "Broad sub-queries that together cover this query"
        else:
            prompt += (
                f"More specific sub-queries under this sub-query: {parent.text!r}, each about a "
                "different part of it"
            )
        if kept:
            chosen = "\n".join(f"- {text}" for text in kept)
            prompt += f". Already chosen:\n{chosen}\nWrite {want} more, different from these."
        else:
            prompt += f". Write {want}."
        prompt += " Each is a short search question about one subtopic.\n"
        return prompt + f'Reply with JSON: {{"sub_queries": [{want} strings]}}'

    def _new_children(
        self, value: SubQueriesReply, taken: list[str]
    ) -> tuple[list[str], list[str]]:
        """The reply's usable new sub-queries, and why the others were dropped.

        Raises:
            ValueError: when none is usable (``chat_json`` then shows the model why).
        """
        new: list[str] = []
        rejected: list[str] = []
        for raw in value.sub_queries:
            text = " ".join(raw.split())
            if len(words(text)) < 2:
                rejected.append(f"{text!r} is empty or one word")
                continue
            clash = next((o for o in [*taken, *new] if word_overlap(text, o) >= self.overlap), None)
            if clash is not None:
                rejected.append(f"{text!r} overlaps {clash!r}")
                continue
            new.append(text)
        if not new:
            raise ValueError("; ".join(rejected[:3]) + "; every sub-query must ask something new")
        return new, rejected
