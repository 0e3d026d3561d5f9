"""Answer providers behind one interface: `Provider.stream(prompt)` yields text pieces.

- `Extractive` (default, no LLM): the most relevant sentences of the top sources, in source
  order, with citation markers.
- `OpenAICompatible`: streaming chat completions over httpx (OpenAI, vLLM, llama.cpp, Ollama).
- `WithFallback`: a provider that falls back to another on timeout, 429, 5xx or a broken stream,
  so the visitor's stream never carries an error for a provider failure.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator

import httpx

from app.prompt import Prompt, Source
from ingest.chunk import split_sentences
from store.search import fts_terms

log = logging.getLogger(__name__)


class ProviderError(Exception):
    """A provider could not produce (the rest of) an answer."""


class Provider(abc.ABC):
    name: str = "provider"

    @abc.abstractmethod
    def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        """Yield the answer text piece by piece, as soon as each piece exists."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


_FAQ = re.compile(r"^\s*Q:\s*(?P<q>.+?)\s+A:\s*(?P<a>.+)$", re.S)
_PIECE = re.compile(r"\S+\s*")


def _stem(word: str) -> str:
    """A light, language-blind stem: plural endings off, then the first five letters."""
    word = word.lower().removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


def _words(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"\w+", text)}


def _candidates(source: Source) -> list[str]:
    """The sentences of a source an answer may quote. A fact is quoted whole and an FAQ pair by
    its answer; a question is never an answer, so sentences ending in '?' are left out."""
    sentences: list[str] = []
    for number, block in enumerate(source.text.split("\n\n")):
        match = _FAQ.match(block)
        if match:
            sentences.append(match.group("a").strip())
        elif number == 0 and source.kind in ("fact", "form", "action"):
            sentences.append(block.strip())
        else:
            sentences.extend(s for s in split_sentences(block) if not s.rstrip().endswith(("?", "？")))
    return [s for s in sentences if len(s) > 2]


# Questions that ask for a number (price, time, date, size) prefer sentences that carry one.
_WANTS_NUMBER = re.compile(
    r"\b(how much|how many|how long|price|cost|costs|fee|when|what time|hours?|open|close|"
    r"cu[aá]nto|cu[aá]ndo|precio|horario|abr[ei]|wie viel|wann|preis|kosten|uhr)\b", re.I)
_HAS_NUMBER = re.compile(r"[\d$€£]")


def select_sentences(question: str, sources: list[Source], *, max_sentences: int = 4,
                     max_chars: int = 700) -> list[tuple[int, str]]:
    """Pick (source number, sentence) pairs that answer best, in the order they should be read."""
    terms = {_stem(t) for t in fts_terms(question)}
    wants_number = bool(_WANTS_NUMBER.search(question))
    scored: list[tuple[float, int, int, str]] = []  # score, source index, position, sentence
    for index, source in enumerate(sources[:4]):
        about = _words(source.context)
        for position, sentence in enumerate(_candidates(source)):
            words = _words(sentence)
            # Words of the sentence count fully, words only in its headings half.
            overlap = (len(terms & words) + 0.5 * len((terms & about) - words)) / max(1, len(terms))
            score = overlap + 0.6 / (index + 1) + (0.15 if position == 0 else 0.0)
            if source.kind in ("faq", "fact"):
                score += 0.2
            if wants_number and _HAS_NUMBER.search(sentence):
                score += 0.25
            scored.append((score, index, position, sentence))
    if not scored:
        return []
    scored.sort(key=lambda item: -item[0])
    best = scored[0][0]
    chosen, used = [], 0
    for score, index, position, sentence in scored:
        if len(chosen) >= max_sentences or (chosen and score < 0.6 * best):
            break
        if chosen and terms and not terms & (_words(sentence) | _words(sources[index].context)):
            continue  # beyond the best sentence, only sentences about a word of the question
        if used + len(sentence) > max_chars and chosen:
            continue
        folded = sentence.casefold()
        if any(folded in other.casefold() or other.casefold() in folded for _, _, other in chosen):
            continue  # the same words again (an FAQ answer is also on its page as prose)
        chosen.append((index, position, sentence))
        used += len(sentence)
    chosen.sort(key=lambda item: (item[0], item[1]))
    return [(sources[index].n, sentence) for index, _, sentence in chosen]


class Extractive(Provider):
    """Answers by quoting the site: no model, no network, a few milliseconds."""

    name = "extractive"

    async def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        picked = select_sentences(prompt.question, prompt.sources)
        previous = None
        for number, sentence in picked:
            if previous is not None:
                yield " " if previous == number else "\n\n"
            for piece in _PIECE.findall(sentence):
                yield piece
                await asyncio.sleep(0)  # hand each piece to the transport as it is made
            yield f" [{number}]"
            previous = number


class OpenAICompatible(Provider):
    """Streaming chat completions (`POST {base_url}/chat/completions`, `stream: true`)."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "", *, timeout: float = 20.0,
                 max_tokens: int = 400, temperature: float = 0.2) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout, connect=min(5.0, timeout))
        )

    async def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        body = {"model": self.model, "messages": prompt.messages, "stream": True,
                "max_tokens": self.max_tokens, "temperature": self.temperature}
        try:
            async with self.client.stream("POST", self.url, json=body) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise ProviderError(f"LLM endpoint answered HTTP {response.status_code}")
                finished = False
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        finished = True
                        break
                    try:
                        payload = json.loads(data)
                    except json.JSONDecodeError as exc:
                        raise ProviderError("LLM stream sent malformed JSON") from exc
                    if "error" in payload:
                        raise ProviderError(f"LLM stream error: {str(payload['error'])[:200]}")
                    for choice in payload.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            yield text
                if not finished:
                    raise ProviderError("LLM stream ended without [DONE]")
        except httpx.HTTPError as exc:
            raise ProviderError(f"LLM endpoint failed: {type(exc).__name__}") from exc

    async def aclose(self) -> None:
        await self.client.aclose()


class WithFallback(Provider):
    """Try `primary`; on any failure stream `fallback` instead (or after what was already sent)."""

    def __init__(self, primary: Provider, fallback: Provider) -> None:
        self.primary = primary
        self.fallback = fallback
        self.name = primary.name
        self.failures = 0

    async def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        sent = False
        try:
            async for piece in self.primary.stream(prompt):
                sent = True
                yield piece
            return
        except ProviderError as exc:
            self.failures += 1
            log.warning("provider %s failed (%s); falling back to %s", self.primary.name, exc, self.fallback.name)
        if sent:
            yield "\n\n"
        async for piece in self.fallback.stream(prompt):
            yield piece

    async def aclose(self) -> None:
        await self.primary.aclose()
        await self.fallback.aclose()


def make_provider(base_url: str, model: str, api_key: str, timeout: float) -> Provider:
    extractive = Extractive()
    if not base_url:
        return extractive
    return WithFallback(OpenAICompatible(base_url, model or "default", api_key, timeout=timeout), extractive)
