"""Registry rows for third-party engines under test (one adapter module each)."""

from verify.engines.registry_entry import AdapterEntry

THIRD_PARTY_ADAPTERS: list[AdapterEntry] = []
