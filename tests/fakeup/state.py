"""The fake upstream's state, shared by all handler threads: its config (``/__fake/config``),
the request log (``/__fake/requests``) and the queue of scripted replies (``/__fake/enqueue``)."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections import deque
from typing import Any

from fakeup.policy import DEFAULT_FINAL_TEXT
from fakeup.policy import DEFAULT_TOOL_ARGS
from fakeup.policy import DEFAULT_TOOL_NAME
from fakeup.wire import Reply


class FakeState:
    """Config, request log and reply queue; shared by all handler threads."""

    CONFIG_KEYS = (
        "tool_name",
        "tool_args",
        "chunk_size",
        "chunk_delay",
        "force_stream",
        "final_text",
        "reject_long_names",
        "leak_as_text",
        "more_calls",
    )

    def __init__(
        self,
        *,
        tool_name: str = DEFAULT_TOOL_NAME,
        tool_args: Any = None,
        chunk_size: int = 0,
        chunk_delay: float = 0.0,
        force_stream: bool | None = None,
        final_text: str = DEFAULT_FINAL_TEXT,
        reject_long_names: bool = False,
        log_dir: str | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.config: dict[str, Any] = {
            "tool_name": tool_name,
            "tool_args": dict(DEFAULT_TOOL_ARGS) if tool_args is None else tool_args,
            "chunk_size": int(chunk_size or 0),
            "chunk_delay": float(chunk_delay or 0.0),
            "force_stream": force_stream,
            "final_text": final_text,
            "reject_long_names": bool(reject_long_names),
            "leak_as_text": False,
            "more_calls": [],
        }
        self.log_dir = log_dir
        self.queue: deque[Reply] = deque()
        self.records: list[dict] = []
        self.counter = 0
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)

    def update_config(self, changes: dict) -> dict:
        with self.lock:
            for key in self.CONFIG_KEYS:
                if key in changes:
                    value = changes[key]
                    if key == "chunk_size":
                        value = int(value or 0)
                    elif key == "chunk_delay":
                        value = float(value or 0.0)
                    elif key in ("reject_long_names", "leak_as_text"):
                        value = bool(value)
                    self.config[key] = value
            return dict(self.config)

    def snapshot_config(self) -> dict:
        with self.lock:
            return json.loads(json.dumps(self.config))

    def enqueue(self, spec: dict) -> int:
        headers = spec.get("headers") or {}
        pairs = list(headers.items()) if isinstance(headers, dict) else [tuple(p) for p in headers]
        chunks = None
        if spec.get("chunks_b64") is not None:
            chunks = [base64.b64decode(c) for c in spec["chunks_b64"]]
            body = b"".join(chunks)
        else:
            body = base64.b64decode(spec.get("body_b64") or "")
        reply = Reply(
            int(spec.get("status", 200)),
            pairs,
            body,
            chunks=chunks,
            chunk_size=spec.get("chunk_size"),
            chunk_delay=spec.get("chunk_delay"),
            summary=f"enqueued {spec.get('status', 200)}",
            source="enqueued",
        )
        with self.lock:
            self.queue.append(reply)
            return len(self.queue)

    def pop_queued(self) -> Reply | None:
        with self.lock:
            return self.queue.popleft() if self.queue else None

    def reset(self) -> None:
        with self.lock:
            self.queue.clear()
            self.records.clear()

    def add_record(self, record: dict) -> dict:
        with self.lock:
            self.counter += 1
            record["n"] = self.counter
            self.records.append(record)
        self.write_record(record)
        return record

    def write_record(self, record: dict) -> None:
        if not self.log_dir:
            return
        path = os.path.join(self.log_dir, f"{record['n']:04d}.json")
        with self.lock:
            text = json.dumps(record, indent=2, ensure_ascii=False)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def records_json(self) -> bytes:
        with self.lock:
            return json.dumps(self.records, ensure_ascii=False).encode()
