"""`verify ledger stats|check|compact DIR`: the reference ledgers under DIR (``--ledger``).

  stats    per ledger: the reference it records, entries, partitions, parts, bytes
  check    conflicting entries (two digests for one input: corruption), and with
           ``--corpus``: the reference encodes the corpus' inputs again and every entry
           found must match; exit 1 on any mismatch
  compact  merge each partition's parts into one, without duplicates
"""

from __future__ import annotations

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.cli import SubParser
    from verify.commands.options import add_corpus_options, add_pool_options

    p = sub.add_parser("ledger", help="inspect, check or compact reference ledgers (--ledger)")
    lsub = p.add_subparsers(dest="ledger_command", parser_class=SubParser, required=True)
    for name, text in (("stats", "entries, partitions and size of each ledger"),
                       ("check", "find corrupt entries (and re-encode a corpus against them)"),
                       ("compact", "merge each partition's parts")):
        q = lsub.add_parser(name, help=text)
        q.add_argument("root", metavar="DIR|URL", help="the --ledger folder")
        q.add_argument("--reference", metavar="SPEC", help="only the ledger of this reference")
        if name == "check":
            add_corpus_options(q, "none")
            q.add_argument("--limit", type=int, metavar="N", help="inputs per corpus to re-encode")
            add_pool_options(q)


def _ledgers(args) -> list:
    from verify.ledger import Ledger

    if args.reference:
        from verify.engines import build_engine

        engine = build_engine(args.reference)
        try:
            return [Ledger.open(args.root, engine.identity().as_dict(), create=False)]
        finally:
            engine.close()
    found = Ledger.folders(args.root)
    if not found:
        raise UsageError(f"{args.root}: no ledger here (a folder written by verify run --ledger)")
    return [Ledger.open(args.root, doc["identity"], create=False) for doc in found]


def run(args) -> int:
    ledgers = _ledgers(args)
    if args.ledger_command == "stats":
        for ledger in ledgers:
            s = ledger.stats()
            ident = ledger.identity
            print(f"{ident.get('spec')} ({ident.get('package')} {ident.get('package_version')}, vocab "
                  f"{(ident.get('vocab_sha256') or '-')[:12]}, fingerprint {ident.get('fingerprint')}): "
                  f"{s.entries:,} entries in {s.partitions:,} partitions, {s.parts:,} parts, {s.bytes:,} bytes"
                  + (f", {s.duplicates:,} duplicates" if s.duplicates else "")
                  + (f", {s.conflicts:,} CONFLICTS" if s.conflicts else ""))
        return EXIT_OK
    if args.ledger_command == "compact":
        for ledger in ledgers:
            before, after = ledger.compact()
            print(f"{ledger.identity.get('spec')}: {before} parts -> {after}")
        return EXIT_OK
    bad = 0
    for ledger in ledgers:
        s = ledger.stats()
        bad += s.conflicts
        print(f"{ledger.identity.get('spec')}: {s.entries:,} entries, {s.conflicts:,} conflicting")
        if args.corpus:
            checked, mismatched = _recheck(ledger, args)
            bad += mismatched
            print(f"  re-encoded {checked:,} recorded inputs of {', '.join(args.corpus)}: {mismatched:,} differ")
    return EXIT_FINDINGS if bad else EXIT_OK


def _recheck(ledger, args) -> tuple[int, int]:
    """The reference encodes the corpus' inputs again; every one the ledger has must match."""
    from verify.commands.options import engine_options
    from verify.corpora import open_corpus
    from verify.corpora.shards import apply_limit
    from verify.executors.pool import EnginePool
    from verify.keys import input_key
    from verify.ledger import partition_of
    from verify.outcome import Recorded, is_ids
    from verify.batches import batched
    from verify.sample import Sample

    checked = mismatched = 0
    with EnginePool(engine_options(args)) as pool:
        reference = pool.get(ledger.identity["spec"])
        for corpus in args.corpus:
            for shard in apply_limit(open_corpus(corpus, args.text_field, args.id_field).shards(), args.limit):
                recorded = ledger.lookup(partition_of(shard.id))
                if not recorded:
                    continue
                for batch in batched(shard.records()):
                    samples = [r for r in batch if isinstance(r, Sample)
                               and bytes.fromhex(input_key(r.segments)) in recorded]
                    for sample, out in zip(samples, reference.encode(samples)):
                        digest, length = recorded[bytes.fromhex(input_key(sample.segments))]
                        checked += 1
                        if not (is_ids(out) and Recorded(digest.hex(), length).matches(out)):
                            mismatched += 1
                            print(f"  MISMATCH {sample.id}: recorded {length} ids {digest.hex()}")
    return checked, mismatched
