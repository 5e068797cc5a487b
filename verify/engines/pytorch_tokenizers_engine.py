"""Adapter for ``pytorch-tokenizers`` (Meta's C++ tokenizers behind ExecuTorch).

Specs:
  pytorch-tokenizers:cl100k_base | o200k_base | p50k_base
      ``backend=hf`` (default): the C++ ``HFTokenizer`` on our ranks file converted
      to an equivalent tokenizer.json (as ``hf:`` does).
      ``backend=tiktoken``: the C++ ``Tiktoken`` on our ranks file, with tiktoken's
      split pattern and special tokens.
  pytorch-tokenizers:path/tokenizer.json   the C++ ``HFTokenizer`` on a local file

(The package's Python ``TiktokenTokenizer`` is a wrapper around OpenAI's tiktoken,
so it is not the engine under test.) deepseek-v3's tokenizer.json is refused by
1.5.0 ("Missing normalizers for Normalizer of type Sequence").

Both C++ backends always match their special tokens while encoding, so
``capabilities.special_tokens`` is False and ``allow_special`` is not honoured.
The C++ ``Tiktoken`` numbers special tokens densely after the ranks, so for
tiktoken's gaps (cl100k: 100256, 100261-100275; o200k: 199998, 200000-200017)
the adapter registers placeholder specials ``<|verify_unused_N|>``; text holding
such a literal would encode to that id. Neither backend has a batch call: the one
entry point is ``single`` (``encode``).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.common import TOKENIZER_JSON_KINDS
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError
from verify.vocab.tiktoken_family import load_ranks

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base")


class PytorchTokenizersEngine(VocabAdapter):
    adapter_name = "pytorch-tokenizers"
    package = "pytorch_tokenizers"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False, entry_points=("single",))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, options=("backend", "encoding"))

    def configure(self):
        self.backend = str(self.options.get("backend", "hf"))
        if self.backend not in ("hf", "tiktoken"):
            raise ConfigError(f"pytorch-tokenizers backend must be hf or tiktoken, not '{self.backend}'")

    def load(self, vocab):
        import pytorch_tokenizers as ptt

        if self.backend == "tiktoken":
            if vocab.kind != "tiktoken":
                raise ConfigError(f"backend=tiktoken needs a tiktoken ranks file, not '{vocab.kind}'")
            name, family = self.tiktoken_family(vocab)
            base = len(load_ranks(vocab))
            by_id = {i: s for s, i in family["special_tokens"].items()}
            if min(by_id) < base:
                raise ConfigError(f"{name}: special ids below the rank count; the C++ Tiktoken cannot place them")
            specials = [by_id.get(i, f"<|verify_unused_{i}|>") for i in range(base, max(by_id) + 1)]
            self.tokenizer = ptt.CppTiktoken(family["pat_str"], specials, 0, 0)
            self.tokenizer.load(str(vocab.path))
        else:
            path = self.tokenizer_json(vocab)
            self.tokenizer = ptt.CppHFTokenizer()
            with self.refusing(RuntimeError):
                self.tokenizer.load(str(path))

    def encode_one(self, text, allow_special):
        # allow_special is not honoured (capabilities.special_tokens=False).
        return self.tokenizer.encode(text, 0, 0)
