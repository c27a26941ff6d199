"""Evaluation protocols (paper Sec. 4.1, Appendix C.1): one module per protocol, plus context files."""

from chorustic.protocols.base import (
    FAMILIES,
    ContextSpec,
    Ineligible,
    parse_protocol_id,
    parse_protocol_label,
    protocol_id,
    protocol_label,
    protocol_sort_key,
)
from chorustic.protocols.contexts import (
    DEFAULT_PROTOCOLS,
    build_contexts,
    context_specs,
    iter_contexts,
    protocol_ids,
    read_contexts,
    write_contexts,
)
from chorustic.protocols.fixed_shot import fixed_shot_context
from chorustic.protocols.full import full_context
from chorustic.protocols.proportional import proportional_context

__all__ = [
    "FAMILIES",
    "ContextSpec",
    "Ineligible",
    "parse_protocol_id",
    "parse_protocol_label",
    "protocol_id",
    "protocol_label",
    "protocol_sort_key",
    "DEFAULT_PROTOCOLS",
    "build_contexts",
    "context_specs",
    "iter_contexts",
    "protocol_ids",
    "read_contexts",
    "write_contexts",
    "fixed_shot_context",
    "full_context",
    "proportional_context",
]
