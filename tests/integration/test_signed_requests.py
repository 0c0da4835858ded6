"""A request the client signed over its bytes reaches the upstream as signed, through a real
mitmdump with the addon in regular mode: the official ``anthropic`` SDK's ``AnthropicBedrock``
signs each request with AWS Signature Version 4 (botocore's ``SigV4Auth``), whose canonical
request holds the body's SHA-256 and the value of every signed header
(https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html). A prompt
sentence added, a name changed upstream or ``accept-encoding`` rewritten would make Bedrock
answer 403 ``SignatureDoesNotMatch`` to every turn. The answer is not signed: a call in another
agent's vocabulary is still repaired.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import procs
from sdk import record_of

pytestmark = pytest.mark.integration

needs_addon = pytest.mark.skipif(not procs.ADDON_SCRIPT.exists(), reason="addon/toolvocab.py does not exist yet")

KEY, SECRET, REGION = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1"

BASH = {
    "name": "Bash",
    "description": "Run a shell command and return what it printed.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line to run."}},
        "required": ["command"],
    },
}

#: Bedrock's InvokeModel answer for Anthropic models is a Messages body: here a call in Codex's
#: vocabulary, ``shell`` with an argv, which the client's ``Bash`` takes as one command line.
ANSWER = {
    "id": "msg_bedrock_1",
    "type": "message",
    "role": "assistant",
    "model": "claude",
    "content": [{"type": "tool_use", "id": "toolu_b1", "name": "shell", "input": {"command": ["git", "status"]}}],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 10, "output_tokens": 5},
}


def _signature_holds(method: str, url: str, headers: dict[str, str], body: bytes) -> bool:
    """Whether the ``Authorization`` signature in ``headers`` is the one botocore computes for
    this request (the signed headers as they arrived, the body as it arrived) with the test's
    credentials: what Bedrock checks."""
    auth = headers[next(k for k in headers if k.lower() == "authorization")]
    signed = auth.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    amz_date = headers[next(k for k in headers if k.lower() == "x-amz-date")]
    picked = {k: v for k, v in headers.items() if k.lower() in signed}
    request = AWSRequest(method=method, url=url, headers=picked, data=body)
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(KEY, SECRET), "bedrock", REGION)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    return auth.rsplit("Signature=", 1)[1].strip() == expected


@needs_addon
def test_a_sigv4_signed_bedrock_request_reaches_the_upstream_as_signed_and_its_answer_is_repaired(
    fake_upstream, tmp_path
):
    fake_upstream.enqueue(json.dumps(ANSWER).encode(), headers={"content-type": "application/json"})
    px = procs.start_mitmdump(None, save_path=str(tmp_path / "flows.mitm"), home=tmp_path)
    try:
        sent: list[Any] = []
        # the SDK's own client class (its httpx, or httpx2 in anthropic 2.x), through the proxy
        with anthropic.DefaultHttpxClient(
            proxy=px.url, trust_env=False, timeout=30, event_hooks={"request": [sent.append]}
        ) as http_client:
            client = anthropic.AnthropicBedrock(
                aws_access_key=KEY,
                aws_secret_key=SECRET,
                aws_region=REGION,
                base_url=fake_upstream.url,
                http_client=http_client,
                max_retries=0,
            )
            message = client.messages.create(
                model="anthropic.claude-sonnet-4-20250514-v1:0",
                max_tokens=100,
                tools=[BASH],
                messages=[{"role": "user", "content": "What changed in the repository?"}],
            )
        # the client got its own tool: the answer is read and repaired as any
        assert [(b.type, b.name, b.input) for b in message.content] == [
            ("tool_use", "Bash", {"command": "git status"})
        ], message
        (got,) = fake_upstream.wait_requests(1)
        (request,) = sent
        assert "SignedHeaders=" in request.headers["authorization"]
        body = base64.b64decode(got["body_b64"])
        # the upstream got the bytes the client signed, every signed header as signed, and the
        # signature holds over what it got
        assert body == request.content, (body[:300], request.content[:300])
        signed = request.headers["authorization"].split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
        assert "accept-encoding" in signed  # the SDK signs it: toolvocab may not ask for identity
        received = {k.lower(): v for k, v in got["headers"].items()}
        assert {h: received.get(h) for h in signed} == {h: request.headers.get(h) for h in signed}
        assert _signature_holds("POST", str(request.url), got["headers"], body)
        (flow,) = px.flows()
        record = record_of(flow, "anthropic")
        assert record["request_changed"] is False and record["prompt_sentence"] is None, record
        assert any("signed over its bytes (AWS4-HMAC-SHA256)" in n for n in record["notes"]), record["notes"]
        assert record["response_changed"] is True, record
    finally:
        px.stop()
