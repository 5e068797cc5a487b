"""Loading an adapter's vocabulary, written once.

Every vocabulary-loading adapter used to repeat the same constructor: resolve the
target, check its kind, refuse what it cannot load, set the vocabulary's name and
hash. Now an adapter subclasses ``VocabAdapter``, declares what it loads and which
spec options it takes as class data (``loads = Loads(...)``), and implements
``load(vocab)``: its library calls. ``VocabAdapter.__init__`` does the rest, in this
order (so errors come in the same order for every adapter):

1. refuse an option the adapter does not declare: one ``ConfigError`` naming the
   options it has (``tiktoken:cl100k_base?bogus=1`` was silently accepted before);
   ``entry`` is declared once here for every adapter that declares entry points
   (``?entry=NAME`` selects the library call, ``verify.engines.base``), and an entry
   point it does not declare is refused the same way;
2. ``configure()``: the adapter's own checks of its option values, before anything loads;
3. ``locate(target)``: a hub id (``org/model``, when ``loads.hub``) or a bundled
   vocabulary (``loads.bundled`` without ``loads.kinds``) is left to the engine, by
   name; anything else is resolved (``verify.vocab.resolver``), its kind checked
   against ``loads.kinds`` and refused with one line saying what the adapter loads.
   The identity fields follow: ``vocab_name`` always, ``vocab_sha256`` for a file of
   ours (an engine that hashes its own bundled table sets it in ``load``);
4. ``load(vocab)``: the resolved vocabulary, or None for one the engine finds by name
   (``self.target``).

An adapter whose options switch the route (``splintr?pretrained=true``,
``quicktok?data_dir=``, toktier's family ids) overrides ``locate`` for that case
and defers to ``super().locate`` for the rest.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator

from verify.engines.base import ENTRY_OPTION, Adapter, Capabilities
from verify.engines.common import cannot_load, is_hub_id, tiktoken_encoding_name, tokenizer_json_path
from verify.engine_spec import EngineSpec
from verify.errors import ConfigError
from verify.vocab.resolver import ResolvedVocab, resolve_vocab
from verify.vocab.tiktoken_family import family_definition

TRUE_WORDS = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Loads:
    """What an adapter loads and which spec options it takes, declared as data.

    kinds: the resolver's vocabulary kinds it loads from our files ("tiktoken",
        "hf-json", "tekken-json", "sentencepiece"; ``common.TOKENIZER_JSON_KINDS`` for
        the adapters that load a tokenizer.json, converted from a ranks file when needed).
    hub: an ``org/model`` target goes to the engine, which fetches it (needs a network).
    bundled: the only targets it takes. Without ``kinds`` the engine carries them and
        loads them by name (no file of ours); with ``kinds`` they are resolved as usual.
    options: the ``?name=value`` options it takes; any other is refused.
    hint: said after the refusal of a target that is not bundled (another way to load one).
    """

    kinds: tuple[str, ...] = ()
    hub: bool = False
    bundled: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    hint: str = ""

    def describe(self) -> str:
        """What it loads from files, for a refusal: ``tiktoken or hf-json vocabularies, or org/model
        from the hub``."""
        return f"{' or '.join(self.kinds)} vocabularies" + (", or org/model from the hub" if self.hub else "")


def refuse_unknown_options(spec: str, adapter: str, options: dict[str, Any], known: tuple[str, ...]) -> None:
    """One ``ConfigError`` naming the options ``adapter`` takes when ``options`` holds another."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        named = ", ".join(repr(u) for u in unknown)
        raise ConfigError(f"{spec}: unknown option{'s' if len(unknown) > 1 else ''} {named} for {adapter} "
                          f"(its options: {', '.join(known) or 'none'})")


def not_bundled(adapter: str, target: str, loads: Loads) -> ConfigError:
    """The error an adapter that loads only named vocabularies raises for another target."""
    return ConfigError(f"{adapter} has no bundled vocabulary '{target}' (have: {', '.join(loads.bundled)})"
                       + (f"; {loads.hint}" if loads.hint else ""))


class VocabAdapter(Adapter):
    """An adapter that loads a vocabulary: declares ``loads``, implements ``load``."""

    loads: ClassVar[Loads] = Loads()

    def __init__(self, target: str, options: dict[str, Any] | None = None, spec: str | None = None):
        super().__init__(target, options, spec)
        refuse_unknown_options(self.spec, self.adapter_name, self.options, self.option_names())
        self.check_entry()
        self.open(target)

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The ``?options`` it takes: its own, and ``entry`` when it declares entry points."""
        return cls.loads.options + ((ENTRY_OPTION,) if cls.capabilities.entry_points else ())

    def open(self, target: str) -> None:
        """Check the option values, find the vocabulary, load it (an adapter may wrap this)."""
        self.configure()
        self.load(self.locate(target))

    # --- to implement -----------------------------------------------------
    def configure(self) -> None:
        """Check option values before anything loads (the default: nothing to check)."""

    def load(self, vocab: ResolvedVocab | None) -> None:
        """Build the engine on ``vocab``; None: the engine finds ``self.target`` itself
        (the hub, its bundled data)."""
        raise NotImplementedError

    # --- provided ---------------------------------------------------------
    def locate(self, target: str) -> ResolvedVocab | None:
        """The vocabulary file to load, its identity set; None for a target the engine loads by name."""
        loads = self.loads
        if loads.bundled and target not in loads.bundled:
            raise not_bundled(self.adapter_name, target, loads)
        if (loads.hub and is_hub_id(target)) or (loads.bundled and not loads.kinds):
            return self.by_name(target)
        vocab = resolve_vocab(target)
        if vocab.kind not in loads.kinds:
            raise cannot_load(self.adapter_name, vocab, loads.describe())
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        return vocab

    def by_name(self, target: str) -> None:
        """A vocabulary the engine loads by its name: the name is the identity, with no hash of ours."""
        self.vocab_name = target
        return None

    def tokenizer_json(self, vocab: ResolvedVocab) -> Path:
        """A local tokenizer.json for ``vocab`` (a ranks file converted, ``?encoding=`` honoured)."""
        return tokenizer_json_path(vocab, self.options, self.adapter_name)

    def tiktoken_encoding(self, vocab: ResolvedVocab) -> str:
        """The tiktoken encoding of a ranks file: ``?encoding=`` or the known vocabulary's own."""
        return tiktoken_encoding_name(vocab, self.options)

    def tiktoken_family(self, vocab: ResolvedVocab) -> tuple[str, dict[str, Any]]:
        """``(encoding name, {"pat_str", "special_tokens"})`` of a ranks file's tiktoken encoding."""
        name = self.tiktoken_encoding(vocab)
        return name, family_definition(name)

    @contextlib.contextmanager
    def refusing(self, *errors: type[BaseException]) -> Iterator[None]:
        """The engine's own refusal to load the vocabulary (one of ``errors``), as one line."""
        try:
            yield
        except errors as exc:
            detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)  # a KeyError says only the key
            raise ConfigError(f"{self.adapter_name} refuses {self.vocab_name}: {detail}") from exc

    def int_option(self, name: str, default: int) -> int:
        value = self.options.get(name, default)
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{self.adapter_name} option {name} must be an integer, not {value!r}") from None

    def flag_option(self, name: str) -> bool:
        """A yes/no option: true, 1, yes or on (any case) is yes; absent is no."""
        return str(self.options.get(name, False)).lower() in TRUE_WORDS


# --- specs that drive one entry point (the api check, the stress phases) ----------------------

def with_entry(spec: EngineSpec, entry: str) -> EngineSpec:
    """``spec``'s engine driving ``entry``: ``tiktoken:cl100k_base?entry=batch`` (a named spec
    is spelled out as ``ADAPTER:TARGET?options``; its other options are kept but those the
    adapter says ``?entry=`` supersedes, ``entry_replaces``)."""
    from urllib.parse import urlencode

    from verify.engines.registry import adapters

    registered = adapters().get(spec.adapter)
    replaced = registered.load().entry_replaces if registered is not None and registered.installed() else ()
    options = {**{k: v for k, v in spec.options.items() if k not in replaced}, ENTRY_OPTION: entry}
    query = urlencode({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()})
    return EngineSpec(spec.adapter, spec.target, options, f"{spec.adapter}:{spec.target}?{query}")


def entry_specs(spec: EngineSpec) -> tuple[str | None, dict[str, EngineSpec]]:
    """The entry point ``spec`` drives and, for every declared entry point it does not already
    drive on its own, the spec that does (``{"batch": "tiktoken:cl100k_base?entry=batch"}``),
    in declaration order. Read from the adapter's declaration, without loading a vocabulary;
    an adapter that is not installed declares nothing here (its engine fails to start later)."""
    from verify.engines.registry import adapters

    entry = adapters().get(spec.adapter)
    if entry is None or not entry.installed():
        return None, {}
    capabilities, in_effect = entry.load().declared_entry_points(spec.target, dict(spec.options))
    explicit = spec.options.get(ENTRY_OPTION) is not None
    driven = in_effect if explicit or drives_alone(capabilities, in_effect) else None
    return in_effect, {name: with_entry(spec, name) for name in capabilities.entry_points if name != driven}


def drives_alone(capabilities: Capabilities, entry: str | None) -> bool:
    """Whether a spec *without* ``?entry=`` whose entry point in effect is ``entry`` drives it
    alone, as ``?entry=`` of it would. Not so for an engine with native segments whose entry is
    not ``segments``: it gets each sample alone (several segments through ``encode_segments``),
    as adapters always did, where ``?entry=`` sends a whole batch through that one call."""
    return entry is not None and not (capabilities.segments and entry != "segments")


def entry_spec(spec: EngineSpec, entry: str) -> EngineSpec | None:
    """The spec whose encode goes through ``entry`` alone: ``spec`` itself when it already does,
    ``spec?entry=NAME`` when the adapter declares it, None when it does not (``batch``: what
    a stress phase sends its big batches to, so they reach the library's own batch call)."""
    in_effect, others = entry_specs(spec)
    if entry in others:
        return others[entry]
    return spec if entry == in_effect else None
