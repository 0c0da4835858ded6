"""A stdlib fake LLM upstream for toolvocab's tests.

Listens on 127.0.0.1 (``ThreadingHTTPServer``), answers LLM API requests with scripted
responses, and records every request so a test can check what the proxy forwarded.

Modules: ``wire`` (request/reply types, JSON/SSE byte builders), ``policy`` (the scripted
behaviour below), one answer module per dialect (``anthropic``, ``openai_chat``,
``openai_responses``, ``gemini``), ``state`` (config, request log, reply queue), ``server``
(routes, handler, ``make_server``, ``FakeUpstream``), ``raw`` (a raw-socket upstream whose
chunked stream dies or stalls part-way, for the transport-fault tests).  The process entry is
``tests/fake_upstream.py``.

Run as a script::

    python tests/fake_upstream.py --port 0 [--log-dir DIR] [--tool-name NAME]
        [--tool-args JSON] [--chunk-size N] [--chunk-delay SECONDS] [--reject-long-names]

It prints ``READY <port>`` on stdout once it listens (``--port 0`` picks a free port).
Import it to run it in a thread instead: ``fakeup.server.FakeUpstream(port=0).start()``.

Dialects live in :data:`fakeup.server.ROUTES` (a dict: path regex -> handler):

  POST /v1/messages[?beta=true]          Anthropic Messages (JSON, or SSE when ``stream`` is true)
  POST [/prefix]/chat/completions        OpenAI Chat Completions: JSON, or SSE ``data:`` chunks
                                         (id/type/name in the first tool-call delta, arguments in
                                         fragments, ``finish_reason``, a usage-only chunk when
                                         ``stream_options.include_usage``, ``data: [DONE]``)
  POST [/prefix]/responses               OpenAI Responses: JSON, or SSE with ``event:`` lines
                                         (created, in_progress, output_item.added, *.delta x N,
                                         *.done, output_item.done, completed echoing tools/
                                         tool_choice/output). A tool name ``ns/name`` answers a
                                         call with ``namespace: "ns"``; a name declared as a
                                         ``custom`` tool answers a ``custom_tool_call``.
  POST /v1beta/models/M:generateContent  Gemini (also /v1, /v1alpha, Vertex-style paths): JSON
  POST …/models/M:streamGenerateContent  ``?alt=sse``: SSE, each event a complete response;
                                         without ``alt``: one JSON array written element by element
  POST …/models/M:countTokens            ``{"totalTokens": 100}``
  POST /v1internal:<method>              Gemini Code Assist: request under ``request``, every
                                         response (and SSE event) wrapped as ``{"response", "traceId"}``
  GET  [/v1|/v1beta]/models              a small model list (``data`` and Gemini ``models``)
  HEAD <any path>                        200, empty

Scripted behaviour (stateless, decided from the request alone, the same in every dialect):

  * tools declared and no tool result for the last call yet (Anthropic: the last user message
    holds no ``tool_result``; Chat: the last message is not ``role: tool``; Responses: the last
    input item is not a ``*_call_output``; Gemini: the last content holds no
    ``functionResponse``)
        -> ONE tool call named ``tool_name`` with arguments ``tool_args`` (Anthropic and Gemini
           precede it with a short text). ``tool_name`` ``re:<regex>`` names the first declared
           tool the regex finds (whatever name a proxy sent it under)
  * otherwise, if the conversation holds a tool result
        -> a final text answer: ``final_text`` + the last tool result's text
  * otherwise (no tools: OpenCode's title generation, Gemini CLI's routing classifier, ...)
        -> plain text, or, when structured output is requested (Gemini
           ``responseMimeType: application/json`` + ``responseJsonSchema``/``responseSchema``,
           Chat ``response_format``, Responses ``text.format``), a JSON document that fits the
           schema (first enum value, ``minimum`` for numbers, ...)

With ``reject_long_names`` (``--reject-long-names``), Chat Completions and Responses requests
that declare a tool name longer than 64 characters get OpenAI's real-looking 400
(``Invalid 'tools[N].function.name': string too long. ...``, ``code: string_above_max_length``).

Transport: with ``chunk_size > 0`` the body is written in ``chunk_size``-byte pieces using
HTTP/1.1 chunked transfer encoding (each piece flushed, ``chunk_delay`` seconds apart), so SSE
events, JSON and even tool names are split across transport chunks.

Control endpoints (never logged, never consume the queue):

  GET/POST /__fake/config    read / change tool_name, tool_args, chunk_size, chunk_delay,
                             force_stream (true/false/null), final_text, reject_long_names,
                             leak_as_text (Anthropic: the tool call as Hermes markup in the text),
                             more_calls (Anthropic: [[name, args], ...], the calls answered after
                             the 1st, 2nd, ... tool result, before the final text)
  POST /__fake/enqueue       {"status": int, "headers": {..} or [[k, v], ..],
                              "body_b64": "..." | "chunks_b64": ["...", ..],
                              "chunk_size"?: int, "chunk_delay"?: float}
                             -> the next (non-control) request is answered with exactly these
                                bytes. ``chunks_b64`` gives one transport chunk per item;
                                ``body_b64`` uses the chunk size (0 = Content-Length).
                                Content-Length / Transfer-Encoding are always set by the fake.
  GET  /__fake/requests      the logged requests, as a JSON list
  POST /__fake/reset         forget logged requests and queued replies

Each logged request is ``{"n", "time", "method", "path", "headers", "body", "body_b64",
"content_encoding", "reply"}``: ``body`` is the parsed JSON (after content-decoding) or the
raw text, ``body_b64`` the exact bytes received, ``reply`` = ``{"source": "generated" |
"enqueued" | "builtin", "status", "headers", "body_b64", "summary", "started_at",
"finished_at"}`` (``finished_at`` appears once the last byte was written; wall-clock
``time.time()``). With ``--log-dir`` each record is also written to ``DIR/NNNN.json``.
"""
