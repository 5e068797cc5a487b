"""``repair:INNER_SPEC[?window=512&widen=5&min_match=2&cover=longest&sync=class&fallback=true]``:
any stateless engine that reports token bytes, made incremental the way the TokTier
paper repairs sessions (sec. 3.3): re-encode a window before the append, accept the
splice only under the stable-boundary certificate, widen the window x2 up to
``widen`` times, then re-encode the whole last segment.

    repair:tiktoken:cl100k_base                   the full certificate (safe)
    repair:tiktoken:cl100k_base?sync=none         an unsafe variant: no class-sync rule
    repair:hf:tokenizer.json?scheme=margin&margin=64   a fixed safety margin, no certificate

Options (``verify.engines.repair_certificate.RepairSettings``): ``window`` (bytes),
``widen`` (doublings), ``min_match`` (tokens), ``cover`` (``longest`` or bytes; ``0``
drops the rule), ``sync`` (``class`` or ``none``), ``fallback`` (``false``: accept the
last uncertified splice), ``scheme`` (``certificate`` or ``margin``) and ``margin``
(bytes). Each variant and the failure it permits: docs/repair.md.

The stateless ``encode_batch`` is the inner engine's; sessions are the point. Each
append's ``SessionUpdate.notes`` says how it was served (window, widenings,
fallback, the rules that certified it, those the variant dropped); the run notes
count windows, certified splices, widenings and fallbacks for the manifest.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from verify.engines.repair_certificate import OPTION_NAMES, RepairSettings
from verify.engines.repair_session import RepairSession
from verify.engines.vocabulary import engine_vocabulary
from verify.engines.wrapped import WrappedEngine
from verify.errors import ConfigError

COUNTED = ("appends", "appended_bytes", "windows", "reencoded_bytes", "certified", "segment", "margin",
           "uncertified", "fallbacks", "widenings", "unaligned", "rule_match", "rule_cover", "rule_sync")


class RepairEngine(WrappedEngine):
    adapter_name = "repair"
    option_names = OPTION_NAMES

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        if not self.inner.capabilities.decode:
            self.inner.close()
            raise ConfigError(f"{self.spec}: the inner engine {target} cannot report token bytes "
                              "(capabilities.decode is false), and repair needs them for byte offsets")
        self.settings = RepairSettings.from_options(self.options, self.spec)
        self.options = self.settings.as_options()  # the identity records the effective settings
        self.stats: Counter = Counter()
        self._longest: int | None = None

    def longest(self) -> int:
        """Bytes of the inner vocabulary's longest token, added and special tokens included."""
        if self._longest is None:
            vocab = engine_vocabulary(self.inner)
            self._longest = max([*(len(b) for b in vocab.tokens.values()),
                                 *(len(t.encode()) for t in vocab.added)], default=0)
        return self._longest

    def open_session(self, state: bytes | None = None) -> RepairSession:
        self.stats["sessions"] += 1
        return RepairSession(self, state)

    def session_notes(self) -> dict[str, Any]:
        counts = {key: int(self.stats[key]) for key in ("sessions", *COUNTED)}
        notes: dict[str, Any] = {"repair": counts}
        if self.settings.dropped():
            notes["unsafe_variant"] = self.settings.dropped()
        warnings = []
        served_by_window = counts["certified"] + counts["margin"] + counts["uncertified"]
        if counts["appends"] and not served_by_window:
            warnings.append(f"{self.spec}: none of its {counts['appends']} appends was served by a window splice "
                            "(each re-encoded its whole segment: transcripts shorter than the window?), so the "
                            "repair itself was not exercised")
        if counts["unaligned"]:
            warnings.append(f"{self.spec}: on {counts['unaligned']} appends the inner engine's token bytes did not "
                            "spell the text (a normalising tokenizer?), so the whole segment was re-encoded")
        if warnings:
            notes["warnings"] = warnings
        return notes
