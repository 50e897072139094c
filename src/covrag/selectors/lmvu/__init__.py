"""LMVU (learned marginal viewpoint utility): its 18 features, its linear model, its selector.

Inference and fitting share these modules; ``covrag_lab.train.lmvu`` (which builds training states
from labelled topics) imports them, never the reverse.
"""

from covrag.selectors.lmvu.features import FEATURES, M0_FEATURES, STATE, FeatureState
from covrag.selectors.lmvu.model import LMVUModel, default_model_path, load_model
from covrag.selectors.lmvu.selector import LearnedUtility, LMVUSelector, feature_state

__all__ = [
    "FEATURES",
    "M0_FEATURES",
    "STATE",
    "FeatureState",
    "LMVUModel",
    "LMVUSelector",
    "LearnedUtility",
    "default_model_path",
    "feature_state",
    "load_model",
]
