/**
 * @file waitfor.hpp
 * @brief libwaitfor for C++17: RAII handles and std::function probes over
 *        the C ABI in waitfor.h. Header-only; link libwaitfor.
 *
 * @code
 * #include <waitfor.hpp>
 * std::string result = waitfor::wait(
 *     R"({"until": {"matches": "ready"}, "interval_ms": 50, "max_wait_ms": 5000})",
 *     [](const waitfor::ProbeContext &ctx) {
 *         return waitfor::Observation::of_text(ctx.sample() < 3 ? "starting" : "ready");
 *     });
 * waitfor::Result r = waitfor::Result::parse(result);   // r.outcome == "matched"
 * @endcode
 *
 * Built-in probes (a spec's `command` and `file`, AURA's `run_command` and
 * `read_file`) reach only what a waitfor::Host grants, nothing by default;
 * a Host can also lend its own tools to `aura/wait_for`:
 *
 * @code
 * waitfor::Host host;
 * host.grants.commands = {"kubectl"};
 * host.grants.file_roots = {"/var/log/myapp"};
 * host.tools = [](const std::string &name, const std::string &args_json,
 *                 const waitfor::ProbeContext &) { return my_server.call(name, args_json); };
 * std::string out = waitfor::call_tool("aura/wait_for", agent_args_json, host);
 * @endcode
 *
 * Errors become waitfor::Error (with the C status and the error JSON). An
 * exception thrown by a probe or a host tool never reaches the library: it
 * is caught on the library thread and becomes a probe error carrying what()
 * as message. Probes, tools, progress and done hooks run on library threads.
 */
#ifndef WAITFOR_HPP
#define WAITFOR_HPP

#include "waitfor.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace waitfor {

/** A failed call: the C status code, its name and the error JSON. */
class Error : public std::runtime_error {
public:
    Error(int32_t status, std::string detail_json)
        : std::runtime_error(std::string(waitfor_status_name(status)) + ": " + detail_json),
          status_(status), detail_(std::move(detail_json)) {}
    /** One of the WAITFOR_ERR_* codes. */
    int32_t status() const noexcept { return status_; }
    /** The stable name of the status ("invalid_spec", ...). */
    const char *kind() const noexcept { return waitfor_status_name(status_); }
    /** Core's error code, the same in every language ("invalid_spec",
     *  "invalid_arguments", "unknown_profile", ...); "" when it has none. */
    std::string code() const {
        const std::string key = "\"code\":\"";
        size_t at = detail_.find(key);
        if (at == std::string::npos) return {};
        at += key.size();
        return detail_.substr(at, detail_.find('"', at) - at);
    }
    /** The error JSON: {"code", "field", "rule", "message", "status", "kind"}. */
    const std::string &detail_json() const noexcept { return detail_; }

private:
    int32_t status_;
    std::string detail_;
};

namespace detail {
/** Copies a library string into a std::string and frees it. */
inline std::string take(char *text) {
    std::string copy = text != nullptr ? std::string(text) : std::string();
    waitfor_string_free(text);
    return copy;
}

/** Throws for a failed status. `error_json` is taken by reference: the
 *  call that fills it is a sibling argument, evaluated in no fixed order. */
inline void check(int32_t status, char *&error_json) {
    if (status != WAITFOR_OK) throw Error(status, take(error_json));
}
}  // namespace detail

/** The library's version. */
inline std::string version() { return waitfor_version(); }
/** The loaded library's ABI version (compare with WAITFOR_ABI_VERSION). */
inline uint32_t abi_version() { return waitfor_abi_version(); }
/** Sets how many profile calls may be in flight in this process (1,024 by
 *  default) and returns the cap it replaces; a call over it throws Error with
 *  status WAITFOR_ERR_TOO_MANY_CALLS (code "too_many_calls"). */
inline size_t set_max_tool_calls(size_t cap) { return waitfor_set_max_tool_calls(cap); }
/** How many profile calls may be in flight in this process at once. */
inline size_t max_tool_calls() { return waitfor_max_tool_calls(); }
/** JSON Schema of a spec. */
inline std::string_view spec_schema() { return waitfor_spec_schema(); }
/** JSON Schema of a result. */
inline std::string_view result_schema() { return waitfor_result_schema(); }

/** Every profile: a JSON array of {profile, tool}. */
inline std::string profiles() {
    char *out = nullptr, *error = nullptr;
    detail::check(waitfor_profiles(&out, &error), error);
    return detail::take(out);
}

/** Every profile's MCP tool definition, in profiles() order: a JSON array of tools. */
inline std::string tool_definitions() {
    char *out = nullptr, *error = nullptr;
    detail::check(waitfor_tool_definitions(&out, &error), error);
    return detail::take(out);
}

/** Runs one shared test vector on virtual time; gives the answer JSON. */
inline std::string simulate(std::string_view vector_json) {
    char *out = nullptr, *error = nullptr;
    detail::check(waitfor_simulate(vector_json.data(), vector_json.size(), &out, &error), error);
    return detail::take(out);
}

/** "90s", "2m", "500ms", "30" (seconds) to milliseconds. */
inline std::chrono::milliseconds parse_duration(std::string_view text) {
    uint64_t ms = 0;
    char *error = nullptr;
    detail::check(waitfor_duration_parse(text.data(), text.size(), &ms, &error), error);
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(ms));
}

/** A number of milliseconds (a fraction rounds to the nearest, a half
 *  upwards) to the shortest exact duration text, by the rule of every
 *  binding's `formatDuration`; throws `waitfor::Error`
 *  (`WAITFOR_ERR_INVALID_ARGUMENT`) for NaN, a negative value, an infinity
 *  or more than 2^53 - 1 ms. */
inline std::string format_duration(double ms) {
    char *out = nullptr, *error = nullptr;
    detail::check(waitfor_duration_format_number(ms, &out, &error), error);
    return detail::take(out);
}

/** Milliseconds to the shortest exact duration text; a negative count is
 *  refused as `format_duration(double)` refuses it (never wrapped around
 *  to a huge unsigned value). */
inline std::string format_duration(std::chrono::milliseconds ms) {
    return format_duration(static_cast<double>(ms.count()));
}

namespace detail {
/** A JSON string literal for `text` (quotes, backslashes and control
 *  characters escaped; other bytes as they are). */
inline std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            static const char hex[] = "0123456789abcdef";
            out += "\\u00";
            out += hex[(c >> 4) & 0xf];
            out += hex[c & 0xf];
        } else {
            out += c;
        }
    }
    return out + "\"";
}
}  // namespace detail

/** What a probe call is told about itself; valid during the call only. */
class ProbeContext {
public:
    explicit ProbeContext(const waitfor_probe_ctx *ctx) noexcept : ctx_(ctx) {}
    /** 1 for the first call of a wait, 2 for the next, ... */
    uint64_t sample() const noexcept { return waitfor_probe_ctx_sample(ctx_); }
    std::chrono::milliseconds elapsed() const noexcept {
        return std::chrono::milliseconds(waitfor_probe_ctx_elapsed_ms(ctx_));
    }
    /** Time left before the call is abandoned. */
    std::chrono::milliseconds budget() const noexcept {
        return std::chrono::milliseconds(waitfor_probe_ctx_budget_ms(ctx_));
    }
    size_t output_cap() const noexcept { return waitfor_probe_ctx_output_cap(ctx_); }
    /** Whether the result of this call is no longer wanted. */
    bool cancelled() const noexcept { return waitfor_probe_ctx_cancelled(ctx_); }
    /** Sleeps until cancelled or `timeout` passed; says whether cancelled. */
    bool wait_cancelled(std::chrono::milliseconds timeout) const noexcept {
        return waitfor_probe_ctx_wait_cancelled(ctx_, static_cast<uint64_t>(timeout.count()));
    }

private:
    const waitfor_probe_ctx *ctx_;
};

/** What a probe returns. Throw any exception for a probe error. */
struct Observation {
    /** The text the conditions read (ignored when `json` is set). */
    std::string text;
    /** Structured output (JSON text) for JSON pointer conditions. */
    std::optional<std::string> json;
    std::optional<int32_t> exit_code;
    /** The target can no longer change. */
    bool gone = false;

    static Observation of_text(std::string text) {
        Observation o;
        o.text = std::move(text);
        return o;
    }
    static Observation of_json(std::string json) {
        Observation o;
        o.json = std::move(json);
        return o;
    }
};

/** A probe: called on a library thread, one call at a time. */
using Probe = std::function<Observation(const ProbeContext &)>;

/** Hears a tool call's notices, to send to the MCP client: JSON
 *  {"kind": "progress", "progress", "total", "message"} (a
 *  notifications/progress) or {"kind": "log", "level", "message"} (a
 *  notifications/message), as the profile's original tool sends them.
 *  Called in order, on library threads (a refusal's: on the calling
 *  thread), before the call's answer. */
using NoticeHook = std::function<void(const std::string &notice_json)>;

/** Optional hooks of a wait; called on library threads. They must not
 *  block: waitfor::wait, call_tool and Wait::get (other than get_for(0ms))
 *  called from them throw Error (WAITFOR_ERR_INVALID_ARGUMENT), and so
 *  do they from the destructor of a probe or hook where a wait's end
 *  releases it (a library delivery thread): the result they would wait
 *  for may need that very thread. */
struct Hooks {
    /** Progress JSON {"samples", "elapsed_ms", "last_line"}. */
    std::function<void(const std::string &progress_json)> on_progress;
    /** The end: WAITFOR_OK with the result (or tool output) JSON, or an
     *  error status with the error JSON. Called once. */
    std::function<void(int32_t status, const std::string &json)> on_done;
    /** For a tool call (start_tool): the profile's notices. */
    NoticeHook on_notice;
};

/** What built-in probes may reach; the default grants nothing. See
 *  SECURITY.md. */
struct Grants {
    /** Programs built-in command probes may run, compared with argv[0] as
     *  given; empty: none (unless `any_command`). */
    std::vector<std::string> commands;
    /** Any program at all: for a user at their own shell, never for an
     *  agent's arguments. */
    bool any_command = false;
    /** Directories whose regular files (after links are resolved) built-in
     *  readers may read; empty: none. */
    std::vector<std::string> file_roots;
    /** Whether a tmux socket_name may be a path instead of a name. */
    bool tmux_socket_paths = false;
};

/** A host tool for `aura/wait_for`: gets the agent's tool name and
 *  arguments JSON, returns the tool's text output. Throw for a tool error;
 *  for a tool the host does not have, throw with the message "tool is not
 *  exposed by any connected MCP server" (AURA's error follows).
 *  Called on a library thread, one call at a time per wait. */
using ToolCaller = std::function<std::string(const std::string &name, const std::string &args_json,
                                             const ProbeContext &ctx)>;

/** What the host lends a wait or a tool call. */
struct Host {
    /** What built-in probes may reach. */
    Grants grants;
    /** For a tool call, overrides the profile's ceiling on its time limit;
     *  for a spec, the ceiling its max_wait is lowered to. */
    std::optional<std::chrono::milliseconds> max_wait_ceiling;
    /** The host's own tools for `aura/wait_for` (instead of its built-in
     *  run_command and read_file); empty: none. */
    ToolCaller tools;

    /** The host options JSON the C ABI takes (`waitfor_*_with_host`). */
    std::string options_json() const {
        auto list = [](const std::vector<std::string> &items) {
            std::string out = "[";
            for (size_t i = 0; i < items.size(); i++) out += (i ? "," : "") + detail::json_string(items[i]);
            return out + "]";
        };
        std::string json = "{\"grants\": {\"commands\": ";
        json += grants.any_command ? "\"any\"" : list(grants.commands);
        json += ", \"file_roots\": " + list(grants.file_roots);
        json += std::string(", \"tmux_socket_paths\": ") + (grants.tmux_socket_paths ? "true" : "false") + "}";
        if (max_wait_ceiling) json += ", \"max_wait_ceiling_ms\": " + std::to_string(max_wait_ceiling->count());
        return json + "}";
    }
};

/** Records that this process sent `keys` to tmux pane `pane_id` (`%N`) with
 *  `send-keys` (`literal`: with -l; `enter`: then Enter), so that waits on
 *  that pane discount the typed input. `socket_name` empty: the default
 *  tmux socket; else a name, or a path only when `host.grants` allow
 *  `tmux_socket_paths` (an Error with WAITFOR_ERR_INVALID_ARGUMENT, field
 *  `socket_name`, otherwise). */
inline void record_send_keys(std::string_view socket_name, std::string_view pane_id,
                             const std::vector<std::string> &keys, bool literal, bool enter,
                             const Host &host = {}) {
    std::string json = "[";
    for (size_t i = 0; i < keys.size(); i++) json += (i ? "," : "") + detail::json_string(keys[i]);
    json += "]";
    std::string options = host.options_json();
    char *error = nullptr;
    detail::check(waitfor_echo_record_send_keys_with_host(
                      socket_name.data(), socket_name.size(), pane_id.data(), pane_id.size(),
                      json.data(), json.size(), literal, enter, options.data(), options.size(),
                      &error),
                  error);
}

/** The small struct form of a result JSON. */
struct Result {
    std::string outcome;
    uint64_t samples = 0;
    uint64_t elapsed_ms = 0;
    /** The whole result JSON, for everything else. */
    std::string json;

    /** Reads the top-level `outcome`, `samples` and `elapsed_ms` of a
     *  result JSON (their keys occur nowhere else unescaped). */
    static Result parse(std::string json) {
        Result r;
        r.outcome = string_field(json, "outcome");
        r.samples = number_field(json, "samples");
        r.elapsed_ms = number_field(json, "elapsed_ms");
        r.json = std::move(json);
        return r;
    }

private:
    static size_t value_at(const std::string &json, const char *key) {
        size_t at = json.find("\"" + std::string(key) + "\":");
        return at == std::string::npos ? at : at + std::char_traits<char>::length(key) + 3;
    }
    static std::string string_field(const std::string &json, const char *key) {
        size_t at = value_at(json, key);
        if (at == std::string::npos || at >= json.size() || json[at] != '"') return {};
        size_t end = json.find('"', at + 1);
        return end == std::string::npos ? std::string() : json.substr(at + 1, end - at - 1);
    }
    static uint64_t number_field(const std::string &json, const char *key) {
        size_t at = value_at(json, key);
        return at == std::string::npos ? 0 : std::strtoull(json.c_str() + at, nullptr, 10);
    }
};

namespace detail {
/** The C++ side of one wait's callbacks: owned by the library through
 *  user_data, deleted by the finalizer (exactly once). */
struct Bridge {
    Probe probe;
    Hooks hooks;

    static int32_t call_probe(void *user_data, const waitfor_probe_ctx *ctx,
                              waitfor_observation *out) noexcept {
        auto *self = static_cast<Bridge *>(user_data);
        try {
            Observation o = self->probe(ProbeContext(ctx));
            int32_t status = o.json
                ? waitfor_observation_set_json(out, o.json->data(), o.json->size())
                : waitfor_observation_set_text(out, o.text.data(), o.text.size());
            if (o.exit_code) waitfor_observation_set_exit_code(out, *o.exit_code);
            if (o.gone) waitfor_observation_set_gone(out, true);
            return status;
        } catch (const std::exception &e) {
            std::string message = std::string("the probe threw: ") + e.what();
            waitfor_observation_set_error(out, message.data(), message.size());
        } catch (...) {
            static const char message[] = "the probe threw a non-standard exception";
            waitfor_observation_set_error(out, message, sizeof message - 1);
        }
        return 1;
    }

    static void call_progress(void *user_data, const char *json, size_t len) noexcept {
        try {
            static_cast<Bridge *>(user_data)->hooks.on_progress(std::string(json, len));
        } catch (...) {
            // A hook's exception must not reach the library; progress is advisory.
        }
    }

    static void call_done(void *user_data, int32_t status, const char *json, size_t len) noexcept {
        try {
            static_cast<Bridge *>(user_data)->hooks.on_done(status, std::string(json, len));
        } catch (...) {
            // As above: the handle still delivers the answer.
        }
    }

    static void finalize(void *user_data) noexcept { delete static_cast<Bridge *>(user_data); }

    /** C callbacks for a new Bridge; the library owns it from here on. */
    static waitfor_callbacks make(Probe probe, Hooks hooks) {
        auto *bridge = new Bridge{std::move(probe), std::move(hooks)};
        waitfor_callbacks cb{};
        cb.probe = bridge->probe ? call_probe : nullptr;
        cb.progress = bridge->hooks.on_progress ? call_progress : nullptr;
        cb.done = bridge->hooks.on_done ? call_done : nullptr;
        cb.user_data = bridge;
        cb.finalize = finalize;
        return cb;
    }
};

/** The C++ side of a host's tool caller: owned by the library through
 *  user_data, deleted by the finalizer (exactly once). */
struct ToolBridge {
    ToolCaller call;

    static int32_t call_tool(void *user_data, const char *name, size_t name_len, const char *args,
                             size_t args_len, const waitfor_probe_ctx *ctx,
                             waitfor_observation *out) noexcept {
        try {
            std::string text = static_cast<ToolBridge *>(user_data)->call(
                std::string(name, name_len), std::string(args, args_len), ProbeContext(ctx));
            return waitfor_observation_set_text(out, text.data(), text.size());
        } catch (const std::exception &e) {
            std::string message = std::string("the tool threw: ") + e.what();
            waitfor_observation_set_error(out, message.data(), message.size());
        } catch (...) {
            static const char message[] = "the tool threw a non-standard exception";
            waitfor_observation_set_error(out, message, sizeof message - 1);
        }
        return 1;
    }

    static void finalize(void *user_data) noexcept { delete static_cast<ToolBridge *>(user_data); }

    /** A C tool caller for a new ToolBridge (the library owns it from here
     *  on), or none when the host lends no tools. */
    static std::optional<waitfor_tool_caller> make(const ToolCaller &call) {
        if (!call) return std::nullopt;
        return waitfor_tool_caller{call_tool, new ToolBridge{call}, finalize};
    }
};

/** The C++ side of a tool call's notice hook: owned by the library
 *  through user_data, deleted by the finalizer (exactly once). */
struct NoticeBridge {
    NoticeHook hook;

    static void call_notice(void *user_data, const char *json, size_t len) noexcept {
        try {
            static_cast<NoticeBridge *>(user_data)->hook(std::string(json, len));
        } catch (...) {
            // A hook's exception must not reach the library; notices are advisory.
        }
    }

    static void finalize(void *user_data) noexcept { delete static_cast<NoticeBridge *>(user_data); }

    /** A C notice sink for a new NoticeBridge (the library owns it from
     *  here on), or none without a hook. */
    static std::optional<waitfor_notices> make(const NoticeHook &hook) {
        if (!hook) return std::nullopt;
        return waitfor_notices{call_notice, new NoticeBridge{hook}, finalize};
    }
};

template <typename T>
const T *ptr(const std::optional<T> &value) {
    return value ? &*value : nullptr;
}
}  // namespace detail

/** Cancels or wakes a wait from any thread; valid while its Wait lives. */
class Control {
public:
    explicit Control(const waitfor_handle *handle) noexcept : handle_(handle) {}
    void cancel() const noexcept { waitfor_handle_cancel(handle_); }
    void wake() const noexcept { waitfor_handle_wake(handle_); }

private:
    const waitfor_handle *handle_;
};

/** A running wait (move-only). Destroying it cancels the wait if it is
 *  still running, then frees the handle. */
class Wait {
public:
    explicit Wait(waitfor_handle *handle) noexcept : handle_(handle) {}
    Wait(Wait &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    Wait &operator=(Wait &&other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    Wait(const Wait &) = delete;
    Wait &operator=(const Wait &) = delete;
    ~Wait() { reset(); }

    /** Blocks (without CPU) until the wait ends; gives the result JSON
     *  (for a tool call: its output JSON). Throws Error for a tool error. */
    std::string get() const { return *get_for(std::chrono::milliseconds(-1)); }

    /** Blocks at most `timeout`; nullopt while the wait still runs. */
    std::optional<std::string> get_for(std::chrono::milliseconds timeout) const {
        char *out = nullptr, *error = nullptr;
        int32_t status = waitfor_handle_wait(handle_, static_cast<int64_t>(timeout.count()), &out, &error);
        if (status == WAITFOR_ERR_TIMEOUT) {
            waitfor_string_free(error);
            return std::nullopt;
        }
        detail::check(status, error);
        return detail::take(out);
    }

    void cancel() const noexcept { waitfor_handle_cancel(handle_); }
    void wake() const noexcept { waitfor_handle_wake(handle_); }
    /** A cancel/wake handle for other threads (valid while this Wait lives). */
    Control control() const noexcept { return Control(handle_); }
    /** The C handle, still owned by this Wait. */
    const waitfor_handle *raw() const noexcept { return handle_; }

private:
    void reset() noexcept {
        if (handle_ != nullptr) {
            waitfor_handle_cancel(handle_);
            waitfor_handle_free(handle_);
            handle_ = nullptr;
        }
    }
    waitfor_handle *handle_;
};

/** Starts a wait from a JSON spec; an empty `probe` uses the spec's
 *  built-in probe, which reaches only what `host.grants` allow. Returns at
 *  once. */
inline Wait start(std::string_view spec_json, Probe probe = {}, Hooks hooks = {},
                  const Host &host = {}) {
    std::string options = host.options_json();  // before the library owns anything
    waitfor_callbacks cb = detail::Bridge::make(std::move(probe), std::move(hooks));
    waitfor_handle *handle = nullptr;
    char *error = nullptr;
    detail::check(waitfor_start_with_host(spec_json.data(), spec_json.size(), options.data(),
                                          options.size(), &cb, &handle, &error),
                  error);
    return Wait(handle);
}

/** Runs a wait to its end, blocking only the calling thread; gives the
 *  result JSON. */
inline std::string wait(std::string_view spec_json, Probe probe = {}, Hooks hooks = {},
                        const Host &host = {}) {
    std::string options = host.options_json();  // before the library owns anything
    waitfor_callbacks cb = detail::Bridge::make(std::move(probe), std::move(hooks));
    char *out = nullptr, *error = nullptr;
    detail::check(waitfor_wait_with_host(spec_json.data(), spec_json.size(), options.data(),
                                         options.size(), &cb, &out, &error),
                  error);
    return detail::take(out);
}

/** Starts a profile's tool call (e.g. "aura/wait_for") with the agent's
 *  arguments JSON and what the host lends; Wait::get() gives the tool
 *  output JSON; `hooks.on_notice` hears the profile's notices. */
inline Wait start_tool(std::string_view profile, std::string_view args_json, Hooks hooks = {},
                       const Host &host = {}) {
    std::string options = host.options_json();
    auto notices = detail::NoticeBridge::make(hooks.on_notice);
    waitfor_callbacks cb = detail::Bridge::make(Probe(), std::move(hooks));
    auto tools = detail::ToolBridge::make(host.tools);
    waitfor_handle *handle = nullptr;
    char *error = nullptr;
    detail::check(waitfor_tool_start_with_notices(profile.data(), profile.size(), args_json.data(),
                                                  args_json.size(), options.data(), options.size(),
                                                  detail::ptr(tools), &cb, detail::ptr(notices),
                                                  &handle, &error),
                  error);
    return Wait(handle);
}

/** Runs a profile's tool call to its end with what the host lends; gives
 *  the tool output JSON; `on_notice` hears the profile's notices. */
inline std::string call_tool(std::string_view profile, std::string_view args_json,
                             const Host &host = {}, const NoticeHook &on_notice = {}) {
    std::string options = host.options_json();
    auto tools = detail::ToolBridge::make(host.tools);
    auto notices = detail::NoticeBridge::make(on_notice);
    char *out = nullptr, *error = nullptr;
    detail::check(waitfor_call_tool_with_notices(profile.data(), profile.size(), args_json.data(),
                                                 args_json.size(), options.data(), options.size(),
                                                 detail::ptr(tools), detail::ptr(notices), &out,
                                                 &error),
                  error);
    return detail::take(out);
}

}  // namespace waitfor

#endif /* WAITFOR_HPP */
