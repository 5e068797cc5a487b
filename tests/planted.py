"""Planted-bug engines: each wraps a correct engine and breaks it in one known way,
so tests can assert the harness reports exactly that break."""

from __future__ import annotations

import numpy as np

from verify.engines.base import Adapter, Capabilities
from verify.engines.fake import FakeEngine, byte_encode


class ZeroesNonAscii(FakeEngine):
    """Byte engine that emits id 0 for every byte of a non-ASCII character."""

    def __init__(self):
        super().__init__("zeroes-non-ascii", spec="planted:zeroes-non-ascii",
                         encode=lambda t, a: [0 if b >= 0x80 else b for b in byte_encode(t, a)])


class RaisesOn(FakeEngine):
    """Byte engine that raises on any text containing ``trigger``."""

    def __init__(self, trigger: str):
        def encode(text, allow_special):
            if trigger in text:
                raise ValueError(f"planted failure on {trigger!r}")
            return byte_encode(text, allow_special)

        super().__init__(f"raises-on-{trigger}", spec=f"planted:raises-on-{trigger}", encode=encode)


class ReplacesTokenAt(Adapter):
    """Wraps an engine and replaces the token that starts at the first occurrence
    of ``word`` (by character offset, from the tokenizer's own offsets) with id 0."""

    adapter_name = "planted"
    capabilities = Capabilities(special_tokens=True, decode=False)

    def __init__(self, tokenizer, word: str):
        super().__init__(f"replaces-{word}", spec=f"planted:replaces-{word}")
        self.tokenizer, self.word = tokenizer, word

    def encode_texts(self, texts, allow_special):
        self.tokenizer.encode_special_tokens = not allow_special
        out = []
        for text in texts:
            enc = self.tokenizer.encode(text, add_special_tokens=False)
            ids = np.asarray(enc.ids, dtype=np.uint32)
            at = text.find(self.word)
            if at >= 0:
                index = next(i for i, (start, _) in enumerate(enc.offsets) if start >= at)
                ids[index] = 0
            out.append(ids)
        return out


class FastBytes(FakeEngine):
    """The byte engine, vectorised for plain text: a cheap reference for megabyte inputs."""

    def __init__(self, spec: str = "fake:fast-bytes"):
        super().__init__("fast-bytes", spec=spec)

    def encode_texts(self, texts, allow_special):
        if allow_special:
            return super().encode_texts(texts, True)
        return [np.frombuffer(t.encode("utf-8"), dtype=np.uint8).astype(np.uint32) for t in texts]


class ZeroesPattern(FastBytes):
    """Fast byte engine that emits id 0 for the first byte of every occurrence of ``pattern``
    in plain text: a bug that only a short pattern, anywhere in a document, triggers."""

    def __init__(self, pattern: str):
        super().__init__(spec=f"planted:zeroes-{pattern}")
        self.pattern = pattern.encode("utf-8")

    def encode_texts(self, texts, allow_special):
        out = super().encode_texts(texts, allow_special)
        if not allow_special:
            for text, ids in zip(texts, out):
                data = text.encode("utf-8")
                at = data.find(self.pattern)
                while at >= 0:
                    ids[at] = 0
                    at = data.find(self.pattern, at + 1)
        return out


# The head of a session plugin (its PATH replaced by a tokenizer.json): the tiny tokenizer and a
# session that appends the new ids to the old ones, wrong by design.
CONCAT_SESSION_PLUGIN = '''
from tokenizers import Tokenizer

TOK = Tokenizer.from_file(PATH)

def enc(text):
    return list(TOK.encode(text, add_special_tokens=False).ids)

class Concat:
    """Wrong by design: the append's ids appended to the old ones."""
    def __init__(self): self.ids = []
    def append(self, text):
        self.ids += enc(text)
        return list(self.ids)
'''
