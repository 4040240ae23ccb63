"""The sampler: the environment's (OTEL_TRACES_SAMPLER, parent-based always-on by default),
except for client spans without a parent.

The worker polls: every idle round of every kind runs its claim query, and the psycopg
instrumentation would make each one a trace of its own (it names its attributes only after
the span started, so a sampler cannot tell a query from another call by them). A call made
outside any request or task (a poll, an upkeep job's query or call) belongs to no
notification's story; dropping those keeps an idle worker silent. A call inside a task's or
a request's span is sampled as its parent is.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import (
    Decision,
    Sampler,
    SamplingResult,
    _get_from_env_or_default,
)
from opentelemetry.trace import Link, SpanKind, get_current_span
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes


class NoOrphanCalls(Sampler):
    def __init__(self, inner: Sampler | None = None) -> None:
        self.inner = inner or _get_from_env_or_default()

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        if kind == SpanKind.CLIENT:
            parent = get_current_span(parent_context).get_span_context()
            if not parent.is_valid:
                return SamplingResult(Decision.DROP)
        return self.inner.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )

    def get_description(self) -> str:
        return f"NoOrphanCalls{{{self.inner.get_description()}}}"
