"""The tiktoken reference adapter takes each text's ids as one uint32 buffer
(``encode_to_numpy``) and must give exactly what tiktoken's list calls give its users:
``encode_ordinary`` for plain text, ``encode(allowed_special="all")`` with special tokens,
lone surrogates included (the list calls repair them, the buffer call raises)."""

import random

import numpy as np
import pytest

from verify.config import parse_spec
from verify.engines import build_engine


def random_text(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randrange(0, 40)):
        roll = rng.random()
        if roll < 0.5:
            pieces.append(chr(rng.randrange(32, 127)))
        elif roll < 0.7:
            pieces.append(chr(rng.randrange(0x80, 0x3000)))
        elif roll < 0.8:
            pieces.append(rng.choice([" ", "  ", "\n", "\t", "'s", "123"]))
        elif roll < 0.9:
            pieces.append(rng.choice(["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>"]))
        elif roll < 0.95:
            pieces.append(chr(rng.randrange(0xD800, 0xE000)))  # a lone surrogate
        else:
            pieces.append(chr(rng.randrange(0x10000, 0x110000)))
    return "".join(pieces)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_buffer_call_gives_the_list_calls_ids(name):
    engine = build_engine(parse_spec(f"tiktoken:{name}"))
    encoding = engine.encoding
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for _ in range(400):
        text = random_text(rng)
        plain, special = engine.encode_one(text, False), engine.encode_one(text, True)
        assert plain.dtype == special.dtype == np.uint32, seed
        assert plain.tolist() == encoding.encode_ordinary(text), (seed, text)
        assert special.tolist() == encoding.encode(text, allowed_special="all"), (seed, text)
