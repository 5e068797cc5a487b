"""The out-of-process adapters: ``subprocess:COMMAND`` and ``http:URL``."""

from __future__ import annotations

import shlex
import socket
import sys
import textwrap

import numpy as np
import pytest

from verify.engines import build_engine
from verify.engines.conformance import EngineConformance
from verify.engines.http_engine import EngineHTTPError, HTTPEngine, endpoint_url
from verify.engines.subprocess_engine import EngineProcessError, EngineRequestError, SubprocessEngine
from verify.errors import ConfigError
from verify.sample import Sample

try:
    from tests.http_tokenize_server import serve_in_thread
except ImportError:  # tests/ is not a package: pytest put the folder itself on sys.path
    from http_tokenize_server import serve_in_thread

REFERENCE = "tiktoken:cl100k_base"
SERVER = f"subprocess:{shlex.quote(sys.executable)} -m verify.engines.protocol_server --engine {REFERENCE}"

VARIED = [
    "",
    "hello world",
    "  multiple   spaces\tand\ttabs\n\n\r\n",
    "naïve café — déjà vu; Ünïcödé ß ﬁ",
    "日本語のテキスト 한국어 中文 русский عربى",
    "emoji 👍🏽 family 👨‍👩‍👧 zwj\u200b\ufeff\u00a0",
    "def f(x):\n    return x**2  # comment",
    "12345678901234567890 3.14159 -42",
    "<|endoftext|> literal <|fim_prefix|> in plain text",
    "quotes \" and backslashes \\ and \\n escapes",
    "x" * 5000,
]


@pytest.fixture(scope="module")
def reference():
    return build_engine(REFERENCE)


@pytest.fixture(scope="module")
def server_engine():
    engine = build_engine(SERVER)
    yield engine
    engine.close()


def planted(tmp_path, body: str, options: str = "") -> str:
    """A spec for a tiny child process whose code is ``body`` (with helpers in scope)."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent('''\
        import json, sys
        def send(obj):
            sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
        HELLO = {"protocol": "verify-tokenize/1", "name": "planted", "version": "0.0",
                 "capabilities": {"special_tokens": False, "segments": False, "decode": False}}
        ''') + textwrap.dedent(body), encoding="utf-8")
    return f"subprocess:{shlex.quote(sys.executable)} {shlex.quote(str(script))}" + (f"?{options}" if options else "")


# --- conformance ---------------------------------------------------------------


class TestSubprocessEngine(EngineConformance):
    reference_spec = REFERENCE

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        engine = build_engine(SERVER)
        yield engine
        engine.close()


class TestSubprocessEngineTextsPath(EngineConformance):
    """The same server declaring segments=false: the adapter sends texts requests."""

    reference_spec = REFERENCE

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        engine = build_engine(SERVER + " --no-segments")
        assert not engine.capabilities.segments
        yield engine
        engine.close()


@pytest.fixture(scope="module")
def http_server():
    with serve_in_thread(reference_spec=REFERENCE, model="test-model") as server:
        yield server


class TestHTTPEngine(EngineConformance):
    reference_spec = REFERENCE

    @pytest.fixture(scope="class", params=["vllm", "sglang"])
    @classmethod
    def engine(cls, request, http_server):
        return build_engine(f"{http_server.base_url}/{request.param}/tokenize?api={request.param}&model=test-model")


# --- subprocess behaviour -------------------------------------------------------


def test_capabilities_come_from_the_handshake(server_engine):
    assert isinstance(server_engine, SubprocessEngine)
    caps = server_engine.capabilities
    assert caps.special_tokens and caps.segments and caps.decode
    assert type(server_engine).capabilities.special_tokens is False  # the class default is untouched
    ident = server_engine.identity()
    assert ident.adapter == "subprocess" and ident.package == "tiktoken" and ident.vocab == "cl100k_base"
    assert ident.fingerprint == build_engine(REFERENCE).identity().fingerprint


@pytest.mark.parametrize("flag", [False, True])
def test_subprocess_equals_tiktoken_on_varied_text(server_engine, reference, flag):
    samples = [Sample.from_segments(str(i), [(t, flag)]) for i, t in enumerate(VARIED)]
    for want, got in zip(reference.encode_batch(samples), server_engine.encode_batch(samples)):
        np.testing.assert_array_equal(got, want)


def test_subprocess_equals_tiktoken_on_segments(server_engine, reference):
    samples = [
        Sample.from_segments("chat", [("<|im_start|>", True), ("user: say <|endoftext|> please", False),
                                      ("<|endoftext|>", True)]),
        Sample.from_segments("mixed", [("plain <|fim_prefix|>", False), ("<|fim_prefix|>x<|fim_suffix|>", True)]),
        Sample.from_segments("split", [("hel", False), ("lo wor", False), ("ld", True)]),
        Sample.from_segments("empty", [("", True), ("", False)]),
    ]
    want = reference.encode_batch(samples)
    got = server_engine.encode_batch(samples)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert 100257 in got[0]  # <|endoftext|> as a special token where allowed ...
    plain = server_engine.encode_texts(["say <|endoftext|> please"], allow_special=False)[0]
    assert 100257 not in plain  # ... and as ordinary text where not


def test_token_bytes_round_trip(server_engine, reference):
    ids = reference.encode_batch([Sample.plain("t", "héllo <|endoftext|> 日本")])[0]
    assert server_engine.token_bytes(ids) == reference.token_bytes(ids)


def test_error_response_raises_with_the_childs_message_and_the_session_survives(server_engine):
    with pytest.raises(EngineRequestError, match="engine process reported KeyError") as info:
        server_engine.token_bytes(np.array([4_000_000_000], dtype=np.uint32))
    assert isinstance(info.value, EngineProcessError) and info.value.error_type == "KeyError"
    assert server_engine.encode_texts(["still alive"], False)[0].size > 0


def test_child_that_dies_mid_run_raises_with_its_stderr_tail(tmp_path):
    spec = planted(tmp_path, '''
        send(HELLO)
        for n, line in enumerate(sys.stdin):
            req = json.loads(line)
            if n == 1:
                sys.stderr.write("tokenizer: fatal: table corrupted at rank 4242\\n"); sys.stderr.flush()
                sys.exit(3)
            send({"id": req["id"], "ids": [[1, 2] for _ in req["texts"]]})
        ''', "restart=false")
    engine = build_engine(spec)
    assert engine.encode_texts(["a"], False)[0].tolist() == [1, 2]
    with pytest.raises(EngineProcessError) as info:
        engine.encode_texts(["b"], False)
    message = str(info.value)
    assert "exited with status 3" in message and "table corrupted at rank 4242" in message
    with pytest.raises(EngineProcessError, match="(?s)not running.*table corrupted"):
        engine.encode_texts(["c"], False)  # no restart: later calls say why it is gone
    engine.close()


def test_crash_is_pinned_on_its_input_by_restarting(tmp_path):
    spec = planted(tmp_path, '''
        send(HELLO)
        for line in sys.stdin:
            req = json.loads(line)
            if any("CRASH" in t for t in req["texts"]):
                sys.stderr.write("segfault-ish\\n"); sys.exit(139)
            send({"id": req["id"], "ids": [[len(t)] for t in req["texts"]]})
        ''')
    engine = build_engine(spec)
    with pytest.raises(EngineProcessError, match="(?s)status 139.*segfault-ish"):
        engine.encode_batch([Sample.plain("1", "ok"), Sample.plain("2", "CRASH here")])
    # What the harness does next: one sample at a time, each on a live child.
    assert engine.encode_batch([Sample.plain("1", "ok")])[0].tolist() == [2]
    with pytest.raises(EngineProcessError):
        engine.encode_batch([Sample.plain("2", "CRASH here")])
    assert engine.encode_batch([Sample.plain("3", "fine")])[0].tolist() == [4]
    assert engine.restarts == 2
    engine.close()


def test_garbage_output_raises(tmp_path):
    spec = planted(tmp_path, '''
        send(HELLO)
        for line in sys.stdin:
            print("Loading weights... done", flush=True)
        ''')
    engine = build_engine(spec)
    with pytest.raises(EngineProcessError, match="not a protocol message: 'Loading weights... done'"):
        engine.encode_texts(["x"], False)
    engine.close()


@pytest.mark.parametrize("reply, match", [  # ID: the id of the request answered (drawn at random)
    ('{"id": 99, "ids": [[1]]}', "answered request 99 when request [0-9]+"),
    ('{"id": ID, "ids": [["a"]]}', "malformed token ids"),
    ('{"id": ID, "ids": [[-5]]}', "malformed token ids"),
    ('{"id": ID, "ids": [[1], [2]]}', "2 results for 1 inputs"),
    ('{"id": ID, "tokens": [[1]]}', "without a 'ids' list"),
])
def test_wrong_answers_raise(tmp_path, reply, match):
    spec = planted(tmp_path, f'''
        send(HELLO)
        for line in sys.stdin:
            answer = {reply!r}.replace("ID", str(json.loads(line)["id"]))
            sys.stdout.write(answer + "\\n"); sys.stdout.flush()
        ''')
    engine = build_engine(spec)
    with pytest.raises(EngineProcessError, match=match):
        engine.encode_texts(["x"], False)
    engine.close()


@pytest.mark.parametrize("body, match", [
    ('print("hello, I am a tokenizer", flush=True)', "bad handshake"),
    ('send(dict(HELLO, protocol="verify-tokenize/2"))', "speaks 'verify-tokenize/2'"),
    ('send(dict(HELLO, capabilities={"segments": "yes"}))', "capability 'segments' must be true or false"),
    ('sys.stderr.write("cannot open vocab.bin\\n"); sys.exit(2)', "(?s)exited with status 2.*cannot open vocab.bin"),
])
def test_bad_start_raises(tmp_path, body, match):
    with pytest.raises(EngineProcessError, match=match):
        build_engine(planted(tmp_path, body))


def test_silent_child_times_out(tmp_path):
    spec = planted(tmp_path, '''
        send(HELLO)
        import time
        for line in sys.stdin:
            time.sleep(60)
        ''', "timeout=0.5&restart=false")
    engine = build_engine(spec)
    with pytest.raises(EngineProcessError, match="sent nothing for 0.5s"):
        engine.encode_texts(["x"], False)
    assert engine._child is None  # killed, not left hanging


def test_chatty_stderr_does_not_deadlock(tmp_path):
    spec = planted(tmp_path, '''
        send(HELLO)
        for line in sys.stdin:
            req = json.loads(line)
            sys.stderr.write("log line " * 20000 + "\\n"); sys.stderr.flush()   # ~180 kB per request
            send({"id": req["id"], "ids": [[7] for _ in req["texts"]]})
        ''', "timeout=20")
    engine = build_engine(spec)
    for _ in range(5):
        assert engine.encode_texts(["a", "b"], False)[1].tolist() == [7]
    engine.close()


def test_close_ends_the_child(server_engine):
    engine = build_engine(SERVER)
    proc = engine._child.proc
    engine.close()
    assert proc.poll() is not None
    with pytest.raises(EngineProcessError, match="closed"):
        engine.encode_texts(["x"], False)


def test_bad_commands_are_config_errors():
    with pytest.raises(ConfigError, match="cannot start engine process"):
        build_engine("subprocess:/nonexistent/tokenizer-server --serve")
    with pytest.raises(ConfigError, match="cannot split"):
        build_engine("subprocess:python -c 'unterminated")
    with pytest.raises(ConfigError, match="out of range"):
        build_engine(SERVER + "?timeout=-1")


# --- http behaviour -------------------------------------------------------------


@pytest.mark.parametrize("api", ["vllm", "sglang"])
def test_http_equals_reference_on_plain_text(http_server, reference, api):
    engine = build_engine(f"{http_server.base_url}/{api}/tokenize?api={api}&model=test-model")
    assert isinstance(engine, HTTPEngine) and not engine.capabilities.special_tokens
    texts = [t for t in VARIED if "<|" not in t]
    samples = [Sample.plain(str(i), t) for i, t in enumerate(texts)]
    for want, got in zip(reference.encode_batch(samples), engine.encode_batch(samples)):
        np.testing.assert_array_equal(got, want)


def test_sglang_batches_and_vllm_does_not(http_server):
    http_server.requests.clear()
    build_engine(f"{http_server.base_url}/sglang/tokenize?api=sglang").encode_texts(["a", "b", "c"], False)
    assert len(http_server.requests) == 1 and b'"prompt": ["a", "b", "c"]' in http_server.requests[0][1]
    http_server.requests.clear()
    build_engine(f"{http_server.base_url}/vllm/tokenize?api=vllm").encode_texts(["a", "b", "c"], False)
    assert len(http_server.requests) == 3
    assert all(b'"add_special_tokens": false' in body for _, body in http_server.requests)


def test_http_special_literal_in_plain_text_is_a_real_divergence(http_server, reference):
    """The endpoint parses special-token text even in plain text; the adapter must not hide it."""
    engine = build_engine(f"{http_server.base_url}/tokenize")
    sample = Sample.plain("inj", "ignore that <|endoftext|> and go on")
    got = engine.encode_batch([sample])[0]
    want = reference.encode_batch([sample])[0]
    assert 100257 in got and 100257 not in want


def test_http_500_raises(http_server):
    engine = build_engine(f"{http_server.base_url}/fail/tokenize")
    with pytest.raises(EngineHTTPError, match="HTTP 500.*simulated internal error") as info:
        engine.encode_batch([Sample.plain("x", "hello")])
    assert info.value.status == 500


def test_http_garbage_body_raises(http_server):
    engine = build_engine(f"{http_server.base_url}/garbage/tokenize?api=sglang")
    with pytest.raises(EngineHTTPError, match="not JSON.*definitely not json"):
        engine.encode_texts(["hello"], False)


def test_http_unknown_model_raises(http_server):
    engine = build_engine(f"{http_server.base_url}/tokenize?model=other-model")
    with pytest.raises(EngineHTTPError, match="HTTP 404.*other-model") as info:
        engine.encode_texts(["hello"], False)
    assert info.value.status == 404


def test_http_unreachable_raises():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = build_engine(f"http://127.0.0.1:{port}?timeout=2")
    with pytest.raises(EngineHTTPError, match="unreachable"):
        engine.encode_texts(["hello"], False)


def test_http_spec_forms():
    assert endpoint_url("//127.0.0.1:8000") == "http://127.0.0.1:8000/tokenize"
    assert endpoint_url("http://h:1/") == "http://h:1/tokenize"
    assert endpoint_url("https://h/v1/tokenize") == "https://h/v1/tokenize"
    assert build_engine("http:https://tok.example/x?api=sglang&model=m&timeout=5").url == "https://tok.example/x"
    with pytest.raises(ConfigError):
        endpoint_url("ftp://h/")
    with pytest.raises(ConfigError, match="api='tgi'"):
        build_engine("http://127.0.0.1:1?api=tgi")
