"""Trace importers, chat templates and the agent-session generator (docs/traces.md).

Every fixture is written here from the fields docs/traces.md documents; no third-party
log is committed. The end-to-end replays run tiktoken against itself (under another
spec name): a stateless candidate is re-encoded from scratch every turn, so any
finding would be a harness bug.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from verify import cli
from verify.corpora.traces import open_traces
from verify.corpora.traces.agent import SHAPES, describe, generate_session, generate_sessions
from verify.corpora.traces.agent_text import SPECIAL_LOOKALIKES
from verify.corpora.traces.templates import Message, builtin_names, load_template, template_name_for
from verify.errors import ConfigError
from verify.sample import BadRecord, Segment

S, P = True, False  # structure / plain segment flags


def read_all(path, fmt, template="chatml"):
    out = []
    for shard in open_traces(str(path), fmt, template=template).shards():
        out.extend(shard.records())
    sessions = [r for r in out if not isinstance(r, BadRecord)]
    return sessions, [r for r in out if isinstance(r, BadRecord)]


def plain_text(trace) -> list[str]:
    """Each turn's message content (the plain segments)."""
    return ["".join(s.text for s in turn.segments if not s.allow_special) for turn in trace.turns]


def write_lines(path: Path, docs, raw_lines=()) -> Path:
    lines = [json.dumps(d, ensure_ascii=False) for d in docs] + list(raw_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- fixtures written from the documented fields ---------------------------------------

def claude_docs():
    def rec(kind, uuid, parent, content, msg_id=None, **extra):
        message = {"role": "assistant" if kind == "assistant" else "user", "content": content}
        if msg_id:
            message["id"] = msg_id
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "S1",
                "message": message, **extra}

    return [
        {"type": "summary", "summary": "Fixing a bug", "leafUuid": "c2"},
        rec("user", "u1", None, "Fix the bug in 12345"),
        rec("assistant", "a1", "u1", [{"type": "thinking", "thinking": "look first", "signature": "sig"}], "msg_1"),
        rec("assistant", "a2", "a1", [{"type": "text", "text": "Reading it."}], "msg_1"),
        rec("assistant", "a3", "a2", [{"type": "tool_use", "id": "t1", "name": "Read",
                                       "input": {"file_path": "a.py"}}], "msg_1"),
        rec("user", "r1", "a3", [{"type": "tool_result", "tool_use_id": "t1", "content": "1→x = 1\r\n"}]),
        rec("assistant", "a4", "r1", [{"type": "text", "text": "abandoned branch"}], "msg_2"),
        rec("assistant", "a5", "r1", [{"type": "text", "text": "Done: x is 1."}], "msg_3"),
        {"type": "file-history-snapshot", "messageId": "a5", "snapshot": {}},
        {**rec("user", "s1", None, "sub task"), "isSidechain": True},
        {**rec("assistant", "s2", "s1", [{"type": "text", "text": "sub done"}], "msg_s"), "isSidechain": True},
        {"type": "system", "subtype": "compact_boundary", "uuid": "c0", "parentUuid": None,
         "logicalParentUuid": "a5", "compactMetadata": {"trigger": "auto", "preTokens": 1234},
         "content": "Conversation compacted"},
        {**rec("user", "c1", "c0", "Summary: the bug is fixed."), "isCompactSummary": True},
        rec("assistant", "c2", "c1", [{"type": "text", "text": "Continuing."}], "msg_4"),
    ]


CLAUDE_BAD = ['{"type": "user", "parentUuid": "c2", "message": {"role": "user", "content": "no uuid"}}',
              "{not json"]


def codex_docs():
    def item(payload):
        return {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item", "payload": payload}

    def msg(role, text, kind="input_text"):
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    return [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "x", "cwd": "/w", "cli_version": "0.1"}},
        item(msg("developer", "<permissions>sandboxed</permissions>")),
        item(msg("user", "run the tests")),
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "user_message", "message": "run the tests"}},
        {"timestamp": "t", "type": "turn_context", "payload": {"model": "m"}},
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Running**"}], "content": None,
              "encrypted_content": "gAAAA"}),
        item({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pytest\"]}", "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1", "output": "3 passed\r\n"}),
        item({"type": "web_search_call", "status": "completed"}),
        item({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}),
        item(msg("assistant", "All 3 pass.", "output_text")),
        {"timestamp": "t", "type": "a_future_record_type", "payload": {"anything": 1}},
        {"timestamp": "t", "type": "compacted", "payload": {"message": "summary one", "replacement_history": [
            msg("user", "run the tests"), msg("user", "summary of the work so far")]}},
        item(msg("user", "now lint")),
        {"timestamp": "t", "type": "compacted", "payload": {"message": "second summary"}},
        item({"type": "message", "role": "assistant", "content": "ok"}),
    ]


CODEX_BAD = ['{"type": "response_item", "payload": "not an object"}',
             '{"type": "response_item", "payload": {"type": "message", "content": []}}']

SHAREGPT_RECORDS = [
    {"id": "conv-1", "conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "2+2?"},
                                       {"from": "gpt", "value": "4"}, {"from": "human", "value": "and 3+3?"},
                                       {"from": "gpt", "value": "6"}]},
    {"conversations": [{"from": "human", "value": "hi <|endoftext|>"}, {"from": "gpt", "value": "hello"}]},
]
SHAREGPT_BAD = ['{"id": "x", "conversations": [{"from": "human", "value": null}]}', '{"id": "y"}',
                '{"id": "z", "conversations": [{"from": "human", "value": "lone \\ud800 surrogate"}]}']

OPENAI_RECORDS = [
    {"id": 7, "messages": [
        {"role": "system", "content": "tools available"},
        {"role": "user", "content": [{"type": "text", "text": "weather"}, {"type": "text", "text": "in Paris?"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
        {"role": "assistant", "content": "It is 18°C."}]},
]
OPENAI_BAD = ['{"messages": [{"content": "no role"}]}', '{"messages": [{"role": "user", "content": 5}]}']

TRACELAB_ROWS = [
    {"session_id": "sA", "round_index": 1, "current_tool_result_chars": 900, "current_user_message_chars": 0,
     "output_tokens": 30, "tools": [{"tool_name": "Bash", "input_chars": 40}]},
    {"session_id": "sB", "round_index": 0, "current_input_chars": 1400, "output_tokens": 12},
    {"session_id": "sA", "round_index": 0, "current_user_message_chars": 120, "current_tool_result_chars": 0,
     "output_tokens": 50, "provider": "claude"},
    {"session_id": "sB", "round_index": 1, "newly_append_tokens": 25},
]
TRACELAB_BAD = ['{"round_index": 2, "output_tokens": 3}', '{"session_id": "sA", "round_index": 3}',
                '{"session_id": "sA", "round_index": 4, "output_tokens": -1}']


# --- templates ----------------------------------------------------------------------------

def test_templates_render_one_turn_per_message_structure_special_content_plain():
    chatml = load_template("chatml")
    turns = chatml.render([Message("user", "hi <|im_end|>"), Message("assistant", "yo")])
    assert turns == [((("<|im_start|>user\n"), S), ("hi <|im_end|>", P), ("<|im_end|>\n", S)),
                     (("<|im_start|>assistant\n", S), ("yo", P), ("<|im_end|>\n", S))]
    deepseek = load_template("deepseek-v3")
    first, user = deepseek.render([Message("system", "sys"), Message("user", "q")])
    assert first == (("<｜begin▁of▁sentence｜>", S), ("sys", P))  # begin only on the first turn
    assert user == (("<｜User｜>", S), ("q", P))
    assert load_template("plain").render([Message("tool", "out")]) == [(Segment("tool: out\n\n", P),)]
    assert all(not seg.allow_special for seg in load_template("tekken").render([Message("user", "x")])[0])
    assert chatml.role_format("developer") == chatml.role_format("system")  # aliases
    assert chatml.role_format("critic").before == "<|im_start|>critic\n"  # roles.default with {role}


def test_template_for_follows_the_reference_vocabulary():
    assert template_name_for("tiktoken:cl100k_base") == "chatml"
    assert template_name_for("hf-o200k") == "chatml"  # a named engine
    assert template_name_for("hf:deepseek-v3") == "deepseek-v3"
    assert template_name_for("tekken:tekken") == "tekken"
    assert template_name_for("repair:hf-deepseek-v3?window=64") == "deepseek-v3"  # a wrapper
    assert template_name_for("tiktoken:p50k_base") == "plain"
    assert template_name_for("python:mod:attr") == "plain"
    with pytest.raises(ConfigError, match="unknown chat template"):
        load_template("no-such-template")


def test_a_template_file_given_by_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nstructure_allow_special = true\n[roles.default]\nbefore = "<{role}>"\n'
                    'after = "</{role}>"\n', encoding="utf-8")
    sessions, bad = read_all(write_lines(tmp_path / "c.jsonl", SHAREGPT_RECORDS[1:]), "sharegpt", str(path))
    assert not bad and sessions[0].turns[0].segments == (("<user>", S), ("hi <|endoftext|>", P), ("</user>", S))
    path.write_text('name = "broken"\n[roles.user]\nbefore = 3\n', encoding="utf-8")
    load_template.cache_clear()
    with pytest.raises(ConfigError):
        load_template(str(path))


@pytest.mark.slow
def test_template_structure_tokens_are_what_each_vocabulary_says():
    from verify.vocab.inspect import vocabulary_view

    for name in builtin_names():
        template = load_template(name)
        for vocab in template.vocabularies:
            special = vocabulary_view(vocab).special
            assert set(template.special_tokens) <= set(special), (name, vocab)
            assert not set(template.literals) & set(special), (name, vocab)


# --- importers ----------------------------------------------------------------------------

def test_claude_code_merges_messages_follows_the_main_chain_sidechains_and_compaction(tmp_path):
    path = write_lines(tmp_path / "session.jsonl", claude_docs(), CLAUDE_BAD)
    sessions, bad = read_all(path, "claude-code")
    assert len(bad) == 2 and {b.position for b in bad} == {f"{path}:15", f"{path}:16"}
    by_start = {s.id: s for s in sessions}
    pre, post, side = by_start[f"{path}:2"], by_start[f"{path}:13"], by_start[f"{path}:10"]
    assert len(sessions) == 3
    assert plain_text(pre) == ["Fix the bug in 12345",
                               'look first\nReading it.\n{"input": {"file_path": "a.py"}, "name": "Read"}',
                               "1→x = 1\r\n", "Done: x is 1."]  # one merged message; the rewound branch dropped
    assert pre.turns[2].segments[0] == ("<|im_start|>tool\n", S)  # a tool_result-only user record
    assert plain_text(post) == ["Summary: the bug is fixed.", "Continuing."]  # compaction starts a session
    assert plain_text(side) == ["sub task", "sub done"]
    assert [t.index for t in pre.turns] == [0, 1, 2, 3]


def test_claude_code_subagent_file_is_its_own_session(tmp_path):
    docs = [{**d, "isSidechain": True} for d in claude_docs()[9:11]]  # s1, s2 alone, as in subagents/*.jsonl
    sessions, bad = read_all(write_lines(tmp_path / "agent-1.jsonl", docs), "claude-code")
    assert not bad and [plain_text(s) for s in sessions] == [["sub task", "sub done"]]


def test_codex_uses_response_items_only_and_compaction_replaces_the_history(tmp_path):
    import zstandard

    path = write_lines(tmp_path / "rollout-2025-01-01T00-00-00-x.jsonl", codex_docs(), CODEX_BAD)
    zst = tmp_path / "rollout-2.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(path.read_bytes()))
    for file in (path, zst):
        sessions, bad = read_all(file, "codex")
        assert len(bad) == 2
        assert [plain_text(s) for s in sessions] == [
            ["<permissions>sandboxed</permissions>", "run the tests", "**Running**",
             '{"arguments": "{\\"command\\":[\\"pytest\\"]}", "name": "shell"}', "3 passed\r\n", "All 3 pass."],
            ["run the tests", "summary of the work so far", "now lint"],
            ["second summary", "ok"]]
        assert sessions[0].turns[0].segments[0] == ("<|im_start|>system\n", S)  # developer -> system alias
        assert sessions[1].id == f"{file}:13"


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_sharegpt_each_message_is_a_turn_in_every_file_kind(tmp_path, suffix):
    path = tmp_path / f"chats{suffix}"
    if suffix == ".jsonl":
        write_lines(path, SHAREGPT_RECORDS, SHAREGPT_BAD)
    elif suffix == ".json":
        path.write_text(json.dumps(SHAREGPT_RECORDS + [{"id": "y"}]), encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist([{"id": r.get("id"), "conversations": r["conversations"]}
                                             for r in SHAREGPT_RECORDS]), path)
    sessions, bad = read_all(path, "sharegpt")
    assert len(bad) == {".jsonl": 3, ".json": 1, ".parquet": 0}[suffix]
    first, second = sessions
    assert first.id == "conv-1" and plain_text(first) == ["be brief", "2+2?", "4", "and 3+3?", "6"]
    assert first.turns[1].segments[0] == ("<|im_start|>user\n", S)
    assert second.id.endswith({".jsonl": ":2", ".json": ":item1", ".parquet": ":row1"}[suffix])
    assert second.turns[0].segments[1] == ("hi <|endoftext|>", P)  # a typed look-alike stays plain


def test_openai_messages_content_parts_and_tool_calls(tmp_path):
    path = write_lines(tmp_path / "chats.jsonl", OPENAI_RECORDS, OPENAI_BAD)
    sessions, bad = read_all(path, "openai", template="deepseek-v3")
    assert len(bad) == 2 and len(sessions) == 1
    (trace,) = sessions
    assert trace.id == "7"
    assert plain_text(trace) == ["tools available", "weather\nin Paris?",
                                 '{"arguments": "{\\"city\\":\\"Paris\\"}", "name": "weather"}', "18°C",
                                 "It is 18°C."]
    assert trace.turns[3].segments[0] == ("<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>", S)


def test_tracelab_fills_recorded_lengths_deterministically(tmp_path):
    path = write_lines(tmp_path / "rounds.jsonl", TRACELAB_ROWS, TRACELAB_BAD)
    sessions, bad = read_all(path, "tracelab", template="plain")
    assert len(bad) == 3
    a, b = sessions
    assert (a.id, b.id) == ("tracelab:sA", "tracelab:sB")
    roles = [t.segments[0].text.split(":")[0] for t in a.turns]
    assert roles == ["user", "assistant", "tool", "assistant"]  # by round_index, zero sizes left out
    assert [len(t) for t in plain_text(a)] == [len("user: ") + 120 + 2, len("assistant: ") + 200 + 2,
                                               len("tool: ") + 900 + 2, len("assistant: ") + 160 + 2]
    assert [len(t) for t in plain_text(b)] == [len("user: ") + 1400 + 2, len("assistant: ") + 48 + 2,
                                               len("user: ") + 100 + 2]
    again, _ = read_all(path, "tracelab", template="plain")
    assert again == sessions


def test_unknown_format_and_missing_files_are_one_line_errors(tmp_path):
    from verify.errors import CorpusError

    with pytest.raises(ConfigError, match="unknown trace format"):
        open_traces(str(tmp_path), "nope")
    with pytest.raises(CorpusError):
        open_traces(str(tmp_path / "missing"), "codex")


# --- the agent-session generator ----------------------------------------------------------

def _boundaries(trace):
    for before, after in zip(trace.turns, trace.turns[1:]):
        a, b = before.segments[-1], after.segments[0]
        if a.allow_special == b.allow_special:  # the transcript joins them into one segment
            yield a, b


def _splits_literal(a, b, literals) -> bool:
    return any(a.text.endswith(lit[:i]) and b.text.startswith(lit[i:]) for lit in literals for i in range(1, len(lit)))


def test_agent_sessions_are_deterministic_and_split_the_hostile_shapes():
    first = [trace for shard in open_traces("agent:1:8").shards() for trace in shard.records()]
    assert [t.id for t in first] == [f"agent:1:{i}" for i in range(8)]
    assert first == list(generate_sessions(1, range(8), 8, "chatml"))
    assert generate_session(1, 3) == first[3] and generate_session(2, 3) != first[3]
    chatml = load_template("chatml")
    found = {shape: 0 for shape in SHAPES}
    for trace in first:
        for a, b in _boundaries(trace):
            plain = not a.allow_special
            found["digits"] += plain and a.text[-1:].isdigit() and b.text[:1].isdigit()
            found["whitespace"] += plain and a.text[-1:].isspace() and b.text[:1].isspace()
            found["crlf"] += a.text.endswith("\r") and b.text.startswith("\n")
            found["combining"] += plain and unicodedata.combining(b.text[0]) > 0
            found["zwj"] += a.text.endswith("\u200d") or b.text.startswith("\u200d")
            found["modifier"] += b.text[:1] in "\U0001F3FB\U0001F3FC\U0001F3FD\U0001F3FE\U0001F3FF"
            found["contraction"] += plain and a.text[-1:].isalpha() and b.text.startswith("'")
            found["long-run"] += len(a.text) > 100 and len(set(a.text[-100:] + b.text[:100])) == 1
            found["special-literal"] += plain and _splits_literal(a, b, SPECIAL_LOOKALIKES)
            found["structure"] += (not plain) and _splits_literal(a, b, chatml.literals)
            found["boundary"] += (not plain) and _splits_literal(a, b, chatml.special_tokens)
    assert all(found.values()), found
    # with a template whose structure is plain text, no structure shapes are promised
    assert "structure" not in describe(1, 8, "tekken")["shapes"]


def test_agent_corpus_has_a_few_sessions_past_a_million_characters():
    info = describe(0, 40)
    assert info["sessions_over_1m_chars"] == [11, 27]
    big = generate_session(0, 11)
    assert sum(t.chars for t in big.turns) > 1_000_000
    assert len(big.turns) < 120
    assert sum(t.chars for t in generate_session(0, 10).turns) < 100_000


# --- end to end: replay each format, tiktoken against itself --------------------------------

def _clean_fixture(tmp_path, fmt) -> Path:
    if fmt == "claude-code":
        return write_lines(tmp_path / "s.jsonl", claude_docs())
    if fmt == "codex":
        return write_lines(tmp_path / "rollout-x.jsonl", codex_docs())
    if fmt == "sharegpt":
        return write_lines(tmp_path / "c.jsonl", SHAREGPT_RECORDS)
    if fmt == "openai":
        return write_lines(tmp_path / "c.jsonl", OPENAI_RECORDS)
    return write_lines(tmp_path / "r.jsonl", TRACELAB_ROWS)


def _replay(tmp_path, traces, *extra) -> tuple[int, dict]:
    out = tmp_path / "out"
    code = cli.main(["replay", "--engine", "tiktoken-cl100k", "--reference", "tiktoken:cl100k_base",
                     "--traces", str(traces), "--out", str(out), "--in-process", "--workers", "1",
                     "--minimize-budget", "0", "--no-progress", *extra])
    return code, json.loads((out / "manifest.json").read_text())["counts"]


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "sharegpt", "openai", "tracelab"])
def test_replay_of_every_format_against_itself_has_no_findings(tmp_path, fmt):
    code, counts = _replay(tmp_path, _clean_fixture(tmp_path, fmt), "--format", fmt)
    assert code == 0, counts
    assert counts["findings"] == 0 and counts["samples"] > 0 and counts["verified"] == counts["samples"]


def test_replay_counts_bad_records_as_findings(tmp_path):
    path = write_lines(tmp_path / "s.jsonl", claude_docs(), CLAUDE_BAD)
    code, counts = _replay(tmp_path, path, "--format", "claude-code")
    assert code == 1 and counts["bad_records"] == 2 and counts["findings"] == 2


def test_replay_of_generated_agent_sessions(tmp_path):
    code, counts = _replay(tmp_path, "agent:1:2")
    assert code == 0 and counts["findings"] == 0 and counts["verified"] == counts["samples"] > 50
