"""Adapter for ``gigatoken`` (fast byte-level / SentencePiece BPE).

Specs:
  gigatoken:cl100k_base | o200k_base          ``Tokenizer.from_tiktoken`` on our ranks file
  gigatoken:deepseek-v3 | path/tokenizer.json a tokenizer.json
  gigatoken:mistral-spm-v3 | mistral-spm-v1   ``Tokenizer.from_sentencepiece`` on a .model file
  gigatoken:org/model                         the hub (needs a network)

gigatoken always recognizes special tokens while encoding (its own tiktoken
compatibility layer refuses ``encode_ordinary`` on text holding one), so
``capabilities.special_tokens`` is False and ``allow_special`` is not honoured.

Entry points: ``batch`` (the default: ``encode_batch``, its flat-array call -- one uint32
buffer and offsets, as awkward's list-offset layout -- on the calling thread),
``single`` (``Tokenizer.encode``) and ``file`` (``Tokenizer.encode_files``, one
document per file).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.common import TOKENIZER_JSON_KINDS
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError
from verify.vocab.tiktoken_family import family_definition

# p50k_base is refused by the engine ("ranks must be dense"); anthropic's NFKC
# normalizer is unsupported.
OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "deepseek-v3", "mistral-spm-v1", "mistral-spm-v3")

# tiktoken encoding name -> gigatoken pretokenizer scheme
PRETOKENIZERS = {"cl100k_base": "cl100k", "o200k_base": "o200k", "p50k_base": "r50k", "r50k_base": "r50k",
                 "gpt2": "gpt2"}


class GigatokenEngine(VocabAdapter):
    adapter_name = "gigatoken"
    package = "gigatoken"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True,
                                entry_points=("batch", "single", "file"))
    loads = Loads(kinds=(*TOKENIZER_JSON_KINDS, "sentencepiece"), hub=True, options=("encoding", "pretokenizer"))
    flat_batch = True

    def load(self, vocab):
        import gigatoken

        if vocab is None:
            self.tokenizer = gigatoken.Tokenizer(self.target)  # the hub; needs a network
        elif vocab.kind == "tiktoken":
            name = self.tiktoken_encoding(vocab)
            scheme = self.options.get("pretokenizer") or PRETOKENIZERS.get(name)
            if scheme is None:
                raise ConfigError(f"gigatoken has no pretokenizer for encoding '{name}'")
            self.tokenizer = gigatoken.Tokenizer.from_tiktoken(
                str(vocab.path), pretokenizer=scheme, special_tokens=family_definition(name)["special_tokens"]
            )
        elif vocab.kind == "hf-json":
            self.tokenizer = gigatoken.Tokenizer(str(vocab.path))
        else:
            self.tokenizer = gigatoken.Tokenizer.from_sentencepiece(str(vocab.path))
        self._vocab: dict[int, bytes] | None = None

    # allow_special is not honoured (capabilities.special_tokens=False).
    def encode_many(self, texts, allow_special):
        return self.tokenizer.encode_batch_list(list(texts), parallel=False)

    def encode_many_flat(self, texts, allow_special):
        layout = self.tokenizer.encode_batch(list(texts), parallel=False).layout  # a ListOffsetArray
        return layout.content.data, layout.offsets.data

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode(text)

    def encode_files(self, paths, allow_special):
        return self.tokenizer.encode_files(list(paths), parallel=False).tolist()

    def token_bytes(self, ids):
        if self._vocab is None:
            self._vocab = self.tokenizer.vocab
        return [self._vocab.get(int(i), b"") for i in ids]
