"""Class-specific discriminative rule operators (paper Sec. 3.3 and Appendix B.8).

``TEMPORAL_RULES`` (univariate episodes, and channel-wise in the ``cross_channel_rules=False`` ablation):
motif shape, polarity, position, order, localized deviations.
``CROSS_CHANNEL_RULES`` (multivariate episodes): informative-channel selection, channel-specific motifs,
relative delay, phase relationships, correlation regimes.
"""

from __future__ import annotations

from chorustic.prior.rules.base import Rule, RuleContext, RuleOutput, sample_region
from chorustic.prior.rules.cross_channel import CROSS_CHANNEL_RULES, correlation_patterns
from chorustic.prior.rules.temporal import DEVIATION_TYPES, TEMPORAL_RULES

__all__ = ["Rule", "RuleContext", "RuleOutput", "TEMPORAL_RULES", "CROSS_CHANNEL_RULES", "ALL_RULES",
           "DEVIATION_TYPES", "correlation_patterns", "get_rule", "sample_region"]

ALL_RULES: dict[str, Rule] = {**TEMPORAL_RULES, **CROSS_CHANNEL_RULES}


def get_rule(name: str) -> Rule:
    try:
        return ALL_RULES[name]
    except KeyError:
        raise ValueError(f"unknown rule family {name!r}; known: {sorted(ALL_RULES)}") from None
