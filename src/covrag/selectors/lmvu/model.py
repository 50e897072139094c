"""LMVU's scorer: a linear model over the 18 state features, fitted with a pairwise logistic loss.

Within one selection state, a candidate whose true marginal gain (new viewpoints it adds) is
larger must score higher. The loss over all such pairs (a, b), ties dropped, is

    L(w) = sum log(1 + exp(-w . (x_a - x_b))) + (l2 / 2) ||w||^2

on standardised features, minimised with L-BFGS. The estimator follows scikit-learn's contract:
hyperparameters in ``__init__``, ``fit`` returns ``self``, learned state ends in ``_``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import ConfigError, DataError
from covrag.files import atomic_write_text
from covrag.schema._base import read_model
from covrag.schema._json import read_json_file
from covrag.schema.cards import LMVU_FORMAT, LMVUModelFile
from covrag.selectors.lmvu.features import FEATURES
from covrag.types import FloatArray, IntArray

FORMAT = LMVU_FORMAT


class LMVUModel:
    """Pairwise-logistic linear scorer of LMVU states.

    Args:
        l2: L2 regularisation strength on the standardised coefficients.
        features: Names of the features used (a subset of ``FEATURES``); the others get weight 0.
        max_pairs_per_state: Pairs sampled per state (all when fewer), bounding memory.
        random_state: Seed for pair sampling.
    """

    mean_: FloatArray
    scale_: FloatArray
    coef_: FloatArray
    n_pairs_: int
    n_states_: int
    converged_: bool
    card_: dict[str, Any]

    def __init__(
        self,
        l2: float = 1.0,
        features: Sequence[str] = FEATURES,
        max_pairs_per_state: int = 100,
        random_state: int = 0,
    ) -> None:
        self.l2 = l2
        self.features = tuple(features)
        self.max_pairs_per_state = max_pairs_per_state
        self.random_state = random_state

    def _mask(self) -> FloatArray:
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ConfigError(f"unknown LMVU features: {sorted(unknown)}")
        return np.array([f in self.features for f in FEATURES], dtype=np.float64)

    def fit(
        self,
        X: FloatArray,
        y: FloatArray,
        groups: IntArray,
        sample_weight: FloatArray | None = None,
    ) -> LMVUModel:
        """Fit on candidates ``X`` (rows), their true gains ``y`` and their state ids ``groups``.

        ``sample_weight`` (one non-negative weight per row, equal within a state) weighs each
        state's pairs in the loss and the rows in the standardisation, as if the state occurred
        that many times; e.g. to balance datasets of different sizes.
        """
        from scipy.optimize import minimize  # scipy takes ~0.5 s to import: only when fitting
        from scipy.special import expit

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        groups = np.asarray(groups)
        if X.ndim != 2 or X.shape[1] != len(FEATURES) or len(y) != len(X) != len(groups):
            raise DataError(f"X must be (n, {len(FEATURES)}) with one gain and group per row")
        weight = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
        if weight.shape != (len(X),) or not np.all(np.isfinite(weight)) or np.any(weight < 0):
            raise DataError("sample_weight must hold one finite weight >= 0 per row")
        rng = np.random.default_rng(self.random_state)
        mask = self._mask()
        if not weight.sum() > 0:
            raise DataError("sample_weight is zero everywhere: nothing to fit")
        self.mean_ = np.average(X, axis=0, weights=weight)
        scale = np.sqrt(np.average((X - self.mean_) ** 2, axis=0, weights=weight))
        self.scale_ = np.where(scale > 1e-12, scale, 1.0)
        Z = (X - self.mean_) / self.scale_ * mask
        diffs, pair_weight = self._pairs(Z, y, groups, weight, rng)
        if len(diffs) == 0:
            raise DataError("no state has two candidates with different gains: nothing to fit")

        def loss(w: FloatArray) -> tuple[float, FloatArray]:
            margin = diffs @ w
            value = pair_weight @ np.logaddexp(0.0, -margin) + 0.5 * self.l2 * w @ w
            grad = -(diffs.T @ (pair_weight * expit(-margin))) + self.l2 * w
            return float(value), grad

        result = minimize(loss, np.zeros(len(FEATURES)), jac=True, method="L-BFGS-B")
        self.coef_ = result.x * mask
        self.n_pairs_ = len(diffs)
        self.n_states_ = len(np.unique(groups))
        self.converged_ = bool(result.success)
        self.card_ = {}
        return self

    def _pairs(
        self,
        Z: FloatArray,
        y: FloatArray,
        groups: IntArray,
        weight: FloatArray,
        rng: np.random.Generator,
    ) -> tuple[FloatArray, FloatArray]:
        """Row differences (better minus worse) of sampled within-state pairs, and their weights."""
        order = np.argsort(groups, kind="stable")
        bounds = np.flatnonzero(np.diff(groups[order])) + 1
        chunks, weights = [], []
        for rows in np.split(order, bounds):
            a, b = np.nonzero(y[rows][:, None] > y[rows][None, :])
            if len(a) > self.max_pairs_per_state:
                keep = rng.choice(len(a), self.max_pairs_per_state, replace=False)
                a, b = a[keep], b[keep]
            chunks.append(Z[rows[a]] - Z[rows[b]])
            weights.append(np.full(len(a), weight[rows].mean()))
        if not chunks:
            return np.zeros((0, Z.shape[1])), np.zeros(0)
        return np.concatenate(chunks), np.concatenate(weights)

    def decision_function(self, X: FloatArray) -> FloatArray:
        """Scores of candidate rows (higher = more new viewpoints expected)."""
        result: FloatArray = ((X - self.mean_) / self.scale_) @ self.coef_
        return result

    def get_params(self) -> dict[str, Any]:
        return {
            "l2": self.l2,
            "features": list(self.features),
            "max_pairs_per_state": self.max_pairs_per_state,
            "random_state": self.random_state,
        }

    def to_json(self, **card: Any) -> dict[str, Any]:
        """The model file's record (:class:`~covrag.schema.cards.LMVUModelFile`), validated."""
        record = {
            "format": FORMAT,
            "params": self.get_params(),
            "feature_names": list(FEATURES),
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "coef": self.coef_.tolist(),
            "n_pairs": self.n_pairs_,
            "n_states": self.n_states_,
            "card": card,
        }
        read_model(LMVUModelFile, record)
        return record

    def save(self, path: str | os.PathLike[str], **card: Any) -> None:
        """Write the model as JSON (atomically), with a free-form training card."""
        atomic_write_text(path, json.dumps(self.to_json(**card), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LMVUModel:
        data = read_model(LMVUModelFile, read_json_file(path), path=str(path))
        if data.feature_names != list(FEATURES):
            raise DataError(
                "feature names differ from this covrag version",
                path=str(path),
                field="feature_names",
            )
        # ``shuffle_state`` (a control fitted by benchmarks/bench_lmvu.py now) is in older files
        params = {k: v for k, v in data.params.items() if k != "shuffle_state"}
        try:
            model = cls(**params)
        except TypeError as exc:
            raise DataError(str(exc), path=str(path), field="params") from None
        model.mean_ = np.array(data.mean, dtype=np.float64)
        model.scale_ = np.array(data.scale, dtype=np.float64)
        model.coef_ = np.array(data.coef, dtype=np.float64)
        model.n_pairs_ = data.n_pairs
        model.n_states_ = data.n_states
        model.converged_ = True
        model.card_ = data.card
        return model


def default_model_path() -> Path:
    """The LMVU model fitted on the bundled train splits, shipped with the package."""
    return Path(str(resources.files("covrag") / "models" / "lmvu-default.json"))


@functools.cache
def load_model(path: str | None) -> LMVUModel:
    """Load (once per process) an LMVU model JSON; None for the shipped default."""
    file = default_model_path() if path is None else Path(path)
    if not file.exists():
        raise ConfigError(f"no LMVU model at {file} (fit one with `covrag-lab fit lmvu`)")
    return LMVUModel.load(file)
