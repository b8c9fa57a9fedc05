"""Scenarios 11 to 14 of scripts/bench: attention in everyday use.

11. attention all day: a private server with 50 panes in everyday use
    (shells at their prompts, a dev server logging a request every few
    seconds, a quiet build, `top -d 1`, `watch -n 1 date`, a line every
    second, an idle coding agent when TW_AGENTS has one), once with the
    plugin's attention on and once with it off, on fresh servers back to
    back: the CPU of the tmux server and of tmux-wait's processes over
    --day-seconds, per hour.
12. real programs: the time from a `/dev/tty` password prompt being
    written (echo off, as getpass does) to `tmux-wait any --until asking`
    returning, beside bash's `read -p` on stdin; and the CPU of `tmux-wait
    any --server --timeout 60` over `top` and `watch` against idle shells.
13. agents (TW_AGENTS): the time from a coding agent's approval question
    being drawn to `any --until asking` returning, without tmux-wait's
    hooks (screen and title) and with them.
14. busy panes: 200 panes under attention (shells at their prompts), 10 of
    them printing a line every 10 ms; the plugin's attention off and on:
    CPU per minute of the hub, the watch and the tmux server.

scripts/bench imports this file and calls configure() first; each
scenario adds its tables to a Tables object, printed after the main table.
Every tmux server, client and process a scenario starts is ended in its
`finally`, on Ctrl-C and on errors too.
"""

import glob
import json
import os
import pty
import random
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "tmux-wait")
ENV = dict(os.environ)
HZ = os.sysconf("SC_CLK_TCK")


def configure(bin_path, env):
    """The helper to measure and the environment to run tmux with."""
    global BIN, ENV
    BIN = bin_path
    ENV = dict(env)


def is_helper(argv0):
    """A process of the helper measured: `tmux-wait`, or the build
    TMUX_WAIT_BENCH_BIN names, whatever its file is called."""
    return os.path.basename(argv0) in ("tmux-wait", os.path.basename(BIN))


# ------------------------------------------------------------------ tables

class Tables:
    """The new scenarios' own tables (their columns differ from the main
    table's contenders), printed after it as markdown."""

    def __init__(self):
        self.items = []

    def add(self, title, header, rows, notes=()):
        self.items.append((title, header, rows, list(notes)))

    def note(self, title, text):
        self.items.append((title, None, [], [text]))

    def print(self, out=sys.stdout):
        for title, header, rows, notes in self.items:
            print("### " + title, file=out)
            print(file=out)
            if header:
                print("| " + " | ".join(header) + " |", file=out)
                print("|" + "|".join("---" if i == 0 else "---:"
                                     for i in range(len(header))) + "|", file=out)
                for r in rows:
                    print("| " + " | ".join(fmt(v) for v in r) + " |", file=out)
                print(file=out)
            for n in notes:
                print(n, file=out)
            if notes:
                print(file=out)


def fmt(v):
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, int):
        return str(v)
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    if abs(v) >= 1:
        return "%.2f" % v
    return "%.3f" % v


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def p99(xs):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------- /proc reads

def stat_fields(pid):
    """/proc/PID/stat from its state on (field 3 is index 0)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def own_cpu_ns(pid):
    """The scheduler's accounting of a live process's threads (schedstat)."""
    total = 0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return total


def thread_cpu_ns(pid):
    """{tid: schedstat ns} of a live process's threads."""
    out = {}
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                    out[int(t)] = int(f.read().split()[0])
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return out


def reaped_cpu_ns(pid):
    """The CPU of the children a process has reaped (cutime + cstime)."""
    f = stat_fields(pid)
    return (int(f[13]) + int(f[14])) * 10**9 // HZ if f else 0


def ppid_of(pid):
    f = stat_fields(pid)
    return int(f[1]) if f else 0


def start_time(pid):
    f = stat_fields(pid)
    return int(f[19]) if f else None


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def descendants(pid):
    kids = {}
    for p in all_pids():
        kids.setdefault(ppid_of(p), []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def machine_busy():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def alive(pid, started):
    """pid is still the process we started (not a reused pid)."""
    return started is not None and start_time(pid) == started


def end_pids(pids, grace=2.0):
    """TERM, then KILL after `grace`, each (pid, start time) still ours."""
    pids = [(p, s) for p, s in pids if alive(p, s)]
    for p, s in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except OSError:
            pass
    end = time.monotonic() + grace
    while time.monotonic() < end and any(alive(p, s) for p, s in pids):
        time.sleep(0.05)
    for p, s in pids:
        if alive(p, s):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


# --------------------------------------------------------- private servers

def run(cmd, env=None, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          env=env or ENV, **kw)


def tw_role(pid):
    """Which of tmux-wait's processes `pid` is: the plugin's watch
    (`serve`), the `hub`, or `other`."""
    c = " ".join(cmdline(pid)[1:])
    if " attention serve" in " " + c:
        return "serve"
    if re.search(r"(^| )hub( |$)", c):
        return "hub"
    return "other"


def sample_for(tw, seconds):
    """Sample `tw` (a ProcCpu) about every second for `seconds`; returns
    when the window began (time.monotonic())."""
    tw.sample()
    t0 = time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        tw.sample()
    return t0


class PrivateServer:
    """A private tmux server (-L a name unique to this run); close() ends
    it and everything it or we started for it: its panes' processes,
    tmux-wait's processes that name it, clients, recorders."""

    def __init__(self, tmp, tag, conf, width=120, height=40, env=None):
        self.name = "tw-bench-%d-%s" % (os.getpid(), tag)
        self.dir = os.path.join(tmp, tag)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "tmux.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.env = env or ENV
        self.width, self.height = width, height
        self.pid = None
        self.owned = []        # (pid, start time) of processes we started
        self.popens = []

    def tmux(self, *args, check=True):
        r = subprocess.run(["tmux", "-L", self.name] + list(args), capture_output=True,
                           text=True, env=self.env)
        if check and r.returncode != 0:
            raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def start(self, command=None):
        cmd = ["tmux", "-L", self.name, "-f", self.conf, "new-session", "-d", "-s", "main",
               "-x", str(self.width), "-y", str(self.height), "-P", "-F", "#{pane_id}"]
        pane = run(cmd + ([command] if command else []), env=self.env).stdout.strip()
        self.pid = int(self.tmux("display-message", "-p", "#{pid}").strip())
        self.owned.append((self.pid, start_time(self.pid)))
        return pane

    def new_window(self, command=None):
        args = ["new-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}"]
        return self.tmux(*(args + ([command] if command else []))).strip()

    def split(self, target, command=None):
        args = ["split-window", "-d", "-t", target, "-P", "-F", "#{pane_id}"]
        pane = self.tmux(*(args + ([command] if command else []))).strip()
        self.tmux("select-layout", "-t", target, "tiled")
        return pane

    def capture(self, pane):
        return self.tmux("capture-pane", "-p", "-t", pane, check=False)

    def command_of(self, pane):
        return self.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}",
                         check=False).strip()

    def type_line(self, pane, text):
        self.tmux("send-keys", "-t", pane, "-l", text)
        self.tmux("send-keys", "-t", pane, "Enter")

    def keys(self, pane, keys):
        for k in keys:
            if k.startswith("="):
                self.tmux("send-keys", "-t", pane, "-l", k[1:])
            else:
                self.tmux("send-keys", "-t", pane, k)

    def option(self, *args):
        return self.tmux("show-option", "-qv", *args, check=False).strip()

    def wait_until(self, what, cond, timeout=30.0, every=0.1):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return
            time.sleep(every)
        raise RuntimeError("%s: not within %g s" % (what, timeout))

    def popen(self, cmd, **kw):
        """A process of ours for this server, ended by close()."""
        kw.setdefault("env", self.env)
        p = subprocess.Popen(cmd, **kw)
        self.popens.append(p)
        self.owned.append((p.pid, start_time(p.pid)))
        return p

    def own(self, pid):
        self.owned.append((pid, start_time(pid)))

    def tw_pids(self):
        """tmux-wait's processes that name this server (`-L NAME`, or `-S`
        a path that ends in it)."""
        out = []
        for p in all_pids():
            c = cmdline(p)
            if c and is_helper(c[0]) and \
                    any(a == self.name or a.endswith("/" + self.name) for a in c):
                out.append(p)
        return out

    def socket_path(self):
        return os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), "tmux-%d" % os.getuid(),
                            self.name)

    def close(self):
        victims = list(self.owned)
        if self.pid and alive(*self.owned[0]):
            victims += [(p, start_time(p)) for p in descendants(self.pid)]
        victims += [(p, start_time(p)) for p in self.tw_pids()]
        subprocess.run(["tmux", "-L", self.name, "kill-server"], env=self.env,
                       capture_output=True)
        for p in self.popens:
            for stream in (p.stdin, p.stdout, p.stderr):
                try:
                    if stream:
                        stream.close()
                except OSError:
                    pass
        end_pids([v for v in victims if v[0] != os.getpid()])
        for p in self.popens:
            try:
                p.wait(timeout=1)
            except (subprocess.TimeoutExpired, OSError):
                pass
        # What tmux-wait started for it on its own (a hub that outlived a wait).
        end_pids([(p, start_time(p)) for p in self.tw_pids()])
        sock = self.socket_path()
        for path in [sock] + glob.glob(os.path.join(os.path.dirname(sock),
                                                    ".%s.tmux-wait-*" % self.name)):
            try:
                os.unlink(path)
            except OSError:
                pass


class AttachedClient:
    """A person's client: `tmux attach` on a pty of the server's size, its
    output read and dropped."""

    def __init__(self, server, session="main"):
        pid, fd = pty.fork()
        if pid == 0:
            try:
                import fcntl
                import struct
                import termios
                fcntl.ioctl(0, termios.TIOCSWINSZ,
                            struct.pack("HHHH", server.height, server.width, 0, 0))
                env = {k: v for k, v in server.env.items() if k not in ("TMUX", "TMUX_PANE")}
                env["TERM"] = "xterm-256color"
                os.execvpe("tmux", ["tmux", "-L", server.name, "attach-session", "-t", session],
                           env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        server.own(pid)
        self.stop = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        while not self.stop.is_set():
            try:
                r, _, _ = select.select([self.fd], [], [], 0.5)
                if r and not os.read(self.fd, 65536):
                    return
            except OSError:
                return

    def close(self):
        self.stop.set()
        try:
            os.kill(self.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


class ProcCpu:
    """The CPU of a changing set of processes over a window, sampled (every
    second or so): each thread's schedstat (a thread that ended counts as
    last seen; one born in the window from zero) and what each process
    reaped. A process that ended counts as last seen too, unless a process
    followed here reaped it (its parent's reaped CPU then has it)."""

    def __init__(self, find, role=lambda _pid: "all"):
        self.find, self.role = find, role
        self.first, self.last = {}, {}      # (pid, tid or "reaped") -> ns
        self.parent, self.roles = {}, {}
        self.started = False

    def sample(self):
        seen = set()
        for pid in self.find():
            vals = {(pid, t): v for t, v in thread_cpu_ns(pid).items()}
            vals[(pid, "reaped")] = reaped_cpu_ns(pid)
            if pid not in self.roles:
                self.parent[pid] = ppid_of(pid)
                self.roles[pid] = self.role(pid)
            for k, v in vals.items():
                if k not in self.first:
                    self.first[k] = v if not self.started else 0
                self.last[k] = v
            seen.add(pid)
        for k in list(self.last):
            pid = k[0]
            if pid not in seen and self.parent.get(pid) in seen:
                # Reaped by a process followed here: counted in its parent.
                del self.last[k]
        self.started = True

    def by_role(self):
        out = {}
        for k, v in self.last.items():
            r = self.roles[k[0]]
            out[r] = out.get(r, 0) + v - self.first[k]
        return out

    def total(self):
        return sum(self.by_role().values())


# ----------------------------------------------------------------- agents

def agents_cache():
    """TW_AGENTS's versions.env, or None."""
    d = os.environ.get("TW_AGENTS")
    if not d:
        return None
    path = os.path.join(d, "versions.env")
    try:
        with open(path) as f:
            return dict(l.rstrip("\n").split("=", 1) for l in f
                        if "=" in l and not l.startswith("#"))
    except OSError as e:
        raise SystemExit("bench: TW_AGENTS: cannot read %s (%s): run scripts/agents-install"
                         % (path, e))


# What each agent shows (the wording of the releases profiles/agents.json
# names, as the kit's scenes in tests/it/agents.rs drive them): first-run
# screens (marker, keys), idle and working markers, the approval question
# and its keys, what it shows once the approved command's turn ended.
AGENTS = {
    "claude-code": dict(
        key="CLAUDE_CODE", exe="claude", hooks=True,
        first_run=[("Choose the text style that looks best", ["Enter"]),
                   ("Security notes:", ["Enter"]),
                   ("Quick safety check", ["Down", "Enter"]),
                   ("Make auto mode your default permission mode?", ["Down", "Enter"])],
        idle="? for shortcuts", working="esc to interrupt",
        question="Do you want to proceed?", approve=["Enter"], after_question=None,
        after_text="The command finished", exit="/exit"),
    "codex": dict(
        key="CODEX", exe="codex", hooks=True,
        first_run=[("Trust this folder?", ["Enter"]),
                   ("Hooks need review", ["Down", "Enter"])],
        idle="Ask Codex to do anything", working="esc to interrupt", settle=15.0,
        question="Would you like to run the following command?", approve=["Enter"],
        after_question=None, after_text="The command finished", exit="/quit"),
    "gemini-cli": dict(
        key="GEMINI_CLI", exe="gemini", hooks=True,
        first_run=[("Do you trust the files in this folder?", ["Enter"]),
                   ("How would you like to authenticate", ["Enter"]),
                   ("Enter Gemini API Key", ["Enter"])],
        idle="Type your message or @path/to/file", working="esc to cancel",
        question="Allow execution of [Shell]?", approve=["Enter"], after_question=None,
        after_text="The command finished", exit="/quit"),
    "qwen-code": dict(
        key="QWEN_CODE", exe="qwen", hooks=True, first_run=[],
        idle="Type your message or @path/to/file", working="esc to cancel",
        question="Allow execution of:", approve=["Enter"], after_question=None,
        after_text="The command finished", exit="/quit"),
    "aider": dict(
        key="AIDER", exe="aider", hooks=False,
        first_run=[("Allow collection of anonymous analytics", ["=n", "Enter"]),
                   ("No git repo found", ["=y", "Enter"]),
                   ("Add .aider* to .gitignore", ["=y", "Enter"]),
                   ("Open documentation url for more info?", ["=n", "Enter"]),
                   ("Would you like to see what's new", ["=n", "Enter"])],
        idle="$diff>", working="Waiting for openai/mock-model",
        question="Run shell command?", approve=["Enter"],
        after_question="Add command output to the chat?", after_text="Added ", exit="/exit",
        inline=True),
    "opencode": dict(
        key="OPENCODE", exe="opencode", hooks=True, first_run=[],
        idle="ctrl+p commands", working="esc interrupt",
        question="Permission required", approve=["Enter"], after_question=None,
        after_text="The command finished", exit="/exit"),
    "copilot": dict(
        key="COPILOT", exe="copilot", hooks=False,
        first_run=[("Do you trust the files in this folder?", ["Enter"])],
        idle="open sidebar", working="Working",
        question="Do you want to run this command?", approve=["Enter"], after_question=None,
        after_text="The command finished", exit="/exit"),
    # (pi asks only before a dangerous command, with its permission-gate
    # extension.)
    "pi": dict(
        key="PI", exe="pi", hooks=False, first_run=[],
        idle="%/128k (auto)", working="Working...",
        question="Dangerous command:", approve=["Enter"], after_question=None,
        after_text="The command finished", exit="/quit",
        shell="mkdir -p mock-d%d && rm -rf mock-d%d && touch mock-s%d.txt && echo mock-done"),
    "cline": dict(
        key="CLINE", exe="cline", hooks=False,
        first_run=[("Press Enter to open, any other key to close", ["Escape"])],
        idle="Auto-approve all disabled", working="esc to cancel",
        question="Approve tool call?", approve=["=y"], after_question=None,
        after_text="The command finished", exit="/exit"),
}


def installed_agents(cache):
    return [n for n, a in AGENTS.items() if cache and (a["key"] + "_BIN") in cache
            and os.access(cache[a["key"] + "_BIN"], os.X_OK)]


class Mock:
    """tests/agents/mock_model.py on a free port, playing the model."""

    def __init__(self, server, dir):
        self.scene = os.path.join(dir, "scene.json")
        self.write_scene([])
        logf = open(os.path.join(dir, "mock.log"), "w")
        self.p = server.popen([sys.executable, os.path.join(ROOT, "tests", "agents",
                                                            "mock_model.py"),
                               "--port", "0", "--script", self.scene],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=logf)
        logf.close()
        line = self.p.stdout.readline()
        try:
            self.port = int(line.strip())
        except ValueError:
            raise RuntimeError("the mock model server printed no port: %r" % line)

    def write_scene(self, turns, tools_optional=False):
        scene = {"turns": turns, "default": {"text": "OK."}, "aux": {"text": "Mock"}}
        if tools_optional:
            scene["tools_optional"] = True
        tmp = self.scene + ".new"
        with open(tmp, "w") as f:
            json.dump(scene, f)
        os.replace(tmp, self.scene)


class AgentPane:
    """A coding agent typed at a bash prompt in a pane of `server`, with a
    private HOME and project, pointed at the mock model server."""

    def __init__(self, server, name, cache, dir):
        self.s, self.name, self.a = server, name, AGENTS[name]
        self.cache = cache
        self.dir = dir
        self.home = os.path.join(dir, "home")
        self.proj = os.path.join(dir, "proj")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.proj, exist_ok=True)
        subprocess.run(["git", "init", "-q", self.proj], capture_output=True)
        self.mock = Mock(server, dir)
        self.configure()
        self.pane = None

    def version(self):
        return self.cache.get(self.a["key"] + "_VERSION", "?")

    def configure(self):
        port = self.mock.port

        def write(rel, text):
            p = os.path.join(self.home, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        base = "http://127.0.0.1:%d" % port
        if self.name == "claude-code":
            # Manual mode: it asks before a command that writes a file.
            write(".claude/settings.json",
                  json.dumps({"permissions": {"defaultMode": "default"}}))
        elif self.name == "opencode":
            write(".config/opencode/opencode.json", json.dumps({
                "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                      "options": {"baseURL": base + "/v1", "apiKey": "dummy"},
                                      "models": {"mock-model": {"name": "Mock Model"}}}},
                "model": "mock/mock-model", "permission": {"bash": "ask"},
                "autoupdate": False, "share": "disabled"}))
        elif self.name == "pi":
            write(".pi/agent/models.json", json.dumps({"providers": {"mock": {
                "baseUrl": base + "/v1", "api": "openai-completions", "apiKey": "dummy",
                "models": [{"id": "mock-model"}]}}}))
        elif self.name == "cline":
            path = "%s:/usr/local/bin:/usr/bin:/bin" % self.cache[self.a["key"] + "_PATH"]
            subprocess.run(["cline", "auth", "-p", "openai", "-k", "dummy", "-m", "mock-model",
                            "-b", base + "/v1"], cwd=self.proj, capture_output=True,
                           env={"HOME": self.home, "PATH": path, "LANG": "C.UTF-8"},
                           check=True, timeout=120)
        elif self.name == "codex":
            write(".codex/config.toml",
                  'model = "mock-model"\nmodel_provider = "mock"\n\n'
                  '[model_providers.mock]\nname = "Mock"\n'
                  'base_url = "http://127.0.0.1:%d/v1"\nwire_api = "responses"\n'
                  'env_key = "MOCK_API_KEY"\n' % port)

    def env_and_command(self):
        base = "http://127.0.0.1:%d" % self.mock.port
        return {
            "claude-code": ({"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": "dummy",
                             "DISABLE_TELEMETRY": "1",
                             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}, "claude"),
            "codex": ({"MOCK_API_KEY": "dummy"}, "codex"),
            "gemini-cli": ({"GOOGLE_GEMINI_BASE_URL": base, "GEMINI_API_KEY": "dummy"},
                           "gemini"),
            "qwen-code": ({"OPENAI_BASE_URL": base + "/v1", "OPENAI_API_KEY": "dummy",
                           "OPENAI_MODEL": "mock-model"}, "qwen --approval-mode default"),
            "aider": ({"OPENAI_API_BASE": base + "/v1", "OPENAI_API_KEY": "dummy"},
                      "aider --model openai/mock-model --edit-format diff --no-check-update"),
            "opencode": ({}, "opencode"),
            "copilot": ({"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": base + "/v1",
                         "COPILOT_PROVIDER_API_KEY": "dummy", "COPILOT_MODEL": "mock-model",
                         "COPILOT_AUTO_UPDATE": "false"}, "copilot"),
            "pi": ({}, "pi --offline --provider mock --model mock-model -e %s -e %s" % (
                os.path.join(self.package_dir(), "examples/extensions/permission-gate.ts"),
                os.path.join(self.package_dir(), "examples/extensions/notify.ts"))),
            "cline": ({}, "cline -i --auto-approve false"),
        }[self.name]

    def package_dir(self):
        """Where its npm package is installed."""
        bindir = self.cache[self.a["key"] + "_PATH"].split(":")[0]
        return os.path.join(os.path.dirname(bindir), self.cache[self.a["key"] + "_PACKAGE"])

    def open(self, window=None):
        """Its bash (only the environment the agent needs), at a `$ ` prompt
        in the project: a new window, or a split of `window`."""
        env, _ = self.env_and_command()
        path = "%s:%s:/usr/local/bin:/usr/bin:/bin" % (self.cache[self.a["key"] + "_PATH"],
                                                      os.path.dirname(BIN))
        rc = "PS1='$ '\nunset PROMPT_COMMAND\nHISTFILE=/dev/null\n"
        for k, v in list(env.items()) + [("PATH", path)]:
            rc += "export %s='%s'\n" % (k, v)
        rc += "cd '%s'\n" % self.proj
        rcfile = os.path.join(self.dir, "agent-bashrc")
        with open(rcfile, "w") as f:
            f.write(rc)
        cmd = ("exec env -i HOME='%s' TERM=\"$TERM\" TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" "
               "LANG=C.UTF-8 TMPDIR=\"${TMPDIR:-/tmp}\" USER=\"${USER:-$(id -un)}\" "
               "PATH=/usr/bin:/bin bash --noprofile --rcfile '%s'" % (self.home, rcfile))
        self.pane = self.s.split(window, cmd) if window else self.s.new_window(cmd)
        self.s.wait_until("the agent pane's prompt",
                          lambda: self.s.capture(self.pane).rstrip().endswith("$"), 20)

    def screen(self):
        return self.s.capture(self.pane)

    def idle_now(self, screen):
        idle, working = self.a["idle"], self.a["working"]
        if idle.startswith("$"):
            rows = [r.strip() for r in screen.splitlines() if r.strip()]
            shows = bool(rows) and rows[-1] == idle[1:]
        else:
            shows = idle in screen
        return shows and working not in screen

    def start(self, timeout=150.0):
        """Type its command; answer each first-run screen until it is idle."""
        _, command = self.env_and_command()
        self.s.type_line(self.pane, command)
        end = time.monotonic() + timeout
        stable_since = None
        answered = set()
        while time.monotonic() < end:
            screen = self.screen()
            open_screen = next(((m, k) for m, k in self.a["first_run"]
                                if m in screen and m not in answered), None)
            if open_screen:
                # Each first-run screen answered once (inline agents keep
                # old ones on the screen), once it is drawn in full.
                m, keys = open_screen
                time.sleep(0.6)
                before = self.screen()
                self.s.keys(self.pane, keys)
                answered.add(m)
                try:
                    self.s.wait_until("the screen after '%s'" % m,
                                      lambda: self.screen() != before, 10, 0.1)
                except RuntimeError:
                    pass
                stable_since = None
                continue
            if self.idle_now(screen):
                # Idle for a while: Codex draws its idle screen for 3 s or
                # more (on a busy machine) before it asks to trust the
                # folder or its hooks.
                stable_since = stable_since or time.monotonic()
                if time.monotonic() - stable_since >= self.a.get("settle", 5.0):
                    return
            else:
                stable_since = None
            time.sleep(0.1)
        raise RuntimeError("%s did not become idle in %g s; its pane shows:\n%s"
                           % (self.name, timeout, self.screen()))

    def exit(self):
        """Its exit command; back at the shell's prompt; what it left
        running (Codex's daemon) ended."""
        self.s.tmux("send-keys", "-t", self.pane, "-l", self.a["exit"], check=False)
        time.sleep(0.5)
        self.s.keys(self.pane, ["Enter"])
        try:
            self.s.wait_until("the shell after %s" % self.a["exit"],
                              lambda: self.s.command_of(self.pane) == "bash", 20)
        except RuntimeError:
            self.s.keys(self.pane, ["Enter"])
            time.sleep(3)
        self.reap(keep_pane=True)

    def reap(self, keep_pane=False):
        """End every process started with the private HOME (the agent, its
        daemons, hooks), but the pane's bash when keep_pane."""
        keep = set()
        if keep_pane:
            keep.add(int(self.s.tmux("display-message", "-p", "-t", self.pane, "#{pane_pid}",
                                     check=False).strip() or 0))
        want = ("HOME=%s" % self.home).encode()
        found = []
        for p in all_pids():
            if p in keep or p == os.getpid():
                continue
            try:
                with open("/proc/%d/environ" % p, "rb") as f:
                    if want in f.read().split(b"\0"):
                        found.append((p, start_time(p)))
            except OSError:
                pass
        end_pids(found, grace=3.0)

    def install_hooks(self):
        # The agents' own directory variables would send the hook out of
        # the private home.
        env = {k: v for k, v in ENV.items()
               if k not in ("CLAUDE_CONFIG_DIR", "QWEN_HOME", "GEMINI_CLI_HOME",
                            "CODEX_HOME", "XDG_STATE_HOME")}
        env["HOME"] = self.home
        r = subprocess.run([BIN, "agents", "install", self.name], capture_output=True,
                           text=True, env=env)
        return r.returncode, (r.stderr or r.stdout).strip().splitlines()[:1]


# ------------------------------------------------- 11. attention all day

DAY_SHELL_RC = "PS1='$ '\nHISTFILE=/dev/null\nunset PROMPT_COMMAND\n"
TICKER = "while sleep 1; do echo \"tick $(date +%T)\"; done"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def day_conf(rc, attention, quiet):
    return ("set -g status on\n"
            "set -g status-right '#{tmux_wait_attention} %%H:%%M'\n"
            "set -g history-limit 5000\n"
            "set -g default-command \"exec bash --noprofile --rcfile '%s'\"\n"
            "set -g @tmux-wait-bin '%s'\n"
            "set -g @tmux-wait-download off\n"
            "set -g @tmux-wait-attention %s\n"
            "set -g @tmux-wait-quiet-seconds %g\n"
            % (rc, BIN, "on" if attention else "off", quiet))


def all_day_once(tmp, tag, attention, seconds, agent_name, cache, quiet=5):
    """One server of 50 panes in everyday use, the plugin loaded with
    attention on or off; CPU over `seconds` (ms) by process, and notes."""
    d = os.path.join(tmp, tag)
    os.makedirs(d, exist_ok=True)
    rc = os.path.join(d, "bashrc")
    with open(rc, "w") as f:
        f.write(DAY_SHELL_RC)
    env = dict(ENV, PATH=os.path.dirname(BIN) + ":" + ENV.get("PATH", "/usr/bin:/bin"))
    s = PrivateServer(tmp, tag, day_conf(rc, attention, quiet), env=env)
    stop = threading.Event()
    client = None
    agent = None
    try:
        first = s.start()
        # The plugin, as a tmux.conf's run-shell line loads it.
        s.tmux("run-shell", os.path.join(ROOT, "tmux-wait.tmux"))
        if attention:
            s.wait_until("attention watching",
                         lambda: s.option("-g", "@tmux-wait-attention-scope") != "", 30)
        # Ten windows of five panes (an agent takes a window of its own,
        # and one pane less in window 2); the client looks at window 0.
        windows = [first]
        panes = [first]
        for w in range(1, 10):
            windows.append(s.new_window())
            panes.append(windows[-1])
        for w in windows:
            for _ in range(4 if (w != windows[2] or not agent_name) else 3):
                panes.append(s.split(w))
        if agent_name:
            agent = AgentPane(s, agent_name, cache, os.path.join(d, "agent"))
            agent.open()
        client = AttachedClient(s)
        s.wait_until("50 shells at their prompts",
                     lambda: all(s.capture(p).rstrip().endswith("$") for p in panes), 60, 0.5)
        by_window = {}
        for p in panes:
            w = s.tmux("display-message", "-p", "-t", p, "#{window_index}").strip()
            by_window.setdefault(int(w), []).append(p)
        busy = by_window[1]
        port = free_port()
        dev, build, top, watch, ticker = busy[:5]
        s.type_line(dev, "python3 -m http.server %d --bind 127.0.0.1" % port)
        s.type_line(build, "sleep 600")
        s.type_line(top, "top -d 1")
        s.type_line(watch, "watch -n 1 date")
        s.type_line(ticker, TICKER)
        s.wait_until("the dev server", lambda: "Serving HTTP" in s.capture(dev), 20)
        s.wait_until("top", lambda: "load average" in s.capture(top), 20)
        s.wait_until("watch", lambda: "Every 1" in s.capture(watch), 20)
        s.wait_until("the build", lambda: s.command_of(build) == "sleep", 20)
        if agent:
            agent.start()
        hits = [0, 0]

        def requests():
            while not stop.wait(3.0):
                try:
                    urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=2).read()
                    hits[0] += 1
                except OSError:
                    hits[1] += 1
        threading.Thread(target=requests, daemon=True).start()
        # Past the quiet time, with room for the watch's last looks.
        time.sleep(quiet + 5)

        tw = ProcCpu(s.tw_pids, tw_role)
        load0 = loadavg()
        m0 = machine_busy()
        own0, r0 = own_cpu_ns(s.pid), reaped_cpu_ns(s.pid)
        t0 = sample_for(tw, seconds)
        server_own = own_cpu_ns(s.pid) - own0
        reaped = reaped_cpu_ns(s.pid) - r0
        elapsed = time.monotonic() - t0
        m1 = machine_busy()
        roles = tw.by_role()
        cpu = {"server": server_own / 1e6, "jobs": reaped / 1e6,
               "serve": roles.get("serve", 0) / 1e6, "hub": roles.get("hub", 0) / 1e6,
               "other": roles.get("other", 0) / 1e6}
        marks = [w for w in s.tmux("list-windows", "-t", "main", "-F",
                                   "#{window_index}:#{@tmux-wait-attention-window}").split()
                 if not w.endswith(":")]
        notes = {
            "elapsed": elapsed,
            "load": "%s -> %s" % (load0, loadavg()),
            "busy": (m1[0] - m0[0]) / max(1, m1[1] - m0[1]) * os.cpu_count(),
            "segment": s.option("-g", "@tmux_wait_attention"),
            "marks": marks,
            "requests": hits[0],
            "failed": hits[1],
            "tw_procs": sorted(set(tw.roles.values())),
        }
        return cpu, notes
    finally:
        stop.set()
        if client:
            client.close()
        if agent:
            agent.reap()
        s.close()


def scenario_all_day(tmp, args, tables):
    seconds = args.day_seconds
    cache = agents_cache()
    agents = installed_agents(cache)
    agent = None
    skipped = None
    if args.day_agent:
        if args.day_agent not in agents:
            skipped = "--day-agent %s is not installed in TW_AGENTS" % args.day_agent
        else:
            agent = args.day_agent
    elif agents:
        agent = agents[0]
    else:
        skipped = "TW_AGENTS is not set" if cache is None else "no agent in TW_AGENTS"
    runs = {"off": [], "on": []}
    notes = {"off": [], "on": []}
    order = []
    for r in range(args.day_rounds):
        order += ["off", "on"] if r % 2 == 0 else ["on", "off"]
    for i, mode in enumerate(order):
        log("scenario 11: attention %s, round %d, %g s" % (mode, i // 2 + 1, seconds))
        agent_used = agent
        try:
            cpu, n = all_day_once(tmp, "allday%d-%s" % (i, mode), mode == "on", seconds,
                                  agent_used, cache)
        except RuntimeError as e:
            if not agent_used:
                raise
            log("scenario 11: with %s: %s; again without the agent" % (agent_used, e))
            skipped = "%s did not start (%s)" % (agent_used, str(e).splitlines()[0])
            agent = None
            cpu, n = all_day_once(tmp, "allday%db-%s" % (i, mode), mode == "on", seconds,
                                  None, cache)
        runs[mode].append({k: v * 3600.0 / n["elapsed"] / 1e3 for k, v in cpu.items()})
        notes[mode].append(n)
    labels = [("server", "tmux server (its own CPU)"),
              ("jobs", "jobs the tmux server ran and reaped (run-shell, the plugin's scripts)"),
              ("serve", "`tmux-wait attention serve`"),
              ("hub", "`tmux-wait hub`"),
              ("other", "other tmux-wait processes naming the server")]
    rows = []
    tot = {"off": 0.0, "on": 0.0}
    for k, label in labels:
        off = median([r[k] for r in runs["off"]])
        on = median([r[k] for r in runs["on"]])
        tot["off"] += off
        tot["on"] += on
        rows.append([label, off, on, on - off, "%.3f %%" % (on / 36.0)])
    rows.append(["all of them", tot["off"], tot["on"], tot["on"] - tot["off"],
                 "%.3f %%" % (tot["on"] / 36.0)])
    tw_on = sum(median([r[k] for r in runs["on"]]) for k in ("serve", "hub", "other"))
    rows.append(["tmux-wait's processes alone", 0.0 if not runs["off"] else
                 sum(median([r[k] for r in runs["off"]]) for k in ("serve", "hub", "other")),
                 tw_on, "", "%.3f %%" % (tw_on / 36.0)])
    text = []
    for mode in ("off", "on"):
        for n in notes[mode]:
            text.append("- attention %s: %.1f s measured; load average %s; the machine busy "
                        "%.2f of %d cores; %d requests to the dev server (%d failed); "
                        "status segment at the end %r; windows marked %s; tmux-wait processes "
                        "seen: %s" % (mode, n["elapsed"], n["load"], n["busy"], os.cpu_count(),
                                      n["requests"], n["failed"], n["segment"],
                                      n["marks"] or "none", ", ".join(n["tw_procs"]) or "none"))
    text.append("- panes: 50 (10 windows of 5%s, one client attached to window 0): %s shells "
                "at their prompts, `python3 -m http.server` (a request every 3 s), "
                "`sleep 600`, `top -d 1`, `watch -n 1 date`, a line every second%s. "
                "@tmux-wait-quiet-seconds 5; the plugin loaded both times, attention on or off."
                % ("; the agent in an eleventh window, window 2 one pane less" if agent else "",
                   44 if agent else 45,
                   ", an idle %s %s" % (agent, cache.get(AGENTS[agent]["key"] + "_VERSION"))
                   if agent else ""))
    if not agent:
        text.append("- no coding agent pane: %s." % skipped)
    tables.add("11. attention all day: CPU seconds per hour (%g s measured each, "
               "extrapolated)" % seconds,
               ["process", "attention off (s/h)", "attention on (s/h)", "on - off (s/h)",
                "on, share of one core"], rows, text)


# ------------------------------------ 14. many panes, some of them busy

BUSY_LINES = ("import itertools, sys, time\n"
              "for i in itertools.count():\n"
              "    print('busy line %d' % i, flush=True)\n"
              "    time.sleep(0.01)\n")


def busy_once(tmp, tag, attention, panes, busy, seconds):
    """A server of `panes` panes, `busy` of them printing a line every 10
    ms and the rest shells at their prompts, with the plugin loaded and
    attention on or off; the CPU of tmux-wait's processes and of the tmux
    server over `seconds` (ms), by role."""
    d = os.path.join(tmp, tag)
    os.makedirs(d, exist_ok=True)
    rc = os.path.join(d, "bashrc")
    with open(rc, "w") as f:
        f.write(DAY_SHELL_RC)
    prog = os.path.join(d, "busy.py")
    with open(prog, "w") as f:
        f.write(BUSY_LINES)
    env = dict(ENV, PATH=os.path.dirname(BIN) + ":" + ENV.get("PATH", "/usr/bin:/bin"))
    s = PrivateServer(tmp, tag, day_conf(rc, attention, 5), env=env)
    try:
        first = s.start()
        all_panes = [first]
        window = first
        while len(all_panes) < panes:
            if len(all_panes) % 5 == 0:
                window = s.new_window()
                all_panes.append(window)
            else:
                all_panes.append(s.split(window))
        s.wait_until("%d shells at their prompts" % panes,
                     lambda: all(s.capture(p).rstrip().endswith("$") for p in all_panes),
                     120, 0.5)
        for p in all_panes[:busy]:
            s.type_line(p, "exec python3 %s" % prog)
        s.wait_until("the busy panes", lambda: all(
            "busy line" in s.capture(p) for p in all_panes[:busy]), 30)
        # The plugin, as a tmux.conf's run-shell line loads it.
        s.tmux("run-shell", os.path.join(ROOT, "tmux-wait.tmux"))
        if attention:
            s.wait_until("attention watching",
                         lambda: s.option("-g", "@tmux-wait-attention-scope") != "", 30)
        # Every pane's stream joined, and the first looks over.
        time.sleep(5)

        tw = ProcCpu(s.tw_pids, tw_role)
        own0, r0 = own_cpu_ns(s.pid), reaped_cpu_ns(s.pid)
        t0 = sample_for(tw, seconds)
        elapsed = time.monotonic() - t0
        roles = tw.by_role()
        cpu = {"server": (own_cpu_ns(s.pid) - own0) / 1e6,
               "jobs": (reaped_cpu_ns(s.pid) - r0) / 1e6,
               "serve": roles.get("serve", 0) / 1e6, "hub": roles.get("hub", 0) / 1e6,
               "other": roles.get("other", 0) / 1e6}
        return {k: v * 60.0 / elapsed for k, v in cpu.items()}, elapsed
    finally:
        s.close()


def scenario_busy_panes(tmp, args, tables):
    panes, busy, seconds = args.busy_panes, min(10, args.busy_panes), args.busy_seconds
    got = {}
    for mode in ("off", "on"):
        log("scenario 14: %d panes, %d busy, attention %s, %g s" % (panes, busy, mode, seconds))
        got[mode] = busy_once(tmp, "busy-%s" % mode, mode == "on", panes, busy, seconds)
    labels = [("server", "tmux server (its own CPU)"),
              ("jobs", "jobs the tmux server ran and reaped"),
              ("serve", "`tmux-wait attention serve` (the watch of every pane)"),
              ("hub", "`tmux-wait hub` (the pipes, the sieve)"),
              ("other", "other tmux-wait processes naming the server")]
    rows = []
    for k, label in labels:
        off, on = got["off"][0][k], got["on"][0][k]
        rows.append([label, off, on, on - off])
    tw = sum(got["on"][0][k] for k in ("serve", "hub", "other"))
    rows.append(["tmux-wait's processes, attention on", "", tw,
                 "%.2f %% of one core" % (tw / 600.0)])
    tables.add("14. %d panes under attention, %d of them printing a line every 10 ms: "
               "CPU ms per minute (%g s measured each way)" % (panes, busy, seconds),
               ["process", "attention off (ms/min)", "attention on (ms/min)", "on - off"],
               rows,
               ["- panes: %d bash shells at their prompts in windows of 5, %d of them "
                "running a Python loop that prints a line and sleeps 10 ms; the plugin "
                "loaded both times; no client attached." % (panes, busy)])


# --------------------------------------------------- 15. a day of panes

def scenario_soak(tmp, args, tables):
    """The lifecycle soak (tests/it/lifecycle/soak.rs) at full size: panes
    made and destroyed through every event of a pane's life, with the
    plugin's attention and `any --ndjson` on one server; the idle after
    each round, and what each process holds in the first and last rounds."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TW_SOAK_PANES=str(args.soak_panes))
    for k in ("TMUX", "TMUX_PANE", "TMUX_WAIT_MAX_SECONDS"):
        env.pop(k, None)
    cmd = ["cargo", "test", "--locked", "--release", "--test", "it",
           "lifecycle::soak", "--", "--nocapture"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    lines = (out.stdout + out.stderr).splitlines()
    failed = []
    if out.returncode != 0:
        failed = [l.strip() for l in lines
                  if "grew over" in l or "not at idle" in l or "timed out" in l][:3] or \
            [l.strip() for l in lines[-3:]]
    held = []
    for l in lines:
        m = re.match(r"soak: (.+): at most (\d+) descriptors and (\d+) kB in the first (\d+) "
                     r"rounds, (\d+) and (\d+) kB in the last", l)
        if m:
            name, fa, ma, k, fb, mb = m.groups()
            held.append([name, int(fa), int(fb), int(ma), int(mb),
                         "%+.1f %%" % (100.0 * (int(mb) - int(ma)) / max(1, int(ma)))])
    idle = []
    for l in lines:
        if l.startswith("after round "):
            for part in l.split(": ", 1)[1].split("; "):
                m = re.match(r"(.+) \(\d+\): (\d+) ticks, (\d+) wakeups", part)
                if m:
                    idle.append((m.group(1), int(m.group(2)), int(m.group(3))))
    made = next((l for l in lines if l.startswith("soak: ") and "panes made and destroyed" in l),
                "")
    worst = {}
    for name, t, w in idle:
        a, b = worst.get(name, (0, 0))
        worst[name] = (max(a, t), max(b, w))
    rows = [[n, worst[n][0], worst[n][1]] for n in sorted(worst)]
    tables.add("15. a day of panes: the most each process used in 2 s once the quiet time "
               "had passed, over every round",
               ["process", "clock ticks (most)", "wakeups (most)"], rows,
               ["- %s (%.0f s with the build)." % (made[len("soak: "):], took)])
    tables.add("15. a day of panes: what each process held, the most in the first and in the "
               "last quarter of the rounds",
               ["process", "descriptors first", "descriptors last", "memory first (kB)",
                "memory last (kB)", "memory change"], held,
               ["- compared from the round where tmux's message log (every command a client "
                "sends, up to message-limit lines) is full."] +
               ["- the test failed: %s" % f for f in failed])


# --------------------------------------------------- 12. real programs

# A password prompt read from /dev/tty, as getpass does: echo off, the
# time taken just before the prompt's write(2), then the answer read.
PASSWORD_PROGRAM = r"""
import os, sys, termios, time
fifo, results = sys.argv[1], sys.argv[2]
out = open(results, "a", buffering=1)
while True:
    with open(fifo) as f:
        for line in f:
            op, _, arg = line.strip().partition(" ")
            if op != "p":
                continue
            fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
            old = termios.tcgetattr(fd)
            new = termios.tcgetattr(fd)
            new[3] &= ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSAFLUSH, new)
            try:
                t = time.monotonic_ns()
                os.write(fd, b"Password: ")
                os.read(fd, 4096)
            finally:
                termios.tcsetattr(fd, termios.TCSAFLUSH, old)
                os.write(fd, b"\r\n")
                os.close(fd)
            out.write("%s %d\n" % (arg, t))
"""

# bash's `read -p` on standard input: the time ($EPOCHREALTIME, taken
# just before the read builtin writes its prompt) is written after the answer.
READ_P_PROGRAM = r"""
exec 3<"$1"
while read -r op id <&3; do
    t=$EPOCHREALTIME
    read -r -p "Continue? [y/N] " ans
    echo "$id $t" >>"$2"
done
"""


class Asker:
    """A pane whose program asks when told to, through a FIFO; the time it
    took before writing the question, from its results file."""

    def __init__(self, server, kind, command):
        self.s, self.kind = server, kind
        self.fifo = os.path.join(server.dir, "fifo-" + kind)
        self.results = os.path.join(server.dir, "results-" + kind)
        os.mkfifo(self.fifo)
        open(self.results, "w").close()
        self.pane = server.new_window("%s %s %s" % (command, self.fifo, self.results))
        self.writer = None

    def ask(self, mark):
        if self.writer is None:
            self.writer = open(self.fifo, "w", buffering=1)
        self.writer.write(("p %s\n" if self.kind == "password" else "q %s\n") % mark)
        self.writer.flush()

    def answer(self):
        self.s.keys(self.pane, ["=n", "Enter"])

    def time_of(self, mark, deadline=10.0):
        """ns: CLOCK_MONOTONIC (password) or the realtime clock (read -p)."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            with open(self.results) as f:
                for line in f:
                    k, _, t = line.strip().partition(" ")
                    if k == mark:
                        if "." in t:
                            sec, frac = t.split(".")
                            return int(sec) * 10**9 + int(frac.ljust(9, "0")[:9])
                        return int(t)
            time.sleep(0.002)
        raise RuntimeError("%s: the question %s was never asked" % (self.kind, mark))

    def close(self):
        if self.writer:
            try:
                self.writer.close()
            except OSError:
                pass


def arm_any(server, targets, extra, timeout=30):
    """`tmux-wait any ... --json --ready CH`, armed (the channel signalled)."""
    ready = "bench-ready-%d-%d" % (os.getpid(), random.getrandbits(40))
    cmd = [BIN, "-L", server.name, "any"] + targets + ["--json", "--ready", ready,
                                                       "--timeout", str(timeout)] + extra
    p = server.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sync = subprocess.Popen(["tmux", "-L", server.name, "wait-for", ready], env=server.env)
    try:
        sync.wait(timeout=60)
    except subprocess.TimeoutExpired:
        sync.kill()
        sync.wait()
        p.kill()
        raise RuntimeError("any was not armed: %s" % p.stderr.read().decode(errors="replace"))
    return p


class Reaped:
    """A child's exit, taken the moment wait4 returns (its own thread), with
    its first stdout line and when that line came."""

    def __init__(self, p):
        self.p = p
        self.done = threading.Event()
        self.line, self.t_line = b"", None
        self.t_exit = self.t_exit_real = None
        self.rusage = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        self.line = self.p.stdout.readline()
        self.t_line = time.monotonic_ns()
        self.t_line_real = time.time_ns()
        rest = self.p.stdout.read()
        _, status, usage = os.wait4(self.p.pid, 0)
        self.t_exit = time.monotonic_ns()
        self.t_exit_real = time.time_ns()
        self.p.returncode = os.waitstatus_to_exitcode(status)
        self.rusage = usage
        self.line = self.line or rest
        self.done.set()

    def json(self):
        try:
            return json.loads(self.line)
        except ValueError:
            return {}


def real_latency(tmp, samples, tables):
    env = dict(ENV, LC_ALL="C")
    s = PrivateServer(tmp, "real-ask", "set -g status off\nset -g history-limit 2000\n",
                      env=env)
    askers = []
    try:
        s.start()
        prog = os.path.join(s.dir, "password.py")
        with open(prog, "w") as f:
            f.write(PASSWORD_PROGRAM)
        readp = os.path.join(s.dir, "readp.sh")
        with open(readp, "w") as f:
            f.write(READ_P_PROGRAM)
        askers = [Asker(s, "password", "%s %s" % (sys.executable, prog)),
                  Asker(s, "read-p", "bash --norc --noprofile %s" % readp)]
        time.sleep(1.0)
        res = {a.kind: {"lat": [], "line": [], "found": 0, "other": {}} for a in askers}
        want = {"password": ("reads_password", "Password:"),
                "read-p": (None, "Continue? [y/N]")}
        for i in range(samples):
            for a in askers:
                mark = "%s%d" % (a.kind[0], i)
                p = arm_any(s, ["-t", a.pane], ["--until", "asking"])
                w = Reaped(p)
                a.ask(mark)
                if not w.done.wait(35):
                    p.kill()
                    w.done.wait(5)
                a.answer()
                t = a.time_of(mark)
                v = w.json()
                r = res[a.kind]
                reason, question = want[a.kind]
                if v.get("question") == question and (reason is None or v.get("reason") == reason):
                    r["found"] += 1
                    mono = a.kind == "password"
                    r["lat"].append(((w.t_exit if mono else w.t_exit_real) - t) / 1e6)
                    r["line"].append(((w.t_line if mono else w.t_line_real) - t) / 1e6)
                else:
                    key = "%s/%s" % (v.get("reason"), v.get("question"))
                    r["other"][key] = r["other"].get(key, 0) + 1
                reasons = r.setdefault("reasons", {})
                reasons[v.get("reason")] = reasons.get(v.get("reason"), 0) + 1
                time.sleep(0.15 + random.random() * 0.2)
        rows = []
        for a in askers:
            r = res[a.kind]
            label = {"password": "`Password: ` on /dev/tty, echo off (getpass)",
                     "read-p": "`read -p 'Continue? [y/N] '` on stdin (bash)"}[a.kind]
            reasons = r.get("reasons", {})
            reason = max(reasons, key=reasons.get) if reasons else "-"
            rows.append([label, "%d/%d" % (r["found"], samples), reason,
                         median(r["lat"]), p99(r["lat"]), median(r["line"])])
        notes = ["- %d samples of each, interleaved; `tmux-wait any -t PANE --until asking "
                 "--json --ready CH` armed (its channel signalled) before each question. "
                 "From the time taken just before the prompt's write(2) (CLOCK_MONOTONIC in "
                 "the python program; bash's $EPOCHREALTIME against the realtime clock for "
                 "`read -p`) until `any` has exited and been reaped." % samples,
                 "- target: median <= 5 ms for the password prompt."]
        for a in askers:
            if res[a.kind]["other"]:
                notes.append("- %s: other answers: %s" % (a.kind, res[a.kind]["other"]))
        tables.add("12a. real programs: a question written -> `any --until asking` returned",
                   ["question", "found", "reason", "median (ms)", "p99 (ms)",
                    "JSON line, median (ms)"], rows, notes)
    finally:
        for a in askers:
            a.close()
        s.close()


def any_cpu_once(tmp, tag, programs, seconds=60, baseline=15.0):
    """One server whose session runs `programs` (typed at bash prompts);
    `any --server --timeout SECONDS` over it: CPU of it and its hub, and
    of the tmux server with and without it."""
    d = os.path.join(tmp, tag)
    os.makedirs(d, exist_ok=True)
    rc = os.path.join(d, "bashrc")
    with open(rc, "w") as f:
        f.write(DAY_SHELL_RC)
    s = PrivateServer(tmp, tag, "set -g status off\nset -g default-command "
                      "\"exec bash --noprofile --rcfile '%s'\"\n" % rc)
    try:
        panes = [s.start()] + [s.new_window() for _ in programs[1:]]
        s.wait_until("the shells", lambda: all(s.capture(p).rstrip().endswith("$")
                                                for p in panes), 30)
        for p, prog in zip(panes, programs):
            if prog:
                s.type_line(p, prog)
        time.sleep(3.0)
        # The tmux server alone first.
        b0, tb = own_cpu_ns(s.pid), time.monotonic()
        time.sleep(baseline)
        alone = (own_cpu_ns(s.pid) - b0) / 1e6 / (time.monotonic() - tb) * 60.0
        t_spawn = time.monotonic()
        p = arm_any(s, ["--server"], [], timeout=seconds)
        w = Reaped(p)
        t0 = time.monotonic()
        hubs = lambda: [h for h in s.tw_pids() if h != p.pid]  # noqa: E731
        anyp = ProcCpu(lambda: [p.pid] if p.returncode is None else [])
        hub = ProcCpu(hubs)
        srv = ProcCpu(lambda: [s.pid])
        trackers = (anyp, hub, srv)
        for t in trackers:
            t.sample()
        # Until a second before its timeout: the armed wait's steady cost.
        end = t_spawn + seconds - 1.0
        while time.monotonic() < end:
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            for t in trackers:
                t.sample()
        t1 = time.monotonic()
        w.done.wait(seconds + 30)
        # wait4's rusage holds the hub too once `any` has reaped it.
        whole = (w.rusage.ru_utime + w.rusage.ru_stime) * 1e3 if w.rusage else float("nan")
        left = sum(own_cpu_ns(h) + reaped_cpu_ns(h) for h in hubs())
        per_min = 60.0 / (t1 - t0)
        return {
            "any": anyp.total() / 1e6 * per_min, "hub": hub.total() / 1e6 * per_min,
            "whole": whole + left / 1e6, "server": srv.total() / 1e6 * per_min,
            "alone": alone, "arm": (t0 - t_spawn) * 1e3,
            "outcome": w.json().get("outcome", "exit %s" % p.returncode),
        }
    finally:
        s.close()


def real_cpu(tmp, rounds, tables):
    sessions = [("idle", "3 bash shells at their prompts", ["", "", ""]),
                ("busy", "`top -d 1`, `watch -n 1 date`, a bash shell at its prompt",
                 ["top -d 1", "watch -n 1 date", ""])]
    got = {k: [] for k, _, _ in sessions}
    for r in range(rounds):
        for k, _, progs in (sessions if r % 2 == 0 else sessions[::-1]):
            log("scenario 12: any --server --timeout 60 over the %s session" % k)
            got[k].append(any_cpu_once(tmp, "real-cpu%d-%s" % (r, k), progs))
    rows = []
    for k, label, _ in sessions:
        g = got[k]
        m = lambda key: median([x[key] for x in g])  # noqa: E731
        rows.append([label, m("any"), m("hub"), m("any") + m("hub"), m("whole"), m("arm"),
                     m("server"), m("alone"), "/".join(x["outcome"] for x in g)])
    tables.add("12b. real programs: the CPU of `tmux-wait any --server --timeout 60`",
               ["session", "any, armed (ms/min)", "its hub, armed (ms/min)",
                "any + hub, armed (ms/min)", "whole run, spawn to exit (ms)", "armed in (ms)",
                "tmux server with it (ms/min)", "tmux server before it (ms/min)", "outcome"],
               rows,
               ["- armed: from `--ready` until a second before the timeout, schedstat of "
                "`any` and of the hub it started, scaled to a minute. Whole run: `any`'s "
                "rusage from spawn to exit (start-up, arming, the minute, exit; the hub "
                "included, `any` reaps it). The tmux server: schedstat while `any` was armed, "
                "and over 15 s before it started. %s." % (
                    "One run of each, back to back" if rounds == 1
                    else "%d rounds, medians" % rounds)])


def scenario_real_programs(tmp, args, tables):
    real_latency(tmp, args.real_samples, tables)
    real_cpu(tmp, args.real_rounds, tables)


# --------------------------------------------------------------- 13. agents

# Complete escape sequences: CSI, OSC (BEL or ST), DCS (ST), charset, two-byte.
ESC_RE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|"
                    rb"P[^\x1b]*\x1b\\|[()*+][0-~]|[ -/]*[0-~])")
NOT_TEXT = re.compile(r"[\s\x00-\x1f\x7f]+")


def normalize(text):
    return NOT_TEXT.sub("", text)


class ControlRecorder:
    """A control-mode client (`tmux -C attach -f ignore-size,read-only`): each
    `%output` chunk of a pane, timestamped as it arrives. A `pipe-pane`
    recorder would take the pane's pipe from tmux-wait (which then looks at
    the pane from the kernel once a second instead: docs/limits.md), so the
    chunks come from a control client, which tmux feeds from the same read."""

    def __init__(self, server, session="main"):
        self.p = server.popen(["tmux", "-L", server.name, "-C", "attach-session", "-t", session,
                               "-f", "ignore-size,read-only"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lock = threading.Lock()
        self.watch = {}     # pane -> [needles, carry, text, found {needle: t}]
        threading.Thread(target=self._read, daemon=True).start()

    @staticmethod
    def unescape(data):
        return re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), data)

    def _read(self):
        try:
            self._follow()
        except (OSError, ValueError):
            pass    # closed by PrivateServer.close()

    def _follow(self):
        for line in self.p.stdout:
            t = time.monotonic_ns()
            if not line.startswith(b"%output "):
                continue
            _, pane, data = line.rstrip(b"\n").split(b" ", 2)
            pane = pane.decode()
            with self.lock:
                w = self.watch.get(pane)
                if not w:
                    continue
                raw = w["carry"] + self.unescape(data)
                w["carry"] = b""
                i = raw.rfind(b"\x1b")
                if i >= 0 and not ESC_RE.match(raw, i) and len(raw) - i < 4096:
                    raw, w["carry"] = raw[:i], raw[i:]
                text = normalize(ESC_RE.sub(b"", raw).decode("utf-8", "ignore"))
                w["text"] = (w["text"] + text)[-20000:]
                for n in w["needles"]:
                    if n not in w["found"] and normalize(n) in w["text"]:
                        w["found"][n] = t

    def mark(self, pane, needles):
        """From now on, the first chunk of `pane` that completes each needle."""
        with self.lock:
            self.watch[pane] = {"needles": list(needles), "carry": b"", "text": "",
                                "found": {}}

    def found(self, pane, needle):
        with self.lock:
            w = self.watch.get(pane)
            return w["found"].get(needle) if w else None


def agent_sample(s, ag, rec, k):
    """One command turn: the time from the question's first chunk to `any
    --until asking` exited, in ms (None if it said something else), what
    `any` said, and how the drawing was timed."""
    a = ag.a
    prompt = "kit write file s%d" % k
    done_text = "The command of turn s%d finished" % k
    ag.mock.write_scene([{"match": prompt,
                          "reply": {"think": 1,
                                    "shell": a.get("shell", "touch mock-s%d.txt && echo mock-done")
                                    .replace("%d", str(k)),
                                    "text": "I will run a command that writes a file."},
                          "after_tool": {"text": done_text + " and printed mock-done.",
                                         "seconds": 1, "chunks": 2}}],
                        tools_optional=(ag.name == "aider"))
    # A first-run screen that came late (after the agent looked idle).
    late = next((k for m, k in a["first_run"] if m in ag.screen()), None)
    if late and not a.get("inline"):
        s.keys(ag.pane, late)
        time.sleep(3.0)
    s.tmux("send-keys", "-t", ag.pane, "-l", prompt)
    s.wait_until("the typed prompt", lambda: prompt in ag.screen(), 15, 0.05)
    p = arm_any(s, ["-t", ag.pane], ["--until", "asking"], timeout=90)
    w = Reaped(p)
    q = a["question"]
    after = "Added " if ag.name == "aider" else done_text
    rec.mark(ag.pane, [q] + [x for x in (a["after_question"], after) if x])
    # Inline agents keep old questions on the screen: a new one is one more.
    base = ag.screen().count(q)
    s.keys(ag.pane, ["Enter"])
    end = time.monotonic() + 90
    polled = None
    while time.monotonic() < end:
        if polled is None and ag.screen().count(q) > base:
            polled = time.monotonic_ns()
        if w.done.is_set() and (rec.found(ag.pane, q) or polled):
            break
        time.sleep(0.05)
    drawn, how = rec.found(ag.pane, q), "stream"
    if drawn is None and polled is not None:
        drawn, how = polled, "capture poll"
    if not w.done.is_set():
        p.kill()
        w.done.wait(5)
    v = w.json()
    ok = v.get("reason") == "agent_question" and drawn is not None and w.t_exit is not None
    ms = (w.t_exit - drawn) / 1e6 if ok else None
    # Approve; aider asks again after the command; then idle.
    s.wait_until("the question", lambda: rec.found(ag.pane, q) or
                 ag.screen().count(q) > base, 60, 0.1)
    time.sleep(0.3)
    s.keys(ag.pane, a["approve"])
    if a["after_question"]:
        s.wait_until("the question after the command",
                     lambda: rec.found(ag.pane, a["after_question"]), 60, 0.1)
        time.sleep(0.3)
        s.keys(ag.pane, ["Enter"])
    # (A full-screen agent may draw the text in pieces the recorder does
    # not join: OpenCode, Copilot CLI, Cline; the screen shows it whole.)
    s.wait_until("idle after the command",
                 lambda: (rec.found(ag.pane, after) or after in ag.screen())
                 and ag.idle_now(ag.screen()), 90, 0.1)
    time.sleep(1.5)
    return ms, v.get("reason"), v.get("source"), how


def scenario_agents(tmp, args, tables):
    cache = agents_cache()
    if cache is None:
        tables.note("13. agents", "Skipped: TW_AGENTS is not set (scripts/agents-install, then "
                    "TW_AGENTS=DIR scripts/bench --only agents).")
        log("scenario 13 skipped: TW_AGENTS is not set")
        return
    names = installed_agents(cache)
    if args.agents:
        names = [n for n in names if n in args.agents.split(",")]
    has_agents_cmd = subprocess.run([BIN, "agents", "--help"], capture_output=True,
                                    env=ENV).returncode == 0
    rows, notes = [], []
    for name in names:
        log("scenario 13: %s" % name)
        modes = ["screen and title"]
        if AGENTS[name]["hooks"]:
            modes.append("hooks")
        got = {m: [] for m in modes}
        sources = {m: set() for m in modes}
        trouble = []
        s = PrivateServer(tmp, "agent-" + name,
                          "set -g status off\nset -g history-limit 5000\n"
                          "set -g default-terminal tmux-256color\nset -s escape-time 10\n")
        ag = None
        turn = 0
        try:
            s.start()
            rec = ControlRecorder(s)
            ag = AgentPane(s, name, cache, os.path.join(s.dir, "agent"))
            ag.open()
            for m in modes:
                if m == "hooks":
                    if not has_agents_cmd:
                        trouble.append("`tmux-wait agents` does not exist in this build")
                        break
                    ag.exit()
                    code, msg = ag.install_hooks()
                    if code != 0:
                        trouble.append("`agents install %s` exited %d: %s"
                                       % (name, code, " ".join(msg)))
                        break
                    s.type_line(ag.pane, "clear")
                    time.sleep(0.5)
                ag.start()
                for k in range(args.agent_samples):
                    turn += 1
                    ms, reason, source, how = agent_sample(s, ag, rec, turn)
                    if ms is None:
                        trouble.append("%s, sample %d: any said %s" % (m, k + 1, reason))
                    else:
                        got[m].append(ms)
                        sources[m].add("%s (%s)" % (source, how))
        except (RuntimeError, subprocess.SubprocessError) as e:
            trouble.append(str(e).splitlines()[0])
            if ag:
                notes.append("- %s: the pane showed, when it stopped: %s" % (
                    name, " / ".join(l.strip() for l in ag.screen().splitlines()
                                     if l.strip())[-300:]))
        finally:
            if ag:
                ag.reap()
            s.close()
        row = [name, ag.version() if ag else cache.get(AGENTS[name]["key"] + "_VERSION")]
        for m in ("screen and title", "hooks"):
            xs = got.get(m)
            if xs is None:
                row += ["no hooks", ""]
            else:
                row += [median(xs) if xs else None,
                        "%d: %s" % (len(xs), ", ".join("%.0f" % x for x in xs))]
        row.append("; ".join("%s: %s" % (m, ", ".join(sorted(v))) for m, v in sources.items()
                             if v) or "-")
        rows.append(row)
        if trouble:
            notes.append("- %s: %s" % (name, "; ".join(trouble)))
    missing = [n for n in AGENTS if n not in installed_agents(cache)]
    if missing:
        notes.append("- not installed in TW_AGENTS: %s" % ", ".join(missing))
    notes.insert(0, "- from the first `%output` chunk that completes the question's text "
                 "(a control-mode client, escape sequences and blanks left out) to `any -t "
                 "PANE --until asking` (armed before Enter) exited and reaped; negative: "
                 "`any` returned before the question was drawn (a hook said so first).")
    tables.add("13. agents: approval question drawn -> `any --until asking` returned",
               ["agent", "version", "screen and title: median (ms)", "samples (ms)",
                "hooks: median (ms)", "samples (ms)", "source"], rows, notes)
