#!/usr/bin/env python3
"""Writes the generated vector files of tests/vectors (gen_*.json): inputs
and the hand-checked `expect` of each vector. Their `answer`s come from
core: run `WAITFOR_BLESS=1 cargo test -p waitfor --test vectors` after this
script, review the diff, commit both.

Usage: python3 tests/vectors/generate.py
"""

import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


def err(code, field=None, rule=None):
    e = {"code": code}
    if field is not None:
        e["field"] = field
    if rule is not None:
        e["rule"] = rule
    return {"error": e}


def spec_vectors():
    """Wait specs refused (or accepted) by the engine: kind `spec`."""
    ok = {"ok": True}
    bad = lambda field, rule: err("invalid_spec", field, rule)  # noqa: E731
    cases = [
        ("empty spec", {}, bad("until", "missing_field")),
        ("until only", {"until": {"matches": "x"}}, ok),
        ("spec not an object", [], bad("", "wrong_type")),
        ("spec a string", "until", bad("", "wrong_type")),
        ("spec null", None, bad("", "wrong_type")),
        ("unknown top-level field", {"until": {"matches": "x"}, "colour": 1}, bad("colour", "unknown_field")),
        ("until not an object", {"until": "x"}, None),
        ("until empty object", {"until": {}}, None),
        ("matches a number", {"until": {"matches": 3}}, None),
        ("matches empty", {"until": {"matches": ""}}, None),
        ("regex that does not compile", {"regex": True, "until": {"matches": "("}}, bad("until.matches", "invalid_regex")),
        ("regex lookaround", {"regex": True, "until": {"matches": "(?<=a)b"}}, None),
        ("regex backreference", {"regex": True, "until": {"matches": "(a)\\1"}}, None),
        ("literal parenthesis without regex", {"until": {"matches": "("}}, ok),
        ("patterns list", {"until": {"patterns": ["a", "b"]}}, ok),
        ("patterns empty list", {"until": {"patterns": []}}, None),
        ("patterns with a number", {"until": {"patterns": ["a", 1]}}, None),
        ("patterns invalid regex second", {"regex": True, "until": {"patterns": ["a", "["]}}, None),
        ("any of two", {"until": {"any": [{"matches": "a"}, {"matches": "b"}]}}, ok),
        ("any empty", {"until": {"any": []}}, None),
        ("any with invalid regex", {"regex": True, "until": {"any": [{"matches": "a"}, {"matches": "("}]}}, bad("until.any[1].matches", "invalid_regex")),
        ("all with unknown condition", {"until": {"all": [{"smells": "a"}]}}, None),
        ("two conditions in one object", {"until": {"matches": "a", "patterns": ["b"]}}, None),
        ("stop not a list", {"until": {"matches": "a"}, "stop": "error"}, None),
        ("stop list", {"until": {"matches": "a"}, "stop": ["error", "fatal"]}, ok),
        ("stop invalid regex", {"regex": True, "until": {"matches": "a"}, "stop": ["+"]}, None),
        ("regex not a boolean", {"regex": "yes", "until": {"matches": "a"}}, bad("regex", "wrong_type")),
        ("case_sensitive not a boolean", {"case_sensitive": 1, "until": {"matches": "a"}}, bad("case_sensitive", "wrong_type")),
        ("interval_ms below the floor", {"until": {"matches": "a"}, "interval_ms": 5}, None),
        ("interval_ms zero", {"until": {"matches": "a"}, "interval_ms": 0}, None),
        ("interval_ms negative", {"until": {"matches": "a"}, "interval_ms": -1}, None),
        ("interval_ms fractional", {"until": {"matches": "a"}, "interval_ms": 100.5}, None),
        ("interval_ms a string", {"until": {"matches": "a"}, "interval_ms": "1s"}, None),
        ("interval_ms at the floor", {"until": {"matches": "a"}, "interval_ms": 10}, ok),
        ("interval_ms equal to max_wait_ms", {"until": {"matches": "a"}, "interval_ms": 1000, "max_wait_ms": 1000}, None),
        ("interval_ms above max_wait_ms", {"until": {"matches": "a"}, "interval_ms": 2000, "max_wait_ms": 1000}, None),
        ("max_wait_ms zero", {"until": {"matches": "a"}, "max_wait_ms": 0}, None),
        # null is not "the default" (JavaScript's NaN becomes null in JSON).
        ("max_wait_ms null", {"until": {"matches": "a"}, "max_wait_ms": None}, bad("max_wait_ms", "wrong_type")),
        ("interval_ms null", {"until": {"matches": "a"}, "interval_ms": None}, bad("interval_ms", "wrong_type")),
        ("tmux socket_name null", {"until": {"matches": "a"}, "probe": {"tmux": {"socket_name": None}}}, bad("probe.tmux.socket_name", "wrong_type")),
        ("max_wait_ms huge", {"until": {"matches": "a"}, "max_wait_ms": 10**15}, None),
        ("max_wait_ms beyond u64", {"until": {"matches": "a"}, "max_wait_ms": 10**20}, None),
        ("backoff missing max_interval_ms", {"until": {"matches": "a"}, "backoff": {"factor": 2}}, None),
        ("backoff factor below one", {"until": {"matches": "a"}, "backoff": {"factor": 0.5, "max_interval_ms": 1000}}, None),
        ("backoff valid", {"until": {"matches": "a"}, "backoff": {"factor": 2, "max_interval_ms": 1000}}, ok),
        ("on_probe_error unknown word", {"until": {"matches": "a"}, "on_probe_error": "ignore"}, None),
        ("on_probe_error tolerate negative", {"until": {"matches": "a"}, "on_probe_error": {"tolerate": -1}}, None),
        ("on_probe_error tolerate", {"until": {"matches": "a"}, "on_probe_error": {"tolerate": 3}}, ok),
        ("output_cap_bytes zero", {"until": {"matches": "a"}, "output_cap_bytes": 0}, None),
        ("tail lines zero", {"until": {"matches": "a"}, "tail": {"lines": 0, "bytes": 10}}, None),
        ("tail missing bytes", {"until": {"matches": "a"}, "tail": {"lines": 3}}, None),
        ("progress_every_ms zero", {"until": {"matches": "a"}, "progress_every_ms": 0}, None),
        ("view unknown", {"until": {"matches": "a"}, "view": "partial"}, None),
        ("view fresh", {"until": {"matches": "a"}, "view": "fresh"}, ok),
        ("resume garbage", {"until": {"matches": "a"}, "resume": "not-a-token"}, None),
        ("resume empty", {"until": {"matches": "a"}, "resume": ""}, None),
        ("probe unknown kind", {"until": {"matches": "a"}, "probe": {"http": {"url": "x"}}}, None),
        ("probe command empty argv", {"until": {"matches": "a"}, "probe": {"command": {"argv": []}}}, None),
        ("probe command argv a string", {"until": {"matches": "a"}, "probe": {"command": {"argv": "ls -l"}}}, None),
        ("probe command unknown field", {"until": {"matches": "a"}, "probe": {"command": {"argv": ["ls"], "shell": True}}}, None),
        ("probe file empty path", {"until": {"matches": "a"}, "probe": {"file": {"path": ""}}}, None),
        ("probe tmux empty socket is the default", {"until": {"matches": "a"}, "probe": {"tmux": {"socket_name": ""}}}, ok),
        ("probe two kinds", {"until": {"matches": "a"}, "probe": {"file": {"path": "a"}, "command": {"argv": ["ls"]}}}, None),
        ("exit_code condition", {"until": {"exit_code": 0}}, ok),
        ("exit_code a string", {"until": {"exit_code": "0"}}, None),
        ("json condition", {"until": {"json": {"pointer": "/status", "equals": "ok"}}}, None),
        ("json pointer without slash", {"until": {"json": {"pointer": "status", "equals": "ok"}}}, None),
        ("quiet condition", {"until": {"quiet_for_ms": 500}}, None),
        ("not condition", {"until": {"not": {"matches": "busy"}}}, None),
        ("deeply nested any", {"until": {"any": [{"any": [{"any": [{"matches": "x"}]}]}]}}, None),
        ("unicode pattern", {"until": {"matches": "準備完了"}}, ok),
    ]
    vectors = []
    for name, spec, expect in cases:
        v = {"name": name, "kind": "spec", "spec": spec}
        if expect is not None:
            v["expect"] = expect
        vectors.append(v)
    return vectors


AURA = "aura/wait_for"
TMUX_MCP = "libtmux-mcp/wait_for_text"
TMUX_CXX = "libtmux-cxx/wait_for_text"
OURO = "ouro/wait"


def argument_vectors():
    """Profile arguments validated without running: kind `arguments`."""
    probe = {"tool": "status", "args": {}}
    bad = lambda field=None, rule=None: err("invalid_arguments", field, rule)  # noqa: E731
    cases = [
        # Lookup by profile id or tool name.
        ("aura by profile id", AURA, {"probe": probe, "until": {"matches": "x"}}, {"ok": AURA}),
        ("aura by tool name", "wait_for", {"probe": probe, "until": {"matches": "x"}}, {"ok": AURA}),
        ("unknown profile", "nope/wait", {}, err("unknown_profile")),
        ("ambiguous tool name", "wait_for_text", {"pane_id": "%1", "patterns": ["x"]}, err("unknown_profile")),
        # AURA wait_for.
        ("aura not_matches", AURA, {"probe": probe, "until": {"not_matches": "busy"}}, {"ok": AURA}),
        ("aura quiet", AURA, {"probe": probe, "until": {"quiet_for_sec": 2}, "max_wait_sec": 10}, None),
        ("aura poll equal to bound", AURA, {"probe": probe, "until": {"matches": "x"}, "poll_sec": 10, "max_wait_sec": 10}, None),
        ("aura poll above clamped bound", AURA, {"probe": probe, "until": {"matches": "x"}, "poll_sec": 310, "max_wait_sec": 400}, None),
        ("aura quiet above bound", AURA, {"probe": probe, "until": {"quiet_for_sec": 20}, "max_wait_sec": 10}, None),
        ("aura empty regex", AURA, {"probe": probe, "until": {"matches": ""}}, None),
        ("aura anchors", AURA, {"probe": probe, "until": {"matches": "^ready$"}}, None),
        ("aura probe without args", AURA, {"probe": {"tool": "status"}, "until": {"matches": "x"}}, None),
        ("aura fractional poll", AURA, {"probe": probe, "until": {"matches": "x"}, "poll_sec": 0.5}, None),
        ("aura negative max_wait", AURA, {"probe": probe, "until": {"matches": "x"}, "max_wait_sec": -1}, None),
        ("aura max_wait as string", AURA, {"probe": probe, "until": {"matches": "x"}, "max_wait_sec": "60"}, None),
        ("aura args a list", AURA, {"probe": {"tool": "t", "args": []}, "until": {"matches": "x"}}, None),
        ("aura until a string", AURA, {"probe": probe, "until": "Running"}, None),
        ("aura until two conditions", AURA, {"probe": probe, "until": {"matches": "a", "not_matches": "b"}}, None),
        ("aura probe tool empty", AURA, {"probe": {"tool": "", "args": {}}, "until": {"matches": "x"}}, bad()),
        ("aura arguments null", AURA, None, bad()),
        ("aura arguments a list", AURA, [], bad()),
        ("aura unknown field", AURA, {"probe": probe, "until": {"matches": "x"}, "verbose": True}, bad()),
        ("aura invalid regex", AURA, {"probe": probe, "until": {"matches": "(" }}, bad()),
        ("aura lookbehind", AURA, {"probe": probe, "until": {"matches": "(?<=BUILD )OK"}}, None),
        ("aura huge fractional max_wait", AURA, {"probe": probe, "until": {"matches": "x"}, "max_wait_sec": 1e12 + 0.5}, None),
        # libtmux-mcp wait_for_text.
        ("libtmux-mcp pane id", TMUX_MCP, {"pane_id": "%1", "patterns": ["ready"]}, {"ok": TMUX_MCP}),
        ("libtmux-mcp no target", TMUX_MCP, {"patterns": ["ready"]}, None),
        ("libtmux-mcp session name", TMUX_MCP, {"session_name": "work", "patterns": ["ready"]}, None),
        ("libtmux-mcp window id", TMUX_MCP, {"window_id": "@2", "patterns": ["ready"]}, None),
        ("libtmux-mcp missing patterns", TMUX_MCP, {"pane_id": "%1"}, None),
        ("libtmux-mcp empty patterns", TMUX_MCP, {"pane_id": "%1", "patterns": []}, None),
        ("libtmux-mcp patterns a string", TMUX_MCP, {"pane_id": "%1", "patterns": "ready"}, None),
        ("libtmux-mcp regex", TMUX_MCP, {"pane_id": "%1", "patterns": ["a.+b"], "regex": True}, None),
        ("libtmux-mcp invalid regex", TMUX_MCP, {"pane_id": "%1", "patterns": ["("], "regex": True}, None),
        ("libtmux-mcp lookahead", TMUX_MCP, {"pane_id": "%1", "patterns": ["a(?=b)"], "regex": True}, None),
        ("libtmux-mcp stop", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "stop": ["FAIL"]}, None),
        ("libtmux-mcp interval too small", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "interval": 0.001}, None),
        ("libtmux-mcp interval a string", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "interval": "1"}, None),
        ("libtmux-mcp timeout zero", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "timeout": 0}, None),
        ("libtmux-mcp timeout negative", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "timeout": -3}, None),
        ("libtmux-mcp timeout large", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "timeout": 100000}, None),
        ("libtmux-mcp match_case a string", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "match_case": "yes"}, None),
        ("libtmux-mcp unknown field", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "lines": 5}, bad()),
        ("libtmux-mcp socket not granted", TMUX_MCP, {"pane_id": "%1", "patterns": ["ok"], "socket_name": "other"}, None),
        ("libtmux-mcp pane id a number", TMUX_MCP, {"pane_id": 1, "patterns": ["ok"]}, None),
        ("libtmux-mcp arguments null", TMUX_MCP, None, bad()),
        # libtmux-cxx wait_for_text.
        ("libtmux-cxx pane id", TMUX_CXX, {"target": "%1", "text": "ready"}, {"ok": TMUX_CXX}),
        ("libtmux-cxx session target", TMUX_CXX, {"target": "work:0.1", "text": "ready"}, None),
        ("libtmux-cxx missing target", TMUX_CXX, {"text": "ready"}, None),
        ("libtmux-cxx missing text", TMUX_CXX, {"target": "%1"}, None),
        ("libtmux-cxx text a number", TMUX_CXX, {"target": "%1", "text": 5}, None),
        ("libtmux-cxx empty text", TMUX_CXX, {"target": "%1", "text": ""}, None),
        ("libtmux-cxx long text", TMUX_CXX, {"target": "%1", "text": "x" * 5000}, None),
        ("libtmux-cxx timeout zero", TMUX_CXX, {"target": "%1", "text": "ok", "timeout_ms": 0}, None),
        ("libtmux-cxx timeout one", TMUX_CXX, {"target": "%1", "text": "ok", "timeout_ms": 1}, None),
        ("libtmux-cxx timeout fractional", TMUX_CXX, {"target": "%1", "text": "ok", "timeout_ms": 1.5}, None),
        ("libtmux-cxx timeout whole float", TMUX_CXX, {"target": "%1", "text": "ok", "timeout_ms": 100.0}, None),
        ("libtmux-cxx timeout huge", TMUX_CXX, {"target": "%1", "text": "ok", "timeout_ms": 10**9}, None),
        ("libtmux-cxx timeout a string", TMUX_CXX, {"target": "%1", "text": "ok", "timeout_ms": "100"}, None),
        ("libtmux-cxx unknown field", TMUX_CXX, {"target": "%1", "text": "ok", "regex": True}, None),
        # Ouro wait_for_event: the arguments of the wait/1 envelope's call.
        ("ouro missing path", OURO, {}, bad()),
        ("ouro empty path", OURO, {"path": ""}, None),
        ("ouro path not granted", OURO, {"path": "/tmp/events.jsonl"}, None),
        ("ouro path a number", OURO, {"path": 3}, None),
        ("ouro unknown field", OURO, {"path": "e.jsonl", "since": "x"}, None),
        ("ouro timeout text", OURO, {"path": "e.jsonl", "timeout": "90s"}, None),
        ("ouro timeout bad text", OURO, {"path": "e.jsonl", "timeout": "soon"}, None),
        ("ouro timeout above ceiling", OURO, {"path": "e.jsonl", "timeout": "10m"}, None),
        ("ouro timeout fractional", OURO, {"path": "e.jsonl", "timeout": 1.5}, None),
        ("ouro empty cursor", OURO, {"path": "e.jsonl", "cursor": ""}, None),
        ("ouro bad regex", OURO, {"path": "e.jsonl", "summaryRegex": "("}, None),
        ("ouro data not a list", OURO, {"path": "e.jsonl", "data": "x"}, None),
        ("ouro bad data pointer", OURO, {"path": "e.jsonl", "data": [{"pointer": "x", "equals": 1}]}, None),
        ("ouro ignoreCase a string", OURO, {"path": "e.jsonl", "ignoreCase": "yes"}, None),
        ("ouro for a number", OURO, {"path": "e.jsonl", "for": 1}, None),
    ]
    vectors = []
    for name, tool, args, expect in cases:
        v = {"name": name, "kind": "arguments", "tool": tool, "arguments": args}
        if expect is not None:
            v["expect"] = expect
        vectors.append(v)
    return vectors


def lookup_vectors():
    """Profiles found by profile id or unique tool name: kind `profile`."""
    cases = [
        (AURA, {"ok": {"profile": AURA, "tool": "wait_for"}}),
        ("wait_for", {"ok": {"profile": AURA, "tool": "wait_for"}}),
        (TMUX_MCP, {"ok": {"profile": TMUX_MCP, "tool": "wait_for_text"}}),
        (TMUX_CXX, {"ok": {"profile": TMUX_CXX, "tool": "wait_for_text"}}),
        (OURO, {"ok": {"profile": OURO, "tool": "wait_for_event"}}),
        ("wait_for_event", {"ok": {"profile": OURO, "tool": "wait_for_event"}}),
        ("wait_for_text", err("unknown_profile")),
        ("", err("unknown_profile")),
        ("aura", err("unknown_profile")),
        ("AURA/WAIT_FOR", err("unknown_profile")),
        ("aura/wait_for ", err("unknown_profile")),
        ("Wait_For", err("unknown_profile")),
        ("aura/", err("unknown_profile")),
        ("/wait_for", err("unknown_profile")),
        ("ouro/wait_for_event", err("unknown_profile")),
    ]
    return [{"name": f"lookup {name!r}", "kind": "profile", "lookup": name, "expect": e} for name, e in cases]


def pane_vectors():
    """tmux pane ids parsed: kind `pane_id`."""
    good = [("%0", 0), ("%1", 1), ("%12", 12), ("%007", 7), ("%4294967295", 4294967295)]
    bad = ["", "%", "1", "%-1", "%+1", "% 1", "%1 ", " %1", "%1a", "%0x10", "%4294967296",
           "%99999999999999999999", "@1", "$1", "%%1", "%1.5", "%١", "pane1", "%1\n"]
    vectors = [{"name": f"pane id {t!r}", "kind": "pane_id", "pane_id": t, "expect": {"ok": n}} for t, n in good]
    vectors += [{"name": f"not a pane id {t!r}", "kind": "pane_id", "pane_id": t,
                 "expect": err("invalid_arguments", "pane_id", "invalid_pane_id")} for t in bad]
    return vectors


def duration_vectors():
    """Durations, the one rule of every binding (core's format_millis and
    parse_millis): kind `duration`. JSON holds no NaN or infinity, so
    `format` may be the strings "NaN", "Infinity" and "-Infinity" for those
    numbers."""
    out_of_range = err("invalid_arguments", "duration", "out_of_range")
    wrong_type = err("invalid_arguments", "duration", "wrong_type")
    formats = [
        (0, {"ok": "0s"}), (1, {"ok": "1ms"}), (999, None), (1000, {"ok": "1s"}), (1500, {"ok": "1500ms"}),
        (60000, {"ok": "1m"}), (90000, {"ok": "90s"}), (120000, {"ok": "2m"}), (3600000, {"ok": "1h"}),
        (5400000, {"ok": "90m"}), (86400000, {"ok": "24h"}), (2**53 - 1, {"ok": "9007199254740991ms"}),
        # Fractions: the nearest whole millisecond, a half upwards (JavaScript's Math.round).
        (1.5, {"ok": "2ms"}), (0.5, {"ok": "1ms"}), (2.5, {"ok": "3ms"}), (0.4, {"ok": "0s"}),
        (1.4999999999999998, {"ok": "1ms"}), (0.49999999999999994, {"ok": "0s"}), (89999.6, {"ok": "90s"}),
        (59999.5, {"ok": "1m"}), (3599999.5, {"ok": "1h"}), (1e-300, {"ok": "0s"}),
        (-0.0, {"ok": "0s"}), (-0.4, {"ok": "0s"}), (-0.5, {"ok": "0s"}),
        # No text parseDuration reads back is any of these.
        (-0.6, out_of_range), (-1, out_of_range), (-1e300, out_of_range), (2**53, out_of_range),
        (1e20, out_of_range), (1.7976931348623157e308, out_of_range),
        ("NaN", wrong_type), ("Infinity", out_of_range), ("-Infinity", out_of_range),
    ]
    parses = [
        ("90s", {"ok": 90000}), ("2m", {"ok": 120000}), ("1h", {"ok": 3600000}), ("500ms", {"ok": 500}),
        ("30", {"ok": 30000}), ("0", {"ok": 0}), ("007s", {"ok": 7000}),
        ("9007199254740991ms", {"ok": 2**53 - 1}), ("9007199254740s", {"ok": 9007199254740000}),
        ("9007199254740992ms", out_of_range), ("9007199254741s", out_of_range),
        ("18446744073709551616ms", out_of_range), ("99999999999999999999999999h", out_of_range),
        ("", wrong_type), ("soon", wrong_type), ("1.5s", wrong_type), ("-1s", wrong_type), ("+1s", wrong_type),
        ("90 s", wrong_type), (" 90s", wrong_type), ("90s ", wrong_type), ("1m30s", wrong_type),
        ("5d", wrong_type), ("5S", wrong_type), ("1e3", wrong_type), ("0x10", wrong_type), ("１s", wrong_type),
        ("9" * 30 + "x" * 30, wrong_type),
    ]
    vectors = []
    for ms, expect in formats:
        v = {"name": f"format {ms!r}", "kind": "duration", "format": ms}
        if expect is not None:
            v["expect"] = expect
        vectors.append(v)
    for text, expect in parses:
        vectors.append({"name": f"parse {text!r}", "kind": "duration", "parse": text, "expect": expect})
    return vectors


def rendering_vectors():
    """Profile calls on virtual time, rendered as each tool's output. (The
    tmux profiles render from their pane probe's report, which a scripted
    probe does not fill: their timelines are in probe_facts.json.)"""
    steps = lambda *texts: {"steps": [{"text": t} for t in texts]}  # noqa: E731
    vectors = []
    aura_cases = [
        ("matches on the third sample", {"until": {"matches": "Running"}, "poll_sec": 1, "max_wait_sec": 10}, steps("a", "b", "Running")),
        ("times out with samples at the bound", {"until": {"matches": "done"}, "poll_sec": 3, "max_wait_sec": 10}, steps("busy")),
        ("not_matches at once", {"until": {"not_matches": "busy"}}, steps("idle")),
        ("settles after a change", {"until": {"quiet_for_sec": 2}, "poll_sec": 1, "max_wait_sec": 20}, steps("a", "b", "b", "b", "b")),
        ("probe error", {"until": {"matches": "x"}, "poll_sec": 1, "max_wait_sec": 5}, {"steps": [{"error": "tool failed"}]}),
        ("fractional poll", {"until": {"matches": "ok"}, "poll_sec": 0.5, "max_wait_sec": 3}, steps("no", "no", "ok")),
        ("json output as text", {"until": {"matches": "\"ready\":true"}, "poll_sec": 1, "max_wait_sec": 5}, {"steps": [{"json": {"ready": False}}, {"json": {"ready": True}}]}),
        ("large output is capped", {"until": {"matches": "zzz"}, "poll_sec": 1, "max_wait_sec": 2}, {"steps": [{"text": "a", "fill": 3000}]}),
    ]
    for name, args, script in aura_cases:
        vectors.append({"name": f"aura: {name}", "profile": AURA,
                        "arguments": {"probe": {"tool": "status", "args": {}}, **args}, "script": script})
    ouro = [
        ("file outside the grants", {"path": "/var/log/events.jsonl"}),
        ("timeout text outside the grants", {"path": "events.jsonl", "timeout": "5s"}),
    ]
    for name, args in ouro:
        vectors.append({"name": f"ouro: {name}", "profile": OURO, "arguments": args, "script": steps("")})
    vectors += event_log_vectors()
    return vectors


def event_log_vectors():
    """ouro/wait running against a real event file: `files` are written into
    a fresh directory the host grants (`$FILES` in the arguments and the
    answer), `script.log` changes them at virtual times, `resume` makes the
    call the answer's resume step names."""
    log = "$FILES/events.jsonl"

    def ev(kind, summary, at="2026-01-01T00:00:00.000Z", by="ci", **more):
        return {"type": kind, "at": at, "by": by, "summary": summary, **more}

    def line(event):
        """The line the runner writes for an event (core's JSON: keys sorted)."""
        return json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"

    def seen(event, *before):
        """`event` as the envelope gives it, read after the lines `before`
        (events or text): its cursor is the position right after its line."""
        text = "".join(b if isinstance(b, str) else line(b) for b in before) + line(event)
        cursor = f"j2.{len(text.encode())}.{text.count(chr(10))}.KEYED"
        return {"cursor": cursor, "target": None, **event}

    started = ev("build.started", "build 7 started")
    passed = ev("build.done", "build 7 passed", "2026-01-01T00:00:01.000Z", data={"status": "passed", "build": 7})
    failed = ev("build.done", "build 8 failed", "2026-01-01T00:00:02.000Z", data={"status": "failed", "build": 8})
    done = {"path": log, "type": "build.done"}
    cases = [
        ("satisfied by an event already in the file", {**done, "timeout": "1s"},
         {"events.jsonl": [started, passed]}, None, None,
         {"output": {"state": "satisfied", "events": [seen(passed, started)]}, "call_starts_ms": [0]}),
        ("satisfied by an event appended while it waits", {**done, "for": "build 7", "timeout": "2s"},
         {"events.jsonl": [started]}, {"log": [{"at_ms": 600, "file": "events.jsonl", "append": [passed]}]}, None,
         {"output": {"state": "satisfied", "for": "build 7", "since": "2026-01-01T00:00:00.000Z",
                     "until": "2026-01-01T00:00:00.750Z", "events": [seen(passed, started)]},
          "call_starts_ms": [0, 250, 500, 750]}),
        ("times out with a resume step from its cursor", {**done, "timeout": "1s"},
         {"events.jsonl": [started]}, None, None,
         {"output": {"state": "timed-out", "events": [], "reason": "no matching event before the time limit",
                     "until": "2026-01-01T00:00:01.000Z"}}),
        ("gone on a terminal event", {**done, "timeout": "5s"},
         {"events.jsonl": [started]}, {"log": [{"at_ms": 300, "file": "events.jsonl", "append": [ev("closed", "pipeline closed")]}]}, None,
         {"output": {"state": "gone", "resume": None}}),
        ("gone when the file is removed", {**done, "timeout": "5s"},
         {"events.jsonl": [started]}, {"log": [{"at_ms": 400, "file": "events.jsonl", "remove": True}]}, None,
         {"output": {"state": "gone", "resume": None, "fresh": {"state": "missing"}}}),
        ("gone at once when the file is missing", {"path": "$FILES/never.jsonl", "timeout": "1s"},
         {}, None, None, {"output": {"state": "gone"}, "call_starts_ms": [0]}),
        ("from end: only events written after the call count", {**done, "cursor": "end", "timeout": "2s"},
         {"events.jsonl": [started, failed]}, {"log": [{"at_ms": 0, "file": "events.jsonl", "append": [passed]}]}, None,
         {"output": {"state": "satisfied", "events": [seen(passed, started, failed)]}}),
        ("a data filter skips other builds", {**done, "data": [{"pointer": "/status", "equals": "passed"}], "timeout": "2s"},
         {"events.jsonl": [started, failed]}, {"log": [{"at_ms": 500, "file": "events.jsonl", "append": [passed]}]}, None,
         {"output": {"state": "satisfied", "events": [seen(passed, started, failed)]}}),
        ("malformed and unfinished lines are not events", {**done, "timeout": "1s"},
         {"events.jsonl": ["not json\n", started, "{\"type\": \"build.done\""]},
         {"log": [{"at_ms": 250, "file": "events.jsonl", "append": [", \"at\": \"t\", \"by\": \"ci\", \"summary\": \"finished late\"}\n"]}]}, None,
         {"output": {"state": "satisfied", "events": [{
             "cursor": "j2.178.3.KEYED", "type": "build.done", "at": "t", "by": "ci", "target": None,
             "summary": "finished late"}]}}),
        ("cancelled by the host", {**done, "timeout": "5s"},
         {"events.jsonl": [started]}, {"controls": [{"at_ms": 700, "action": "cancel"}]}, None,
         {"output": {"state": "timed-out", "reason": "cancelled before a matching event"}}),
        ("resumed from its cursor sees only what came after", {**done, "timeout": "500ms"},
         {"events.jsonl": [started, failed]}, None,
         {"after_ms": 1000, "script": {"log": [{"at_ms": 0, "file": "events.jsonl", "append": [passed]}]}},
         {"output": {"state": "satisfied", "events": [seen(failed, started)]},
          "resumed": {"output": {"state": "satisfied", "events": [seen(passed, started, failed)],
                                 "since": "2026-01-01T00:00:01.000Z"}}}),
        ("resumed after a time out", {**done, "timeout": "500ms"},
         {"events.jsonl": [started]}, None,
         {"script": {"log": [{"at_ms": 100, "file": "events.jsonl", "append": [passed]}]}},
         {"output": {"state": "timed-out"},
          "resumed": {"output": {"state": "satisfied", "since": "2026-01-01T00:00:00.500Z",
                                 "until": "2026-01-01T00:00:00.750Z", "events": [seen(passed, started)]}}}),
        ("a resume cursor into a rewritten file is refused", {**done, "timeout": "500ms"},
         {"events.jsonl": [started]}, None,
         {"script": {"log": [{"at_ms": 0, "file": "events.jsonl", "write": [ev("build.queued", "build 9 queued")]}]}},
         {"output": {"state": "timed-out"},
          "resumed": {"tool_error": {"code": "invalid_arguments", "field": "cursor", "rule": "invalid_resume"}}}),
    ]
    def sorted_keys(value):
        """Objects with their keys in order: the C runner's JSON library
        sorts them, and a resume step repeats the arguments in their order."""
        if isinstance(value, dict):
            return {k: sorted_keys(value[k]) for k in sorted(value)}
        if isinstance(value, list):
            return [sorted_keys(v) for v in value]
        return value

    vectors = []
    for name, args, files, script, resume, expect in cases:
        v = {"name": f"ouro events: {name}", "profile": OURO, "arguments": sorted_keys(args), "files": files}
        if script is not None:
            v["script"] = script
        if resume is not None:
            v["resume"] = resume
        v["expect"] = expect
        vectors.append(v)
    return vectors


def envelope_vectors():
    """Ouro wait/1 envelopes checked: kind `envelope`."""
    base = {"ax": "wait/1", "for": "the build", "target": None, "state": "timed-out", "since": "2026-01-01T00:00:00Z",
            "until": None, "cursor": "c1", "events": [], "fresh": None,
            "resume": {"command": "wait_for_event {\"path\": \"e.jsonl\", \"cursor\": \"c1\"}"},
            "reason": None, "callback": None, "next": []}
    event = {"cursor": "c2", "type": "build.done", "at": "2026-01-01T00:00:05Z", "by": "ci", "target": None, "summary": "ok"}
    edits = [
        ("timed out with resume", {}),
        ("timed out without resume", {"resume": None}),
        ("waiting without resume", {"state": "waiting", "resume": None}),
        ("waiting with resume", {"state": "waiting"}),
        ("satisfied with an event", {"state": "satisfied", "events": [event], "resume": None}),
        ("satisfied without events", {"state": "satisfied", "resume": None}),
        ("gone", {"state": "gone", "resume": None, "reason": "the file was removed"}),
        ("unknown state", {"state": "done"}),
        ("wrong version", {"ax": "wait/2"}),
        ("unknown field", {"extra": 1}),
        ("for not a string", {"for": 3}),
        ("events not a list", {"events": {}}),
        ("event missing type", {"state": "satisfied", "events": [{k: v for k, v in event.items() if k != "type"}]}),
        ("event with unknown field", {"state": "satisfied", "events": [{**event, "colour": "red"}]}),
        ("event with data and target", {"state": "satisfied", "events": [{**event, "data": {"n": 1}, "target": "web"}]}),
        ("resume without command", {"resume": {"description": "again"}}),
        ("resume a string", {"resume": "wait again"}),
        ("next steps", {"next": [{"command": "tail e.jsonl", "description": "look"}]}),
        ("next step with extra field", {"next": [{"command": "x", "why": "y"}]}),
        ("fresh object", {"fresh": {"at": "2026-01-01T00:00:01Z"}}),
        ("callback set", {"callback": {"command": "notify"}}),
        ("since missing", {"since": None}),
    ]
    vectors = []
    for name, edit in edits:
        vectors.append({"name": f"envelope: {name}", "kind": "envelope", "envelope": {**base, **edit}})
    for name, value in [("null", None), ("a list", []), ("a string", "wait/1"), ("empty object", {})]:
        vectors.append({"name": f"envelope: {name}", "kind": "envelope", "envelope": value,
                        "expect": {"ok": False}})
    vectors[0]["expect"] = {"ok": True, "errors": []}
    vectors[1]["expect"] = {"ok": False, "errors": ["resume: a timed-out wait must say how to resume it"]}
    return vectors


FILES = {
    "gen_spec_errors.json": ("Wait specs, checked without running: the error's code, field, rule and message", spec_vectors),
    "gen_arguments.json": ("Each profile's arguments, checked without running (by profile id or tool name)", argument_vectors),
    "gen_lookup.json": ("Profiles found by profile id or unique tool name", lookup_vectors),
    "gen_pane_ids.json": ("tmux pane ids (%N) parsed", pane_vectors),
    "gen_envelopes.json": ("Ouro wait/1 envelopes checked (shape and rules)", envelope_vectors),
    "gen_durations.json": ("Durations formatted and parsed by the one rule of every binding", duration_vectors),
    "gen_profiles.json": ("Profile calls on virtual time, rendered as each tool's output", rendering_vectors),
}


def main():
    for file, (about, make) in FILES.items():
        path = HERE / file
        old = {}
        if path.exists():
            old = {v["name"]: v.get("answer") for v in json.loads(path.read_text())["vectors"]}
        vectors = make()
        names = [v["name"] for v in vectors]
        assert len(names) == len(set(names)), f"{file}: duplicate names"
        for v in vectors:
            if old.get(v["name"]) is not None:
                v["answer"] = old[v["name"]]
        doc = {"about": about + " (written by generate.py)", "vectors": vectors}
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
