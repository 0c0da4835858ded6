"""``tests/flowtool.py``: adopting a user's saved flow is one step and leaves nothing behind.

A flow of the corpus is made "dirty" the way a user's capture is — the client's own system
prompt in every system slot, injected context in the user turn, long tool descriptions, real-
looking credentials and cookies — and written to a scratch file; ``flowtool add`` must turn it
into a corpus file (in a scratch corpus, ``TOOLVOCAB_FLOWS_DIR`` semantics) that holds none of
that, replays as recorded and has its manifest entry. ``flowtool replay`` fails exactly where
tests/test_flows.py fails: a manifest expectation changed in a scratch corpus fails both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import flowreplay as fr
import flowtool

PROMPT = "PROPRIETARY-CLIENT-PROMPT You are SomeAgent, built by SomeCorp."
SECRET = "sk-live-0123456789abcdef"
SAMPLES = {
    "anthropic": "harness/br05-lowercase-bash-anthropic-sse.mitm",
    "openai_chat": "harness/br03-qwen-bash-openai_chat-json.mitm",
    "openai_responses": "harness/br25-json-encoded-argv-openai_responses-sse.mitm",
    "gemini": "harness/br30-withheld-shell-gemini-array.mitm",
}


def _dirty_body(dialect: str, body: dict) -> dict:
    body = json.loads(json.dumps(body))
    if dialect == "anthropic":
        body["system"] = [
            {"type": "text", "text": PROMPT},
            {"type": "text", "text": PROMPT + " 2", "cache_control": {"type": "ephemeral"}},
        ]
        body["messages"].insert(
            0,
            {
                "role": "user",
                "content": [{"type": "text", "text": "<system-reminder>\nPROPRIETARY context\n</system-reminder>"}],
            },
        )
        body["metadata"] = {"user_id": "device-1234"}
        for t in body["tools"]:
            t["description"] = "PROPRIETARY-CLIENT-PROMPT " * 20
    elif dialect == "openai_chat":
        body["messages"][0]["content"] = PROMPT
        body["messages"].insert(1, {"role": "developer", "content": [{"type": "text", "text": PROMPT}]})
    elif dialect == "openai_responses":
        body["instructions"] = PROMPT
        body["input"].insert(
            0, {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": PROMPT}]}
        )
        body["input"].insert(
            1,
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n<cwd>/home/someone</cwd>\n</environment_context>",
                    }
                ],
            },
        )
    else:
        body["systemInstruction"] = {"parts": [{"text": PROMPT}, {"text": PROMPT}]}
        body["contents"].insert(
            0,
            {
                "role": "user",
                "parts": [{"text": "This is the Gemini CLI. We are setting up the context for our chat."}],
            },
        )
    return body


def _dirty(dialect: str, rel: str, tmp_path):
    f = fr.load_flows(fr.REPO / "flows" / rel)[0]
    for label in ("saved", "original"):
        raw = fr.request_body(f.request) if label == "saved" else fr.original_request(f)
        data = json.dumps(_dirty_body(dialect, json.loads(raw))).encode()
        if label == "saved":
            f.request.content = data
        else:
            f.metadata[fr.META_REQUEST] = data
    f.request.headers["authorization"] = f"Bearer {SECRET}"
    f.request.headers["cookie"] = "session=abc"
    f.response.headers["set-cookie"] = "session=abc; Path=/"
    src = tmp_path / f"user-{dialect}.mitm"
    fr.write_flows(src, [f])
    return src


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    root = tmp_path / "flows"
    root.mkdir()
    monkeypatch.setattr(fr.files, "FLOWS_DIR", root)  # read there by every function that needs it
    return root


@pytest.mark.parametrize("dialect", sorted(SAMPLES))
def test_add_adopts_a_dirty_user_flow_in_one_step(corpus, tmp_path, dialect, capsys):
    src = _dirty(dialect, SAMPLES[dialect], tmp_path)
    assert flowtool.main(["check", str(src)]) == 1, "the dirty capture should be reported"
    assert flowtool.main(["add", str(src), f"mine {dialect}", "--bug", "BR-05"]) == 0, capsys.readouterr().out
    out = corpus / f"mine-{dialect.replace('_', '-')}-1.mitm"
    assert out.exists(), sorted(p.name for p in corpus.iterdir())
    data = out.read_bytes()
    assert b"PROPRIETARY" not in data and SECRET.encode() not in data and b"session=abc" not in data
    assert fr.leaks(out) == []
    with fr.Replayer() as r:
        for f in fr.load_flows(out):
            for seed in range(3):
                res = r.replay(f, seed)
                assert res.ok, fr.render_failure(f, res)
            record = f.metadata[fr.META_RECORD]
            body = fr.parse_json(fr.original_request(f))
            assert not fr.system_text_problems(dialect, body, None)
            assert not fr.system_text_problems(
                dialect, fr.parse_json(fr.request_body(f.request)), record.get("prompt_sentence")
            )
    entry = fr.read_manifest()["flows"][fr.rel(out)]
    assert entry["source"] == "user" and entry["dialect"] == dialect and entry["bugs"] == ["BR-05"]
    assert entry["client_calls"] == fr.client_call_keys(fr.load_flows(out)[0])
    assert not fr.semantic_problems(fr.load_flows(out)[0], entry)


def test_scrub_then_check_is_clean_and_bless_is_a_no_op(corpus, tmp_path, capsys):
    src = _dirty("openai_chat", SAMPLES["openai_chat"], tmp_path)
    assert flowtool.main(["scrub", str(src)]) == 0
    assert flowtool.main(["check", str(src)]) == 0
    capsys.readouterr()
    before = src.read_bytes()
    flowtool.main(["bless", str(src)])
    assert "unchanged" in capsys.readouterr().out
    assert flowtool.main(["replay", str(src)]) == 0
    assert flowtool.main(["diff", str(src)]) == 0
    assert src.read_bytes() == before


def test_bless_leaves_a_file_that_replays_as_saved_as_it_is(corpus, tmp_path, capsys):
    """A file every flow of which replays as saved is not written again (its saved record may
    lack fields a newer record has; rewriting it said "unchanged" and changed the file)."""
    src = tmp_path / "saved.mitm"
    src.write_bytes((fr.REPO / "flows" / SAMPLES["anthropic"]).read_bytes())
    before = src.read_bytes()
    flowtool.main(["bless", str(src)])  # exits 1: a copy outside flows/ has no manifest entry
    out = capsys.readouterr().out
    assert "unchanged" in out and "blessed" not in out, out
    assert src.read_bytes() == before


def test_replay_prints_a_readable_diff_when_the_recording_is_wrong(tmp_path, capsys):
    f = fr.load_flows(fr.REPO / "flows" / SAMPLES["anthropic"])[0]
    f.response.raw_content = f.response.raw_content.replace(b'"name":"Bash"', b'"name":"Shell"')
    path = tmp_path / "tampered.mitm"
    fr.write_flows(path, [f])
    assert flowtool.main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert "tool calls the client receives:" in out
    assert 'Shell {"command": "git status"}' in out and 'Bash {"command": "git status"}' in out
    assert "flowtool.py bless" in out


# -- flowtool replay checks what tests/test_flows.py checks ------------------------------------

MUTATED = "harness/br05-lowercase-bash-anthropic-sse.mitm"
MUTATIONS = {
    "client_calls": ("client_calls", ['bash {"command":"git status"}']),  # what the client must get
    "expected": ("expected", "leave"),  # repaired, said left
}


def _scratch_corpus(root):
    """A corpus of one flow of flows/ three times: as it is (the control) and under each mutation
    of its manifest table (``harness/<mutation>.mitm``)."""
    (root / "harness").mkdir(parents=True)
    manifest = fr.read_manifest(fr.REPO / "flows" / "MANIFEST.toml")
    tables = {}
    for mutation in (None, *MUTATIONS):
        name = MUTATED if mutation is None else f"harness/{mutation}.mitm"
        (root / name).write_bytes((fr.REPO / "flows" / MUTATED).read_bytes())
        entry = dict(manifest["flows"][MUTATED])
        if mutation:
            key, value = MUTATIONS[mutation]
            assert entry[key] != value
            entry[key] = value
        tables[name] = entry
    fr.write_manifest({"flows": tables}, root / "MANIFEST.toml", header=fr.MANIFEST_HEADER)


def test_replay_fails_where_test_flows_fails(corpus, capsys):
    _scratch_corpus(corpus)
    # tests/test_flows.py's per-file checks over the scratch corpus, in a pytest of its own
    env = dict(os.environ, TOOLVOCAB_FLOWS_DIR=str(corpus))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rf",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            str(fr.REPO / "tests" / "test_flows.py"),
            "-k",
            "replays_as_recorded or manifest_says or credentials or neutral_text",
        ],
        cwd=fr.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "2 failed, 10 passed" in run.stdout, run.stdout[-3000:]  # 4 checks x 3 files: the 2 mutated tables fail
    for mutation in (None, *MUTATIONS):
        name = MUTATED if mutation is None else f"harness/{mutation}.mitm"
        status = flowtool.main(["replay", str(corpus / name)])
        out = capsys.readouterr().out
        failed = [line for line in run.stdout.splitlines() if line.startswith("FAILED") and f"[{name}]" in line]
        if mutation is None:  # the control: both pass
            assert status == 0 and out.startswith(f"PASS {name}\n"), out
            assert not failed, run.stdout[-3000:]
        else:
            assert status == 1 and out.startswith(f"FAIL {name}\n"), out
            assert [f.split("::")[1].split("[")[0] for f in failed] == ["test_flow_does_what_the_manifest_says"], (
                run.stdout[-3000:]
            )
            why = (
                "the client receives"
                if mutation == "client_calls"
                else "expected the answer to reach the client unchanged"
            )
            assert f"{name}:\n      {why}" in out and f"{name}:\n  {why}" in run.stdout, (out, run.stdout[-3000:])
