"""Registry rows for third-party engines under test (one adapter module each).

Each adapter module also carries ``OFFLINE_VOCABS``: the known vocabulary names
it can load from local files (an empty tuple means it loads from the hub only).
"""

from verify.engines.registry_entry import AdapterEntry

THIRD_PARTY_ADAPTERS: list[AdapterEntry] = [
    AdapterEntry("basetenkenizer", "verify.engines.basetenkenizer_engine:BasetenkenizerEngine", "basetenkenizer",
                 "pip install basetenkenizer", "Baseten basetenkenizer (native segments, tiktoken_safe option)"),
    AdapterEntry("toktier", "verify.engines.toktier_engine:ToktierEngine", "toktier",
                 "pip install toktier", "toktier certified routing (stateless encode, route_report())"),
]
