"""Adapter for ``fastokens`` (a tokenizer.json engine with tiktoken loading) and its forks.

Specs:
  fastokens:cl100k_base | o200k_base | p50k_base   ``Tokenizer.from_tiktoken`` on our ranks file
  fastokens:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  fastokens:org/model                               the hub (needs a network)

``allow_special=False`` uses ``split_special_tokens`` (special added tokens
become ordinary text; non-special added tokens still match, as in HF).

Entry points: ``batch`` (the default: ``encode_batch_flat``; without ``?entry=`` each
one-segment sample is its own call and a sample of several segments goes to
``encode_segments``, as always), ``single`` (``Tokenizer.encode``) and ``segments``
(``Tokenizer.encode_segments``, native typed segments).

Forks install the same ``fastokens`` module with other calls (``fastokens-b10`` 0.2: no
``encode_batch_flat`` and no ``added_tokens``; ``toktier-fastokens`` 0.3.1: no
``split_special_tokens`` anywhere, ``encode_ordinary`` instead). The adapter reads what the
installed build offers (``FastokensCalls``) and uses it: the flat batch call when it can turn
special tokens off, else ``encode_batch(split_special_tokens=)``, else one text at a time
through ``encode(split_special_tokens=)``, ``encode_ordinary`` or ``encode_segments``; the
added tokens from ``added_tokens()`` or, without it, from the vocabulary file. A build with no
way to encode plain text is refused in one line naming the distribution and version found.
Which calls it fell back to is in the run notes. Run two builds side by side with ``?pip=``
(docs/plugins.md).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from verify.engines.base import Capabilities, as_token_array
from verify.engines.common import TOKENIZER_JSON_KINDS, added_token_bytes, split_flat_buffers, tokenizer_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "deepseek-v3")  # p50k_base: its ranks are not dense
SUPPORTED_BUILDS = "fastokens 0.3 (pinned 0.3.5), fastokens-b10 0.2, toktier-fastokens 0.3.1"


def _takes(call, keyword: str) -> bool:
    try:
        return keyword in inspect.signature(call).parameters
    except (TypeError, ValueError):  # no signature: the pinned build's calls take it
        return True


@dataclass(frozen=True)
class FastokensCalls:
    """What the installed build's ``Tokenizer`` offers."""

    flat: bool
    flat_split: bool
    batch_split: bool
    single_split: bool
    ordinary: bool
    segments: bool
    added_tokens: bool

    @classmethod
    def of(cls, tokenizer_class) -> "FastokensCalls":
        def has(name):
            return callable(getattr(tokenizer_class, name, None))

        return cls(flat=has("encode_batch_flat"),
                   flat_split=has("encode_batch_flat") and _takes(tokenizer_class.encode_batch_flat,
                                                                  "split_special_tokens"),
                   batch_split=has("encode_batch") and _takes(tokenizer_class.encode_batch, "split_special_tokens"),
                   single_split=has("encode") and _takes(tokenizer_class.encode, "split_special_tokens"),
                   ordinary=has("encode_ordinary"), segments=has("encode_segments"),
                   added_tokens=has("added_tokens"))

    def plain_text(self) -> bool:
        return self.flat_split or self.batch_split or self.single_split or self.ordinary or self.segments

    def fallbacks(self) -> list[str]:
        notes = []
        if not self.flat_split:
            notes.append("plain text: " + ("encode_batch(split_special_tokens=True)" if self.batch_split else
                                           "one text at a time (" + ("encode(split_special_tokens=True)"
                                                                     if self.single_split else "encode_ordinary"
                                                                     if self.ordinary else "encode_segments") + ")")
                         + (" -- this build's encode_batch_flat cannot turn special tokens off" if self.flat else
                            " -- this build has no encode_batch_flat"))
        if not self.flat:
            notes.append("special text: encode_batch (this build has no encode_batch_flat)")
        if not self.added_tokens:
            notes.append("added tokens read from the vocabulary file (this build has no added_tokens())")
        return notes


class FastokensEngine(VocabAdapter):
    adapter_name = "fastokens"
    package = "fastokens"
    supported_builds = SUPPORTED_BUILDS
    capabilities = Capabilities(special_tokens=True, segments=True, decode=True,
                                entry_points=("batch", "single", "segments"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("encoding",))

    def load(self, vocab):
        from fastokens import Tokenizer

        self.calls = FastokensCalls.of(Tokenizer)
        if not self.calls.plain_text():
            raise ConfigError(self.unsupported("has no call that encodes text without matching special tokens "
                                               "(encode_batch_flat/encode_batch/encode(split_special_tokens=), "
                                               "encode_ordinary, encode_segments)"))
        if vocab is None:
            self.tokenizer = Tokenizer.from_model(self.target)  # the hub; needs a network
        elif vocab.kind == "tiktoken":
            _, family = self.tiktoken_family(vocab)
            self.tokenizer = Tokenizer.from_tiktoken(
                str(vocab.path), pattern=family["pat_str"], special_tokens=family["special_tokens"]
            )
        else:
            self.tokenizer = Tokenizer.from_file(str(vocab.path))
        if self.calls.added_tokens:
            self._added = added_token_bytes(self.tokenizer.added_tokens())
        else:
            self._added = {} if vocab is None else _file_added_tokens(self.target, self.options)

    def unsupported(self, what: str) -> str:
        found = self.provenance()
        build = f"{found.distribution or 'fastokens'} {found.version or '(version unknown)'}"
        return f"{self.spec}: the installed {build} {what}; the fastokens adapter supports {SUPPORTED_BUILDS}"

    def encode_many(self, texts, allow_special):
        texts = list(texts)
        c = self.calls
        if allow_special and c.flat:
            ids, offsets = self.tokenizer.encode_batch_flat(texts, add_special_tokens=False,
                                                            **({"split_special_tokens": False} if c.flat_split else {}))
            return split_flat_buffers(ids, offsets, len(texts))
        if not allow_special and c.flat_split:
            ids, offsets = self.tokenizer.encode_batch_flat(texts, add_special_tokens=False, split_special_tokens=True)
            return split_flat_buffers(ids, offsets, len(texts))
        if allow_special or c.batch_split:
            split = {"split_special_tokens": not allow_special} if c.batch_split else {}
            return [as_token_array(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False,
                                                                                **split)]
        return [self.encode_one(t, allow_special) for t in texts]

    def encode_one(self, text, allow_special):
        c = self.calls
        if c.single_split:
            return as_token_array(self.tokenizer.encode(text, add_special_tokens=False,
                                                        split_special_tokens=not allow_special).ids)
        if allow_special:
            return as_token_array(self.tokenizer.encode(text, add_special_tokens=False).ids)
        if c.ordinary:
            return as_token_array(self.tokenizer.encode_ordinary(text).ids)
        return as_token_array(self.tokenizer.encode_segments([(text, False)]).ids)

    def encode_segments(self, segments):
        if not self.calls.segments:
            raise ConfigError(self.unsupported("has no encode_segments"))
        return as_token_array(self.tokenizer.encode_segments([(s.text, bool(s.allow_special)) for s in segments]).ids)

    def token_bytes(self, ids):
        return tokenizer_token_bytes(self.tokenizer, ids, added=self._added)

    def run_notes(self):
        fallbacks = self.calls.fallbacks()
        return {"fastokens": {"fallbacks": fallbacks}} if fallbacks else {}


def _file_added_tokens(target: str, options) -> dict[int, bytes]:
    """The added (special) tokens of the vocabulary, from its file, for a build without ``added_tokens()``."""
    from verify.vocab.inspect import vocabulary_view

    return {i: text.encode() for text, i in vocabulary_view(target, options).special.items()}
