"""Adapter for Google's ``sentencepiece``.

Specs: ``sentencepiece:mistral-spm-v3 | mistral-spm-v1 | path/to/x.model``.

No BOS/EOS are added. SentencePiece never parses control tokens (``<s>``,
``[INST]``...) out of text, so ``capabilities.special_tokens`` is False. Entry points: ``batch`` (the default:
``encode`` of a list) and ``single`` (``encode`` of one string).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("mistral-spm-v1", "mistral-spm-v3")


class SentencePieceEngine(VocabAdapter):
    adapter_name = "sentencepiece"
    package = "sentencepiece"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(kinds=("sentencepiece",))

    def load(self, vocab):
        import sentencepiece

        self.processor = sentencepiece.SentencePieceProcessor(model_file=str(vocab.path))

    def encode_many(self, texts, allow_special):
        return self.processor.encode(list(texts), out_type=int, add_bos=False, add_eos=False)

    def encode_one(self, text, allow_special):
        return self.processor.encode(text, out_type=int, add_bos=False, add_eos=False)

    def token_bytes(self, ids):
        sp = self.processor
        out = []
        for i in ids:
            i = int(i)
            if sp.is_byte(i):
                out.append(bytes([int(sp.id_to_piece(i)[3:5], 16)]))  # "<0xAB>"
            elif sp.is_control(i) or sp.is_unknown(i):
                out.append(sp.id_to_piece(i).encode())
            else:
                out.append(sp.id_to_piece(i).replace("\u2581", " ").encode())
        return out
