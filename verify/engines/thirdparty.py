"""Registry rows for third-party engines under test (one adapter module each).

Each adapter module also carries ``OFFLINE_VOCABS``: the known vocabulary names
it can load without a network here (an empty tuple means it loads from the hub
only). ``verify engines`` reads it.
"""

from verify.engines.registry_entry import AdapterEntry

_E = "verify.engines."

THIRD_PARTY_ADAPTERS: list[AdapterEntry] = [
    AdapterEntry("basetenkenizer", _E + "basetenkenizer_engine:BasetenkenizerEngine", "basetenkenizer",
                 "pip install basetenkenizer", "Baseten basetenkenizer (native segments; ?tiktoken_safe=true|false)"),
    AdapterEntry("toktier", _E + "toktier_engine:ToktierEngine", "toktier",
                 "pip install toktier", "toktier certified routing (stateless encode; ?policy=, route_report())"),
    AdapterEntry("gigatoken", _E + "gigatoken_engine:GigatokenEngine", "gigatoken",
                 "pip install gigatoken", "gigatoken (always matches special tokens)"),
    AdapterEntry("fastokens", _E + "fastokens_engine:FastokensEngine", "fastokens",
                 "pip install fastokens", "fastokens (native segments)"),
    AdapterEntry("kitoken", _E + "kitoken_engine:KitokenEngine", "kitoken",
                 "pip install kitoken", "kitoken (tiktoken, tokenizers, sentencepiece and tekken files)"),
    AdapterEntry("tokie", _E + "tokie_engine:TokieEngine", "tokie",
                 "pip install tokie", "tokie (tokenizer.json; always matches added tokens)"),
    AdapterEntry("wordchipper", _E + "wordchipper_engine:WordchipperEngine", "wordchipper",
                 "pip install wordchipper", "wordchipper (OpenAI encodings)"),
    AdapterEntry("bpe-openai", _E + "bpe_openai_engine:BpeOpenAIEngine", "bpe_openai",
                 "pip install bpe-openai", "bpe-openai (bundled cl100k/o200k)"),
    AdapterEntry("sentencepiece", _E + "sentencepiece_engine:SentencePieceEngine", "sentencepiece",
                 "pip install sentencepiece", "Google SentencePiece (.model files)"),
    AdapterEntry("tekken", _E + "tekken_engine:TekkenEngine", "mistral_common",
                 "pip install mistral-common", "Mistral Tekken via mistral-common"),
    AdapterEntry("riptoken", _E + "riptoken_engine:RiptokenEngine", "riptoken",
                 "pip install riptoken", "riptoken CoreBPE (tiktoken-compatible)"),
]
