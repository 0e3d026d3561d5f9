"""The answer stack every entry point runs (HTTP app, `frontdesk ask`, MCP, golden evaluation): the
provider the settings name, behind the grounding guard, wrapped with an answer cache and metrics
into one `Answerer`."""

from __future__ import annotations

from types import TracebackType

from app.answer import Answerer
from app.cache import AnswerCache
from app.context import Context
from app.grounding import guarded
from app.metrics import Metrics
from app.providers import Provider, provider_from_settings


class AnswerStack:
    """An `Answerer` and the provider it owns; `aclose()` waits for pending persistence, then
    closes the provider's connections. Usable as `async with answer_stack(ctx) as stack:`."""

    def __init__(self, answerer: Answerer) -> None:
        self.answerer = answerer

    @property
    def provider(self) -> Provider:
        return self.answerer.provider

    @property
    def cache(self) -> AnswerCache:
        return self.answerer.cache

    @property
    def metrics(self) -> Metrics:
        return self.answerer.metrics

    async def aclose(self) -> None:
        try:
            await self.answerer.drain()
        finally:
            await self.provider.aclose()

    async def __aenter__(self) -> AnswerStack:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()


def answer_stack(ctx: Context, *, cache_entries: int = 16, cache_ttl: float = 0.0,
                 metrics: Metrics | None = None, provider: Provider | None = None) -> AnswerStack:
    """The answer pipeline over `ctx`: `provider` (default: the one the settings name, an LLM with
    the extractive fallback or extractive alone; one that generates runs behind the grounding guard),
    a cache of `cache_entries` answers fresh for `cache_ttl` seconds, and `metrics` (default: a
    private set nobody serves)."""
    metrics = metrics or Metrics()
    # A generated answer is shown only if it is grounded in its sources (app/grounding.py).
    provider = guarded(provider or provider_from_settings(ctx.settings), metrics)
    cache: AnswerCache = AnswerCache(cache_entries, cache_ttl)
    return AnswerStack(Answerer(ctx, provider, cache, metrics))
