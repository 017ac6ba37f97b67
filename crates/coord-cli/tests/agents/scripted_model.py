#!/usr/bin/env python3
"""A scripted model provider on loopback for driving real agent CLIs in tests.

Stdlib only. Prints the port it listens on (127.0.0.1, port 0 = any free) on stdout.
Serves the Anthropic Messages API (Claude Code: /v1/messages, SSE or JSON, plus a
count_tokens stub), the OpenAI Responses API (Codex: /v1/responses, SSE) and OpenAI chat
completions (Aider: /v1/chat/completions, JSON or SSE; Aider edits by text, so its
steps are {"text": …}, e.g. a file name and a fenced block in its whole-file format; the
step is the number of assistant answers already in the conversation).

Scripts: a JSON file ($SCRIPTS) maps names to lists of steps; a step is
{"tool": "<name or suffix>", "input": {...}} (the model calls that tool; with "force": true
even when the CLI does not offer it) or
{"text": "..."} (the model answers and stops). A conversation picks its script with
"SCRIPT:<name>" in a user message; the current step is the number of tool results
already in the conversation (Claude Code's ToolSearch round trips not counted). When
the step's tool is not offered but ToolSearch is (Claude Code 2.1.3xx defers MCP tools),
the model first calls ToolSearch with "select:<tool>". Requests without a script get
a plain text answer. Every request is logged as one JSON line to $FAKE_LOG.

A string "{{last.KEY}}" in a step's input is replaced by KEY (a dotted path) of the JSON
the last tool result carries (e.g. the task_id get_work answered), so a script can act on
what it was given.
"""
import json
import os
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPTS = json.load(open(os.environ["SCRIPTS"]))
LOG = os.environ.get("FAKE_LOG")
LOG_LOCK = threading.Lock()


def log(entry):
    if LOG:
        with LOG_LOCK, open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")


def texts(content):
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") in ("text", "input_text")]


def script_name(strings):
    for s in strings:
        m = re.search(r"SCRIPT:([A-Za-z0-9_\-]+)", s or "")
        if m:
            return m.group(1)
    return None


def resolve(wanted, offered):
    if wanted in offered:
        return wanted
    for name in offered:
        if name.endswith("__" + wanted):
            return name
    for name in offered:
        if name.endswith(wanted):
            return name
    return None


def parse_json(value):
    """The JSON a tool result carries, however the runtime wrapped it (a string, text
    blocks, an MCP result with content)."""
    if isinstance(value, str):
        try:
            return parse_json(json.loads(value))
        except ValueError:
            # Codex prefixes the tool's text ("Wall time: …\nOutput:\n{…}").
            start = value.find("{")
            if start > 0:
                return parse_json(value[start:])
            return None
    if isinstance(value, list):
        for b in value:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                found = parse_json(b["text"])
                if found is not None:
                    return found
        return None
    if isinstance(value, dict):
        if "content" in value and not any(k in value for k in ("success", "task_id")):
            inner = parse_json(value["content"])
            if inner is not None:
                return inner
        return value
    return None


def fill(obj, last):
    """`obj` with each "{{last.KEY}}" replaced from `last` (the parsed last result)."""
    if isinstance(obj, dict):
        return {k: fill(v, last) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fill(v, last) for v in obj]
    if isinstance(obj, str):
        m = re.fullmatch(r"\{\{last\.([A-Za-z0-9_.]+)\}\}", obj)
        if m:
            value = last
            for key in m.group(1).split("."):
                value = value.get(key) if isinstance(value, dict) else None
            return value
    return obj


def step_of(script, index):
    steps = SCRIPTS[script]
    return steps[min(index, len(steps) - 1)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, event, data):
        self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            return self.send_json({"data": [{"id": "fake-model", "object": "model"}], "object": "list"})
        self.send_json({"error": "not found"}, 404)

    def do_POST(self):
        path = self.path.split("?")[0]
        body = self.body()
        if path.endswith("/messages/count_tokens"):
            return self.send_json({"input_tokens": 10})
        if path.endswith("/messages"):
            return self.anthropic(body)
        if path.endswith("/responses"):
            return self.openai_responses(body)
        if path.endswith("/chat/completions"):
            return self.openai_chat(body)
        self.send_json({"error": "not found"}, 404)

    # --- Anthropic Messages (Claude Code) -------------------------------------------
    def anthropic(self, body):
        messages = body.get("messages", [])
        offered = [t.get("name") for t in body.get("tools") or [] if t.get("name")]
        user_texts = [t for m in messages if m.get("role") == "user" for t in texts(m.get("content"))]
        script = script_name(user_texts)
        # Tool uses of ToolSearch do not count as steps.
        search_ids = {b.get("id") for m in messages if m.get("role") == "assistant" and isinstance(m.get("content"), list)
                      for b in m["content"] if b.get("type") == "tool_use" and b.get("name") == "ToolSearch"}
        results = [b for m in messages if m.get("role") == "user" and isinstance(m.get("content"), list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        steps_done = len([r for r in results if r.get("tool_use_id") not in search_ids])
        last = results[-1] if results else None
        entry = {"api": "anthropic", "script": script, "turn": steps_done, "offered": offered,
                 "last_result": last.get("content") if last else None,
                 "last_is_error": last.get("is_error") if last else None}
        if script is not None and SCRIPTS.get(script, [{}])[0].get("record_context"):
            # Everything the model was given: where a hook's additional context lands is
            # the CLI's choice (Claude Code 2.1.330: a `role: system` entry of `messages`).
            entry["context"] = json.dumps(body)[:200000]
        if script is None or script not in SCRIPTS:
            blocks, stop = [{"type": "text", "text": "ok"}], "end_turn"
        else:
            step = step_of(script, steps_done)
            entry["step"] = step
            if "tool" in step:
                name = resolve(step["tool"], offered)
                full = step["tool"] if step["tool"].startswith("mcp__") else f"mcp__coord__{step['tool']}"
                query = f"select:{full}"
                # A tool ToolSearch could not find twice is not there (e.g. its MCP server was
                # not approved): give up instead of searching forever.
                searched = sum(1 for m in messages if m.get("role") == "assistant" and isinstance(m.get("content"), list)
                               for b in m["content"] if b.get("type") == "tool_use" and b.get("name") == "ToolSearch"
                               and (b.get("input") or {}).get("query") == query)
                if name is None and step.get("force"):
                    # Call it anyway: how a test shows the CLI refuses a tool it does not have.
                    name, tool_input = step["tool"], step.get("input", {})
                elif name is None and "ToolSearch" in offered and searched < 2:
                    name, tool_input = "ToolSearch", {"query": query, "max_results": 5}
                else:
                    tool_input = fill(step.get("input", {}), parse_json(last.get("content")) if last else None)
                if name is None:
                    entry["offered"] = offered
                    blocks, stop = [{"type": "text", "text": f"SCRIPT ERROR: tool {step['tool']} not offered"}], "end_turn"
                else:
                    entry["tool"] = name
                    blocks = [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": tool_input}]
                    stop = "tool_use"
            else:
                blocks, stop = [{"type": "text", "text": step.get("text", "done")}], "end_turn"
        log(entry)
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        mid = "msg_" + uuid.uuid4().hex[:20]
        model = body.get("model", "fake-model")
        if not body.get("stream"):
            return self.send_json({"id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
                                   "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.start_sse()
        self.sse("message_start", {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant",
                 "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                self.sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                self.sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                self.sse("content_block_start", {"type": "content_block_start", "index": i,
                         "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                self.sse("content_block_delta", {"type": "content_block_delta", "index": i,
                         "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            self.sse("content_block_stop", {"type": "content_block_stop", "index": i})
        self.sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                 "usage": {"output_tokens": 5}})
        self.sse("message_stop", {"type": "message_stop"})

    # --- OpenAI Responses (Codex) ---------------------------------------------------
    def openai_responses(self, body):
        items = body.get("input") or []
        user_texts = [t for it in items if isinstance(it, dict) and it.get("role") == "user" for t in texts(it.get("content"))]
        if isinstance(body.get("instructions"), str):
            user_texts.append(body["instructions"])
        script = script_name(user_texts)
        outputs = [it for it in items if isinstance(it, dict) and str(it.get("type", "")).endswith("call_output")]
        steps_done = len(outputs)
        # Offered tools: flat functions, and MCP namespaces (name "mcp__coord", tools inside).
        offered = {}
        for t in body.get("tools") or []:
            if t.get("type") == "namespace":
                for inner in t.get("tools") or []:
                    offered[f"{t['name']}__{inner.get('name')}"] = (t["name"], inner.get("name"))
            elif t.get("name"):
                offered[t["name"]] = (None, t["name"])
        # Freeform tools (Codex's apply_patch for models that have it): called with text.
        custom = {t["name"] for t in body.get("tools") or [] if t.get("type") == "custom" and t.get("name")}
        # What one request carries of coord: its MCP namespace, as Codex sends it.
        coord_ns = [t for t in body.get("tools") or [] if t.get("name") == "mcp__coord"]
        entry = {"api": "responses", "script": script, "turn": steps_done,
                 "coord_chars": sum(len(json.dumps(t)) for t in coord_ns),
                 "tool_types": sorted({str(t.get("type")) for t in body.get("tools") or []}),
                 "keys": sorted(body),
                 "last_result": outputs[-1].get("output") if outputs else None}
        if script is not None and SCRIPTS.get(script, [{}])[0].get("record_context"):
            # Everything the model was given (Codex puts AGENTS.md in the request's input).
            entry["context"] = json.dumps(body)[:200000]
        item = None
        if script is not None and script in SCRIPTS:
            step = step_of(script, steps_done)
            entry["step"] = step
            if "tool" in step:
                name = resolve(step["tool"], list(offered))
                if name is None:
                    entry["offered"] = list(offered)
                    text = f"SCRIPT ERROR: tool {step['tool']} not offered"
                else:
                    namespace, bare = offered[name]
                    entry["tool"] = name
                    if name in custom:
                        item = {"type": "custom_tool_call", "id": "ctc_" + uuid.uuid4().hex[:12],
                                "call_id": "call_" + uuid.uuid4().hex[:12], "name": bare,
                                "input": step.get("input", "")}
                    else:
                        item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:12],
                                "call_id": "call_" + uuid.uuid4().hex[:12], "name": bare,
                                "arguments": json.dumps(fill(step.get("input", {}),
                                                             parse_json(outputs[-1].get("output")) if outputs else None))}
                    if namespace:
                        item["namespace"] = namespace
            else:
                text = step.get("text", "done")
        else:
            text = "ok"
        if item is None:
            item = {"type": "message", "role": "assistant", "id": "msg_" + uuid.uuid4().hex[:12],
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
        log(entry)
        rid = "resp_" + uuid.uuid4().hex[:12]
        self.start_sse()
        self.sse("response.created", {"type": "response.created", "response": {"id": rid}})
        self.sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item})
        self.sse("response.completed", {"type": "response.completed", "response": {"id": rid, "usage": {
            "input_tokens": 10, "input_tokens_details": None, "output_tokens": 5, "output_tokens_details": None,
            "total_tokens": 15}}})


    # --- OpenAI chat completions (Aider) ---------------------------------------------
    def openai_chat(self, body):
        messages = body.get("messages") or []
        user_texts = [t for m in messages if m.get("role") == "user" for t in texts(m.get("content"))]
        script = script_name(user_texts)
        # Aider's few-shot examples are assistant turns too: count the ones after the
        # script's first mention.
        first = next((i for i, m in enumerate(messages) if m.get("role") == "user"
                      and script_name(texts(m.get("content"))) == script), len(messages))
        steps_done = sum(1 for m in messages[first:] if m.get("role") == "assistant")
        text = "ok"
        if script is not None and script in SCRIPTS:
            text = step_of(script, steps_done).get("text", "done")
        log({"api": "chat", "script": script, "turn": steps_done,
             "last_user": user_texts[-1][-2000:] if user_texts else None, "text": text})
        model = body.get("model", "fake-model")
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            return self.send_json({"id": cid, "object": "chat.completion", "created": 0, "model": model,
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": text}}],
                                   "usage": usage})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for delta, finish in (({"role": "assistant", "content": text}, None), ({}, "stop")):
            chunk = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
