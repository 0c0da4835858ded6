"""toolvocab engine: declared tools + a tool call in, a decision (and its reason) out.

Knows nothing of mitmproxy, HTTP, SSE or any wire format.
"""
