"""The two references agree on real vocabularies: tiktoken vs the HF tokenizer
that verify builds from the same ranks (same pattern, merges from ranks)."""

import numpy as np
import pytest

from verify.corpora.generated import generate
from verify.engines import build_engine
from verify.sample import Sample

EDGE_CASES = [
    "1234567890123",  # digit groups: Oniguruma's {1,3}+ is not possessive
    "    indented\n\n\n   \t  \r\n",
    "I'M DON'T we'Ll they've",
    "<|endoftext|> literal",
    "emoji 👨‍👩‍👧‍👦 🇫🇷 1️⃣ ✌🏽",
    "a" * 5000 + " " * 3000 + "9" * 2000,
]


@pytest.mark.slow
@pytest.mark.parametrize("vocab", ["cl100k_base", "o200k_base", "p50k_base"])
def test_tiktoken_and_converted_hf_agree(vocab):
    ref, cand = build_engine(f"tiktoken:{vocab}"), build_engine(f"hf:{vocab}")
    samples = [Sample.plain(f"edge{i}", t) for i, t in enumerate(EDGE_CASES)] + list(generate(seed=7, documents=600,
                                                                                               long_documents=1))
    samples.append(Sample.from_segments("chat", [("<|endoftext|>", True), ("user says <|endoftext|>", False)]))
    for sample, a, b in zip(samples, ref.encode_batch(samples), cand.encode_batch(samples)):
        assert np.array_equal(a, b), sample.id
