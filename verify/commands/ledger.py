"""`verify ledger stats|check|compact DIR`: the reference ledgers under DIR (``--ledger``).

  stats    per ledger: the reference it records, entries, partitions, parts, bytes,
           duplicates, conflicts and bad parts
  check    every part's checksum (a truncated, altered or unchecked part is listed) and
           conflicting entries (two digests for one input: corruption); with ``--corpus``
           the reference encodes the corpus' recorded inputs again -- all of them, or the
           deterministic sample ``--audit RATE`` picks -- and every one must match (the
           ledger holds input keys, not inputs, so an audit needs the corpus); exit 1 on
           any bad part, conflict or mismatch
  compact  merge each partition's usable parts into one, without duplicates; bad parts
           stay where they are
"""

from __future__ import annotations

from verify.commands import EXIT_FINDINGS, EXIT_OK, SubParser
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.commands.options import add_corpus_options, add_pool_options

    p = sub.add_parser("ledger", help="inspect, check or compact reference ledgers (--ledger)")
    lsub = p.add_subparsers(dest="ledger_command", parser_class=SubParser, required=True)
    for name, text in (("stats", "entries, partitions and size of each ledger"),
                       ("check", "find bad parts and corrupt entries (and re-encode a corpus against them)"),
                       ("compact", "merge each partition's parts")):
        q = lsub.add_parser(name, help=text)
        q.add_argument("root", metavar="DIR|URL", help="the --ledger folder")
        q.add_argument("--reference", metavar="SPEC", help="only the ledger of this reference")
        if name == "check":
            add_corpus_options(q, "none")
            q.add_argument("--limit", type=int, metavar="N", help="inputs per corpus to re-encode")
            q.add_argument("--audit", type=float, metavar="RATE",
                           help="with --corpus: re-encode a deterministic fraction of the recorded inputs "
                                "(default 1: all)")
            q.add_argument("--seed", type=int, metavar="S", help="which inputs --audit picks (default: random, "
                                                                 "printed)")
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
    found = [doc for doc in Ledger.folders(args.root) if isinstance(doc.get("identity"), dict)]
    if not found:
        raise UsageError(f"{args.root}: no ledger here (a folder written by verify run --ledger)")
    return [Ledger.open(args.root, doc["identity"], create=False) for doc in found]


def _check_arguments(args) -> None:
    from verify.ledger import check_audit_rate

    if args.ledger_command != "check":
        return
    check_audit_rate(args.audit, "--audit")
    if (args.audit is not None or args.seed is not None) and not args.corpus:
        raise UsageError("--audit and --seed go with --corpus: the ledger holds input keys, not inputs, so the "
                         "reference re-encodes the corpus' inputs")


def run(args) -> int:
    _check_arguments(args)
    ledgers = _ledgers(args)
    if args.ledger_command == "stats":
        for ledger in ledgers:
            s = ledger.stats()
            ident = ledger.identity
            print(f"{ident.get('spec')} ({ident.get('package')} {ident.get('package_version')}, vocab "
                  f"{(ident.get('vocab_sha256') or '-')[:12]}, fingerprint {ident.get('fingerprint')}): "
                  f"{s.entries:,} entries in {s.partitions:,} partitions, {s.parts:,} parts, {s.bytes:,} bytes"
                  + (f", {s.duplicates:,} duplicates" if s.duplicates else "")
                  + (f", {s.conflicts:,} CONFLICTS" if s.conflicts else "")
                  + (f", {s.bad_parts:,} BAD PARTS (verify ledger check lists them)" if s.bad_parts else ""))
        return EXIT_OK
    if args.ledger_command == "compact":
        for ledger in ledgers:
            before, after, bad = ledger.compact()
            left = f" ({len(bad):,} bad parts left in place: verify ledger check lists them)" if bad else ""
            print(f"{ledger.identity.get('spec')}: {before} parts -> {after}{left}")
        return EXIT_OK
    bad = 0
    for ledger in ledgers:
        s = ledger.stats()
        bad += s.conflicts + s.bad_parts
        print(f"{ledger.identity.get('spec')}: {s.entries:,} entries in {s.parts:,} parts, {s.conflicts:,} conflicting, "
              f"{s.bad_parts:,} bad parts (skipped by runs: their inputs are encoded again)")
        for part in s.bad:
            print(f"  BAD PART {part}")
        if args.corpus:
            checked, mismatched, how = _recheck(ledger, args)
            bad += mismatched
            print(f"  re-encoded {checked:,} recorded inputs of {', '.join(args.corpus)}{how}: {mismatched:,} differ")
    return EXIT_FINDINGS if bad else EXIT_OK


def _recheck(ledger, args) -> tuple[int, int, str]:
    """The reference encodes the corpus' recorded inputs again (those the audit picks);
    every one must match its entry. (checked, mismatched, how they were picked)."""
    import secrets

    from verify.batches import batched
    from verify.commands.options import engine_options
    from verify.corpora import open_corpus
    from verify.corpora.shards import apply_limit
    from verify.executors.pool import EnginePool
    from verify.keys import input_key
    from verify.ledger import audited, partition_of
    from verify.outcome import Recorded, is_ids
    from verify.sample import Sample

    rate = 1.0 if args.audit is None else args.audit
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    how = "" if rate >= 1 else f" (audit {rate:g}, --seed {seed})"
    checked = mismatched = 0
    with EnginePool(engine_options(args)) as pool:
        reference = pool.get(ledger.identity["spec"])
        for corpus in args.corpus:
            for shard in apply_limit(open_corpus(corpus, args.text_field, args.id_field).shards(), args.limit):
                recorded = ledger.lookup(partition_of(shard.id))  # bad parts: listed above
                if not recorded:
                    continue
                for batch in batched(shard.records()):
                    picked = []
                    for record in batch:
                        key = bytes.fromhex(input_key(record.segments)) if isinstance(record, Sample) else None
                        if key in recorded and audited(key, rate, seed):
                            picked.append((record, recorded[key]))
                    for (sample, (digest, length)), out in zip(picked, reference.encode([s for s, _ in picked])):
                        checked += 1
                        if not (is_ids(out) and Recorded(digest.hex(), length).matches(out)):
                            mismatched += 1
                            print(f"  MISMATCH {sample.id}: recorded {length} ids {digest.hex()}")
    return checked, mismatched, how
