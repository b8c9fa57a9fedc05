#!/usr/bin/env python3
"""A scripted stand-in for the model APIs that coding agents call.

Coding agents (Claude Code, Codex, Gemini CLI, Qwen Code, aider, OpenCode,
Copilot CLI, pi, Cline) are driven
in a real tmux pane while this server plays the model, so that their screens,
titles and hooks can be recorded offline. One process speaks all four wire
formats, streamed (SSE) and not:

  POST /v1/messages                     Anthropic Messages (Claude Code)
  POST /v1/responses                    OpenAI Responses (Codex)
  POST /v1/chat/completions             OpenAI Chat Completions (aider, Qwen Code)
  POST /v1beta/models/M:generateContent        Gemini (Gemini CLI, with
  POST /v1beta/models/M:streamGenerateContent  GOOGLE_GEMINI_BASE_URL)

Token counting and model lists get plausible answers; anything else gets a
404 with an empty JSON body, so no agent waits on an endpoint we do not know.

The script (--script FILE, read again whenever it changes) is JSON:

  {
    "turns": [
      {"match": "hello", "reply": {"text": "Hi there.", "seconds": 2, "chunks": 8}},
      {"match": "slow",  "reply": {"think": 8, "text": "Done thinking.", "seconds": 6}},
      {"match": "run",   "reply": {"shell": "sleep 5; echo ok", "text": "Running it."},
                         "after_tool": {"text": "The command printed ok.", "seconds": 1}}
    ],
    "default": {"text": "OK."},
    "aux": {"text": "Mock"}
  }

A reply is one of:
  {"text": T, "seconds": N, "chunks": K}  stream T in K pieces over N seconds
  {"think": N, ...}                       first stay silent for N seconds (SSE
                                          keep-alives only; none at all for
                                          Gemini), then go on
  {"shell": C, "text": T}                 call the agent's shell tool with the
                                          command C (the agent then asks to run it)

Which turn answers a request: the newest user-typed text in the request
(tagged context such as <system-reminder>...</system-reminder> removed) is
searched for each turn's "match" (case-insensitive); the first turn that
matches wins, else the next turn without "match" in order, else "default".
When the request ends with a tool result, the same turn's "after_tool"
answers (default: a short "Done."). A request that asks for a JSON schema
gets a small object that fits it; one that offers a single non-shell tool
(Qwen Code's respond_in_schema) gets a call to it. Requests that offer no
tools are the
agents' side calls (titles, topic checks, next-speaker checks) and get "aux",
unless the script sets "tools_optional": true (aider offers no tools: its
shell step is then a fenced ```bash block, which aider offers to run).

Use distinctive phrases as "match" ("write a file", not "write"): agents
send background requests (memory extraction, classifiers) whose text may
contain short words.

--log-bodies DIR writes each request body to DIR, numbered, to study the
agents' real request shapes. Every request path is logged to stderr.
"""

import argparse
import gzip
import json
import os
import re
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Tool names the agents give their shell tool, most specific first.
SHELL_TOOLS = ["Bash", "run_shell_command", "shell_command", "exec_command",
               "shell", "local_shell", "bash", "run_command", "run_commands"]

STATE = {"script": {}, "next_unmatched": 0, "count": 0, "log_dir": None}
LOCK = threading.Lock()


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- reading requests

def texts_of(content):
    """Plain text of a message's content in any of the four formats."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
        return "\n".join(out)
    return ""


def is_tool_result(msg):
    """Does this message carry a tool's result back to the model?"""
    if not isinstance(msg, dict):
        return False
    if msg.get("role") in ("tool", "function"):  # chat completions
        return True
    if msg.get("type") in ("function_call_output", "custom_tool_call_output",
                           "local_shell_call_output"):  # responses
        return True
    for part in msg.get("content") or msg.get("parts") or []:
        if isinstance(part, dict) and (part.get("type") == "tool_result"
                                       or "functionResponse" in part):
            return True
    return False


def conversation(api, body):
    """The request's messages, oldest first, in its own format."""
    if api == "gemini":
        return body.get("contents") or []
    if api == "responses":
        items = body.get("input")
        return items if isinstance(items, list) else [{"role": "user", "content": items}]
    return body.get("messages") or []


def last_user_text(messages):
    """The newest text a person typed (skipping tool results).

    Agents wrap context into the same message (<system-reminder>...,
    <environment_context>...): tagged blocks are dropped before matching.
    """
    for msg in reversed(messages):
        if not isinstance(msg, dict) or is_tool_result(msg):
            continue
        if msg.get("role") == "user":
            text = texts_of(msg.get("content") if "content" in msg else msg.get("parts"))
            text = re.sub(r"<([\w:.-]+)[^>]*>.*?</\1>", "", text, flags=re.S)
            if text.strip():
                return text
    return ""


def tool_names(api, body):
    names = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if api == "gemini":
            names += [f.get("name") for f in tool.get("functionDeclarations") or []]
        elif isinstance(tool.get("function"), dict):  # chat completions
            names.append(tool["function"].get("name"))
        else:  # anthropic, responses
            names.append(tool.get("name") or tool.get("type"))
    return [n for n in names if n]


def tool_schema(api, body, name):
    for tool in body.get("tools") or []:
        if api == "gemini":
            for f in tool.get("functionDeclarations") or []:
                if f.get("name") == name:
                    return f.get("parameters") or f.get("parametersJsonSchema") or {}
        elif isinstance(tool.get("function"), dict):
            if tool["function"].get("name") == name:
                return tool["function"].get("parameters") or {}
        elif tool.get("name") == name:
            return tool.get("input_schema") or tool.get("parameters") or {}
    return {}


def shell_call(api, body, command):
    """(tool name, arguments) that ask the agent to run `command`."""
    names = tool_names(api, body)
    name = next((n for n in SHELL_TOOLS if n in names), SHELL_TOOLS[0])
    props = tool_schema(api, body, name).get("properties") or {}
    args = {}
    if "cmd" in props:  # codex unified exec
        args["cmd"] = command
    elif props.get("command", {}).get("type") == "array":  # codex "shell"
        args["command"] = ["bash", "-lc", command]
    elif props.get("commands", {}).get("type") == "array":  # cline run_commands
        args["commands"] = [command]
    else:
        args["command"] = command
    if "description" in props:
        args["description"] = "Run a command for the mock scene"
    # Codex only asks (default approval policy) for commands that ask to
    # leave the sandbox.
    if "sandbox_permissions" in props:
        args["sandbox_permissions"] = "require_escalated"
    if "with_escalated_permissions" in props:
        args["with_escalated_permissions"] = True
    if "justification" in props:
        args["justification"] = "The mock scene wants to run this command."
    return name, args


def load_script():
    """The script, read again whenever its file changes (scenes can be edited live)."""
    path = STATE.get("script_path")
    if path:
        mtime = os.stat(path).st_mtime
        if mtime != STATE.get("script_mtime"):
            with open(path) as f:
                STATE["script"] = json.load(f)
            STATE["script_mtime"] = mtime
            log("script loaded:", path)
    return STATE["script"]


def choose_reply(api, body):
    """Pick the scripted reply for this request: (kind, reply)."""
    with LOCK:
        script = load_script()
    messages = conversation(api, body)
    has_tools = bool(tool_names(api, body))
    schema = schema_wanted(api, body)
    if schema is not None:  # a side call that wants JSON (titles, checks)
        return "aux-json", {"text": json.dumps(sample(schema))}
    names = tool_names(api, body)
    if len(names) == 1 and names[0] not in SHELL_TOOLS:
        # a side call that must answer through its one tool (Qwen Code's
        # respond_in_schema for its auto-mode classifier and checks)
        args = sample(tool_schema(api, body, names[0]) or {"type": "object"})
        return "aux-tool", {"_call": [names[0], args]}
    if not has_tools and not script.get("tools_optional"):
        return "aux", script.get("aux", {"text": "Mock"})
    user = last_user_text(messages).lower()
    after_tool = bool(messages) and is_tool_result(messages[-1])
    turn = None
    for t in script.get("turns", []):
        if t.get("match") and t["match"].lower() in user:
            turn = t
            break
    if turn is None and not after_tool:
        with LOCK:
            unmatched = [t for t in script.get("turns", []) if not t.get("match")]
            if STATE["next_unmatched"] < len(unmatched):
                turn = unmatched[STATE["next_unmatched"]]
                STATE["next_unmatched"] += 1
    if after_tool:
        return "after_tool", (turn or {}).get("after_tool", {"text": "Done."})
    if turn is None:
        return "default", script.get("default", {"text": "OK."})
    return "turn", turn.get("reply", {"text": "OK."})


def schema_wanted(api, body):
    """The JSON schema a side call asks its answer to follow, or None."""
    if api == "responses":
        fmt = (body.get("text") or {}).get("format") or {}
        return fmt.get("schema") if fmt.get("type") == "json_schema" else None
    if api == "chat":
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return (fmt.get("json_schema") or {}).get("schema") or {}
        return {} if fmt.get("type") == "json_object" else None
    if api == "gemini":
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            return config.get("responseJsonSchema") or config.get("responseSchema") or {}
    return None


def sample(schema):
    """A small value that fits a JSON schema (enough for titles and checks)."""
    kind = schema.get("type")
    kind = (kind[0] if isinstance(kind, list) else kind or "object").lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        keys = schema.get("required") or list(props)
        return {k: sample(props.get(k) or {"type": "string"}) for k in keys}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "Mock"


def pieces(text, chunks):
    """Split text into about `chunks` pieces, at word boundaries when possible."""
    chunks = max(1, int(chunks))
    words = re.findall(r"\S+\s*|\s+", text) or [text]
    per = max(1, -(-len(words) // chunks))
    return ["".join(words[i:i + per]) for i in range(0, len(words), per)]


def plan(reply):
    """The reply as (think seconds, text pieces, delay between pieces)."""
    text = reply.get("text", "")
    seconds = float(reply.get("seconds", 0.5))
    parts = pieces(text, reply.get("chunks", max(1, int(seconds * 4)))) if text else []
    delay = seconds / len(parts) if parts else 0
    return float(reply.get("think", 0)), parts, delay


# ---------------------------------------------------------------- the HTTP side

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-model/1"

    def log_message(self, fmt, *args):  # silence the default access log
        pass

    # -- plumbing

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        enc = self.headers.get("Content-Encoding", "").lower()
        if enc == "gzip":
            data = gzip.decompress(data)
        elif enc == "deflate":
            data = zlib.decompress(data)
        elif enc:
            log("  cannot decode Content-Encoding", enc)
        return data

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when we close
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        out = ""
        if event:
            out += f"event: {event}\n"
        out += "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
        self.wfile.write(out.encode())
        self.wfile.flush()

    def keepalive(self, seconds, ping=None, silent=False):
        """Stay silent for `seconds`, sending a keep-alive every half second.

        silent: write nothing at all. Gemini's SDK only parses a buffer that
        starts with "data:", so an SSE comment there stalls the whole stream.
        """
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(min(0.5, max(0, end - time.time())))
            if silent:
                continue
            if ping:
                ping()
            else:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()

    # -- routing

    def do_GET(self):
        log("GET", self.path)
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            model = {"id": "mock-model", "object": "model", "type": "model",
                     "display_name": "Mock Model", "created": 0, "owned_by": "mock"}
            return self.send_json(200, {"object": "list", "data": [model], "models": [],
                                        "has_more": False})
        return self.send_json(404, {})

    def do_HEAD(self):
        log("HEAD", self.path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        raw = self.read_body()
        path = self.path.split("?")[0]
        with LOCK:
            STATE["count"] += 1
            n = STATE["count"]
        if STATE["log_dir"]:
            name = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")[:60]
            stamp = time.strftime("%H%M%S")
            with open(os.path.join(STATE["log_dir"], f"{stamp}-{n:04d}-{name}.json"), "wb") as f:
                f.write(raw)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if path.endswith("/count_tokens"):
            log("POST", self.path, "(count tokens)")
            return self.send_json(200, {"input_tokens": 100})
        if path.endswith(":countTokens"):
            log("POST", self.path, "(count tokens)")
            return self.send_json(200, {"totalTokens": 100})
        if path.endswith("/messages"):
            api, handler = "anthropic", self.api_anthropic
        elif path.endswith("/responses"):
            api, handler = "responses", self.api_responses
        elif path.endswith("/chat/completions"):
            api, handler = "chat", self.api_chat
        elif ":generateContent" in path or ":streamGenerateContent" in path:
            api, handler = "gemini", self.api_gemini
        else:
            log("POST", self.path, "-> 404")
            return self.send_json(404, {})
        kind, reply = choose_reply(api, body)
        log("POST", self.path, f"#{n}", kind, json.dumps(reply)[:100])
        try:
            handler(body, reply)
        except (BrokenPipeError, ConnectionResetError):
            log("  client went away during #%d" % n)

    # -- Anthropic Messages API

    def api_anthropic(self, body, reply):
        model = body.get("model", "mock-model")
        think, parts, delay = plan(reply)
        call = reply.get("_call") or (shell_call("anthropic", body, reply["shell"])
                                      if "shell" in reply else None)
        usage = {"input_tokens": 10, "output_tokens": 10,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        stop = "tool_use" if call else "end_turn"
        blocks = []
        if parts:
            blocks.append({"type": "text", "text": "".join(parts)})
        if call:
            blocks.append({"type": "tool_use", "id": "toolu_mock%d" % STATE["count"],
                           "name": call[0], "input": call[1]})
        message = {"id": "msg_mock%d" % STATE["count"], "type": "message",
                   "role": "assistant", "model": model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            time.sleep(think + delay * len(parts))
            return self.send_json(200, dict(message, content=blocks, stop_reason=stop))
        self.start_sse()
        self.sse({"type": "message_start", "message": message}, "message_start")
        self.keepalive(think, lambda: self.sse({"type": "ping"}, "ping"))
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                self.sse({"type": "content_block_start", "index": i,
                          "content_block": {"type": "text", "text": ""}}, "content_block_start")
                for p in parts:
                    self.sse({"type": "content_block_delta", "index": i,
                              "delta": {"type": "text_delta", "text": p}}, "content_block_delta")
                    time.sleep(delay)
            else:
                self.sse({"type": "content_block_start", "index": i,
                          "content_block": dict(block, input={})}, "content_block_start")
                self.sse({"type": "content_block_delta", "index": i,
                          "delta": {"type": "input_json_delta",
                                    "partial_json": json.dumps(block["input"])}},
                         "content_block_delta")
            self.sse({"type": "content_block_stop", "index": i}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": 10}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # -- OpenAI Responses API (Codex)

    def api_responses(self, body, reply):
        n = STATE["count"]
        think, parts, delay = plan(reply)
        call = reply.get("_call") or (shell_call("responses", body, reply["shell"])
                                      if "shell" in reply else None)
        items = []
        if parts:
            items.append({"type": "message", "id": f"msg_{n}", "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": "".join(parts),
                                       "annotations": []}]})
        if call:
            item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                    "name": call[0], "arguments": json.dumps(call[1]), "status": "completed"}
            # A tool offered inside a namespace (Codex offers an MCP server's
            # tools so: {"type": "namespace", "name": "mcp__NAME", "tools":
            # [...]}) is called by its own name, with the namespace beside it.
            for t in body.get("tools") or []:
                ns = t.get("name", "") if t.get("type") == "namespace" else ""
                if ns and call[0].startswith(ns + "__"):
                    item["name"] = call[0][len(ns) + 2:]
                    item["namespace"] = ns
                    break
            items.append(item)
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 20}
        response = {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()),
                    "status": "in_progress", "model": body.get("model", "mock-model"),
                    "output": []}
        done = dict(response, status="completed", output=items, usage=usage)
        if not body.get("stream"):
            time.sleep(think + delay * len(parts))
            return self.send_json(200, done)
        self.start_sse()
        self.sse({"type": "response.created", "response": response}, "response.created")
        self.sse({"type": "response.in_progress", "response": response}, "response.in_progress")
        self.keepalive(think)
        for i, item in enumerate(items):
            if item["type"] == "message":
                self.sse({"type": "response.output_item.added", "output_index": i,
                          "item": dict(item, status="in_progress", content=[])},
                         "response.output_item.added")
                for p in parts:
                    self.sse({"type": "response.output_text.delta", "item_id": item["id"],
                              "output_index": i, "content_index": 0, "delta": p},
                             "response.output_text.delta")
                    time.sleep(delay)
            else:
                self.sse({"type": "response.output_item.added", "output_index": i,
                          "item": item}, "response.output_item.added")
            self.sse({"type": "response.output_item.done", "output_index": i, "item": item},
                     "response.output_item.done")
        self.sse({"type": "response.completed", "response": done}, "response.completed")

    # -- OpenAI Chat Completions (aider, Qwen Code)

    def api_chat(self, body, reply):
        n = STATE["count"]
        think, parts, delay = plan(reply)
        call = reply.get("_call")
        if "shell" in reply:
            if tool_names("chat", body):
                call = shell_call("chat", body, reply["shell"])
            else:  # no tools offered (aider): suggest the command in a fenced block
                parts = parts + ["\n\n```bash\n%s\n```\n" % reply["shell"]]
        model = body.get("model", "mock-model")
        usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        tool_calls = [{"index": 0, "id": f"call_{n}", "type": "function",
                       "function": {"name": call[0], "arguments": json.dumps(call[1])}}
                      ] if call else None
        finish = "tool_calls" if call else "stop"
        if not body.get("stream"):
            time.sleep(think + delay * len(parts))
            msg = {"role": "assistant", "content": "".join(parts) or None}
            if tool_calls:
                msg["tool_calls"] = [{k: v for k, v in t.items() if k != "index"}
                                     for t in tool_calls]
            return self.send_json(200, {"id": f"chatcmpl-{n}", "object": "chat.completion",
                                        "created": int(time.time()), "model": model,
                                        "choices": [{"index": 0, "message": msg,
                                                     "finish_reason": finish}],
                                        "usage": usage})

        def chunk(delta, finish_reason=None, **extra):
            return dict({"id": f"chatcmpl-{n}", "object": "chat.completion.chunk",
                         "created": int(time.time()), "model": model,
                         "choices": [{"index": 0, "delta": delta,
                                      "finish_reason": finish_reason}]}, **extra)
        self.start_sse()
        self.sse(chunk({"role": "assistant", "content": ""}))
        self.keepalive(think)
        for p in parts:
            self.sse(chunk({"content": p}))
            time.sleep(delay)
        if tool_calls:
            self.sse(chunk({"tool_calls": tool_calls}))
        self.sse(chunk({}, finish, usage=usage))
        self.sse("[DONE]")

    # -- Gemini generateContent / streamGenerateContent

    def api_gemini(self, body, reply):
        think, parts, delay = plan(reply)
        call = reply.get("_call") or (shell_call("gemini", body, reply["shell"])
                                      if "shell" in reply else None)
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20}

        def cand(ps, finish=None):
            c = {"content": {"role": "model", "parts": ps}, "index": 0}
            if finish:
                c["finishReason"] = finish
            out = {"candidates": [c], "modelVersion": "mock-model"}
            if finish:
                out["usageMetadata"] = usage
            return out
        call_part = [{"functionCall": {"name": call[0], "args": call[1]}}] if call else []
        if ":generateContent" in self.path:
            time.sleep(think + delay * len(parts))
            text_part = [{"text": "".join(parts)}] if parts else []
            return self.send_json(200, cand(text_part + call_part, "STOP"))
        if "alt=sse" not in self.path:  # a streamed JSON array
            time.sleep(think + delay * len(parts))
            return self.send_json(200, [cand([{"text": p}]) for p in parts]
                                  + [cand(call_part or [{"text": ""}], "STOP")])
        self.start_sse()
        self.keepalive(think, silent=True)
        for p in parts:
            self.sse(cand([{"text": p}]))
            time.sleep(delay)
        self.sse(cand(call_part or [{"text": ""}], "STOP"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--script", help="the scene's JSON script")
    ap.add_argument("--log-bodies", metavar="DIR", help="write each request body here")
    opts = ap.parse_args()
    if opts.script:
        STATE["script_path"] = opts.script
        load_script()
    if opts.log_bodies:
        os.makedirs(opts.log_bodies, exist_ok=True)
        STATE["log_dir"] = opts.log_bodies
    server = ThreadingHTTPServer(("127.0.0.1", opts.port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    log("listening on 127.0.0.1:%d" % server.server_address[1])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
