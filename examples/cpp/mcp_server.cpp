// A C++ MCP server over stdio, built on libwaitfor (waitfor.hpp) and
// nlohmann-json: JSON-RPC 2.0 with `initialize`, `ping`, `tools/list`,
// `tools/call`, `logging/setLevel` and `notifications/cancelled`. A wait's
// notices go out as its profile's original tool sends them:
// `notifications/progress` (with total and message) when the client sends
// a progressToken, `notifications/message` log messages at or above the
// level the client set (all by default).
//
// It serves libwaitfor's profiles by their MCP tool names: the generic
// `wait_for` (profile aura/wait_for, probing with the built-in run_command
// and read_file tools) and libtmux-cxx's `wait_for_text` on tmux panes
// (profile libtmux-cxx/wait_for_text), or the profiles named with
// --profile (one tool per name: libtmux-mcp's and libtmux-cxx's
// wait_for_text cannot be served together); plus, with --allow-send-keys,
// `send_keys`, which types into a pane and records the keys with the
// library so that `wait_for_text` discounts their echo. tmux runs on its default socket (set TMUX_TMPDIR
// for a private server).
//
// By default an agent can run no program and read no file: run_command
// runs only programs given with --allow-command, read_file reads only
// regular files inside directories given with --root (see SECURITY.md).
// Each tool's annotations say what it can do with these options.
// Every tool call runs as a wait on the library's engine: the main thread
// only reads requests, so a long wait never blocks another request, and a
// cancelled request gets no response (as MCP asks). A malformed request
// (wrong types, nesting deeper than 64, an id still in flight) gets a
// JSON-RPC error, a malformed notification is dropped: no line stops the server.
// No tool answer is over 4 MiB of JSON (kAnswerLimit): a larger one is a
// tool error saying so.
//
// Usage: waitfor_mcp_server [--profile FAMILY/TOOL]... [--root DIR]...
//        [--allow-command PROG]... [--allow-send-keys] [--max-tool-calls N]
// --max-tool-calls caps the waits running at once (libwaitfor's default:
// 1,024); one more is answered at once with a too_many_calls tool error.
//        (default profiles: aura/wait_for and libtmux-cxx/wait_for_text)
#include <waitfor.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// Objects keep their members in the order they came: a wait echoes its
// arguments (a resume command) as the agent wrote them.
using json = nlohmann::ordered_json;

namespace {

const char *const kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

// Lines nested deeper are refused as they are parsed: nlohmann copies and
// dumps values recursively, so a deep one would overflow the stack.
constexpr int kMaxDepth = 64;

// Most JSON one tool answer (a tools/call result) may take. An answer
// carries its output twice (text and structuredContent), and a control
// character is 6 or 7 bytes of JSON: past the TypeScript SDK client's 10 MiB
// read buffer, the client closes the whole session. libwaitfor bounds what
// a wait returns well under this (512 KiB of an event log, a 256 KiB
// sample); this is the guard for whatever a tool might answer beyond it.
// 4 MiB is the engine's own bound on a call's input, with room to spare
// under the client's (stdio only here).
constexpr size_t kAnswerLimit = 4 << 20;

/// A JSON-RPC error answer to the request being handled.
struct RpcError : std::runtime_error {
    int code;
    RpcError(int code, const std::string &message) : std::runtime_error(message), code(code) {}
};

/// The string member `key` of `params`, "" when absent or null; any other
/// type is invalid params (nlohmann would throw a type_error instead).
std::string text(const json &params, const char *key) {
    auto member = params.find(key);
    if (member == params.end() || member->is_null()) return "";
    if (!member->is_string()) throw RpcError(-32602, std::string("`") + key + "` must be a string");
    return *member;
}

/// Writes one JSON-RPC message a line; callable from any thread.
class Output {
public:
    void send(const json &message) {
        std::string line = message.dump();
        std::lock_guard<std::mutex> lock(mutex_);
        std::cout << line << '\n' << std::flush;
    }

private:
    std::mutex mutex_;
};

/// Runs a program and gives its exit status and output (stdout and stderr).
std::pair<int, std::string> run(const std::vector<std::string> &argv) {
    std::vector<char *> args;
    for (auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return {-1, "pipe failed"};
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, STDIN_FILENO);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(fds[1]);
    std::string output;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<size_t>(n));
    close(fds[0]);
    int status = -1;
    if (pid > 0) waitpid(pid, &status, 0);
    return {pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Tool annotations that are true for what a tool can do: only observe, or
/// run programs (which may do anything the server's user can).
json annotations(bool runs_programs) {
    return {{"readOnlyHint", !runs_programs}, {"destructiveHint", runs_programs}, {"openWorldHint", runs_programs}};
}

/// A tool result that reports `message` as the tool's error.
json tool_error(const std::string &message) {
    return {{"content", {{{"type", "text"}, {"text", message}}}}, {"isError", true}};
}

/// The `send_keys` tool: its definition, and the call.
struct SendKeys {
    static json definition() {
        return {
            {"name", "send_keys"},
            {"title", "Send keys to a pane"},
            {"description",
             "Type keys into a tmux pane (tmux send-keys) and record them, so that wait_for_text "
             "discounts their echo and waits only for the program's output."},
            {"inputSchema",
             {{"type", "object"},
              {"additionalProperties", false},
              {"required", {"target", "keys"}},
              {"properties",
               {{"target", {{"type", "string"}, {"maxLength", 512}, {"description", "Pane ID or pane target."}}},
                {"keys", {{"type", "string"}, {"description", "Text (literal) or a tmux key name."}}},
                {"literal", {{"type", "boolean"}, {"default", true}, {"description", "Send as text (-l)."}}},
                {"enter", {{"type", "boolean"}, {"default", true}, {"description", "Press Enter after."}}}}}}},
            // A shell in the pane runs what it types.
            {"annotations", annotations(true)},
        };
    }

    /// The MCP tool result of one call.
    static json call(const json &args) {
        if (!args.is_object() || !args.value("target", json()).is_string() ||
            !args.value("keys", json()).is_string())
            return tool_error("send_keys needs `target` and `keys`, both strings");
        const std::string target = args["target"], keys = args["keys"];
        const bool literal = args.value("literal", true), enter = args.value("enter", true);
        // -u on every tmux call: tmux reads and writes UTF-8 whatever the
        // locale (MCP clients start servers without LANG), as libwaitfor's own
        // tmux calls do.
        auto [found, pane] = run({"tmux", "-u", "display-message", "-p", "-t", target, "#{pane_id}"});
        while (!pane.empty() && (pane.back() == '\n' || pane.back() == '\r')) pane.pop_back();
        if (found != 0 || pane.empty() || pane[0] != '%') return tool_error("no pane " + target + ": " + pane);
        // Recorded before the keys go out: a wait sampling the pane in between
        // must never see an unrecorded echo (a record for keys that fail to go
        // out just expires).
        waitfor::record_send_keys("", pane, {keys}, literal, enter);
        std::vector<std::string> argv = {"tmux", "-u", "send-keys", "-t", pane};
        if (literal) argv.push_back("-l");
        // --: keys that start with '-' are keys, not send-keys flags.
        argv.push_back("--");
        argv.push_back(keys);
        auto [sent, why] = run(argv);
        if (sent == 0 && enter) std::tie(sent, why) = run({"tmux", "-u", "send-keys", "-t", pane, "Enter"});
        if (sent != 0) return tool_error("tmux send-keys failed: " + why);
        json out = {{"pane_id", pane}, {"keys", keys}, {"enter", enter}};
        return {{"content", {{{"type", "text"}, {"text", out.dump()}}}}, {"structuredContent", out}, {"isError", false}};
    }

};

/// One tool call in flight.
struct Call {
    std::mutex mutex;
    bool cancelled = false;
    bool finished = false;
};

/// What the command line lets agents reach.
struct Options {
    std::set<std::string> profiles;
    waitfor::Host host;  // grants for the built-in run_command and read_file
    bool send_keys = false;
};

class Server {
public:
    Server(Output &out, Options options) : out_(out), options_(std::move(options)) {
        const bool runs = options_.host.grants.any_command || !options_.host.grants.commands.empty();
        for (auto &def : json::parse(waitfor::profiles())) {
            std::string profile = def["profile"];
            if (options_.profiles.count(profile) != 0) {
                json tool = def["tool"];
                // wait_for runs what run_command may run; the other waits read.
                tool["annotations"].update(annotations(profile == "aura/wait_for" && runs));
                tools_[tool["name"].get<std::string>()] = profile;
                definitions_.push_back(tool);
            }
        }
        if (options_.send_keys) definitions_.push_back(SendKeys::definition());
    }

    /// Handles one line from the client: a request always gets an answer
    /// (an error when malformed), a notification never does.
    void handle(const std::string &line) {
        bool too_deep = false;
        const json message = json::parse(
            line,
            [&too_deep](int depth, json::parse_event_t, json &) {
                too_deep = too_deep || depth > kMaxDepth;
                return depth <= kMaxDepth;  // drop what is deeper: the value stays shallow
            },
            false);
        if (message.is_discarded()) return fail(nullptr, -32700, "parse error");
        if (!message.is_object()) return fail(nullptr, -32600, "invalid request: not a JSON object");
        const bool is_request = message.contains("id");
        json id = message.value("id", json());
        // JSON-RPC ids are strings or numbers: an error about another goes back with id null.
        const bool usable = id.is_string() || id.is_number() || id.is_null();
        if (!usable) id = nullptr;
        try {
            if (!usable) throw RpcError(-32600, "invalid request: the id must be a string or a number");
            if (too_deep)
                throw RpcError(-32600, "invalid request: nested deeper than " + std::to_string(kMaxDepth) + " levels");
            dispatch(message, id, is_request);
        } catch (const RpcError &e) {
            if (is_request) fail(id, e.code, e.what());
        } catch (const std::exception &e) {
            // A bug costs one answer, not the server.
            std::cerr << "waitfor_mcp_server: internal error: " << e.what() << std::endl;
            if (is_request) fail(id, -32603, "internal error");
        }
    }

    /// Cancels every call still running (stdin closed) and waits until
    /// their callbacks are over, so none outlives the server.
    void shutdown() {
        std::map<std::string, Running> running;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            running.swap(running_);
        }
        for (auto &entry : running) {
            std::lock_guard<std::mutex> lock(entry.second.call->mutex);
            entry.second.call->cancelled = true;
        }
        running.clear();  // each Wait's destructor cancels and frees
        std::unique_lock<std::mutex> lock(mutex_);
        idle_.wait(lock, [this] { return active_ == 0; });
    }

private:
    struct Running {
        std::shared_ptr<Call> call;
        waitfor::Wait wait;
    };

    void dispatch(const json &message, const json &id, bool is_request) {
        auto method = message.find("method");
        if (method == message.end() || !method->is_string())
            throw RpcError(-32600, "invalid request: `method` must be a string");
        const json params = message.value("params", json::object());
        if (!params.is_object()) throw RpcError(-32602, "invalid params: not a JSON object");
        const std::string name = *method;
        if (name == "notifications/cancelled") {
            const json request = params.value("requestId", json());
            if (request.is_string() || request.is_number()) cancel(request);
        } else if (!is_request) {
            // notifications/initialized and others: nothing to do.
        } else if (in_flight(id)) {
            // The id names a call still running: a second use must leave it alone.
            fail(id, -32600, "request id already in use");
        } else if (name == "initialize") {
            reply(id, initialize(params));
        } else if (name == "ping") {
            reply(id, json::object());
        } else if (name == "tools/list") {
            reply(id, {{"tools", definitions_}});
        } else if (name == "tools/call") {
            call_tool(id, params);
        } else if (name == "logging/setLevel") {
            int level = severity(text(params, "level"));
            if (level < 0) return fail(id, -32602, "unknown logging level");
            log_level_ = level;
            reply(id, json::object());
        } else {
            fail(id, -32601, "method not found: " + name);
        }
    }

    /// Whether a call with this id still runs. Only the main thread adds
    /// calls, so the answer holds until it starts the next one.
    bool in_flight(const json &id) {
        std::lock_guard<std::mutex> lock(mutex_);
        return running_.count(id.dump()) != 0;
    }

    json initialize(const json &params) {
        const std::string wanted = text(params, "protocolVersion");
        std::string version = kProtocolVersions[0];
        for (const char *v : kProtocolVersions)
            if (wanted == v) version = v;
        return {{"protocolVersion", version},
                {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
                {"serverInfo", {{"name", "waitfor-cpp-example"}, {"version", waitfor::version()}}}};
    }

    void call_tool(const json &id, const json &params) {
        const std::string name = text(params, "name");
        if (name == "send_keys" && options_.send_keys) {
            reply_tool(id, SendKeys::call(params.value("arguments", json::object())));
            return;
        }
        auto tool = tools_.find(name);
        if (tool == tools_.end()) {
            fail(id, -32602, "unknown tool: " + name);
            return;
        }
        json args = params.value("arguments", json::object());
        const json meta = params.value("_meta", json::object());
        if (!meta.is_object()) throw RpcError(-32602, "`_meta` must be an object");
        json token = meta.value("progressToken", json());
        if (!token.is_null() && !token.is_string() && !token.is_number())
            throw RpcError(-32602, "`progressToken` must be a string or a number");
        auto call = std::make_shared<Call>();
        waitfor::Hooks hooks;
        hooks.on_notice = [this, token](const std::string &notice_json) { notify(token, json::parse(notice_json)); };
        const std::string key = id.dump();
        hooks.on_done = [this, id, key, call](int32_t status, const std::string &answer) {
            bool answered;
            {
                // The id is free again before the client sees the answer (it
                // may reuse it at once).
                std::lock_guard<std::mutex> lock(mutex_);
                std::lock_guard<std::mutex> call_lock(call->mutex);
                call->finished = true;
                answered = !call->cancelled;
                running_.erase(key);
            }
            if (answered) reply_tool(id, tool_result(status, answer));
            finish();
        };
        {
            std::lock_guard<std::mutex> lock(mutex_);
            active_++;
        }
        std::cerr << "waitfor_mcp_server: tools/call " << key << " -> " << tool->second << std::endl;
        try {
            waitfor::Wait wait = waitfor::start_tool(tool->second, args.dump(), std::move(hooks), options_.host);
            std::lock_guard<std::mutex> lock(mutex_);
            std::lock_guard<std::mutex> call_lock(call->mutex);
            if (!call->finished) running_.emplace(key, Running{call, std::move(wait)});
        } catch (const waitfor::Error &e) {
            // The arguments broke the tool's input schema: a tool error the
            // agent can read and correct.
            reply_tool(id, tool_result(e.status(), e.detail_json()));
            finish();
        }
    }

    /// MCP's log levels, least severe first; -1 for none of them.
    static int severity(const std::string &level) {
        static const char *const levels[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
        for (int i = 0; i < 8; i++)
            if (level == levels[i]) return i;
        return -1;
    }

    /// Sends a wait's notice: progress when the client asked for it (a
    /// progressToken), a log message at or above the client's level.
    void notify(const json &token, const json &notice) {
        if (notice["kind"] == "progress" && !token.is_null()) {
            json params = {{"progressToken", token}, {"progress", notice["progress"]}};
            if (!notice["total"].is_null()) params["total"] = notice["total"];
            if (!notice["message"].is_null()) params["message"] = notice["message"];
            out_.send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", params}});
        } else if (notice["kind"] == "log" && severity(notice["level"]) >= log_level_) {
            json params = {{"level", notice["level"]}, {"logger", "waitfor"}, {"data", notice["message"]}};
            out_.send({{"jsonrpc", "2.0"}, {"method", "notifications/message"}, {"params", params}});
        }
    }

    /// The MCP tool result for a finished wait or a rejected call.
    static json tool_result(int32_t status, const std::string &answer) {
        if (status == WAITFOR_OK) {
            json output = json::parse(answer);
            return {{"content", {{{"type", "text"}, {"text", answer}}}},
                    {"structuredContent", output},
                    {"isError", false}};
        }
        // `code: message`, as the other example servers and bindings word a refusal.
        json detail = json::parse(answer);
        std::string text = detail.value("code", "") + ": " + detail.value("message", answer);
        return {{"content", {{{"type", "text"}, {"text", text}}}}, {"isError", true}};
    }

    void cancel(const json &request_id) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto running = running_.find(request_id.dump());
        if (running == running_.end()) return;
        {
            std::lock_guard<std::mutex> call_lock(running->second.call->mutex);
            running->second.call->cancelled = true;
        }
        std::cerr << "waitfor_mcp_server: cancelled request " << request_id.dump() << std::endl;
        running->second.wait.cancel();
    }

    /// A call's callbacks are over: count it out.
    void finish() {
        std::lock_guard<std::mutex> lock(mutex_);
        active_--;
        idle_.notify_all();
    }

    /// Answers a tools/call with `result`, or with a tool error saying why
    /// when its JSON is over kAnswerLimit: the client gets a reason it can
    /// act on, never a message it may not read.
    void reply_tool(const json &id, const json &result) {
        const size_t size = result.dump().size();
        if (size <= kAnswerLimit) return reply(id, result);
        reply(id, tool_error("the answer was not sent: it is " + std::to_string(size) +
                                  " bytes of JSON, over this server's limit of " + std::to_string(kAnswerLimit) +
                                  "; ask for less (a narrower filter, a smaller file or output)"));
    }

    void reply(const json &id, const json &result) {
        out_.send({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
    }

    void fail(const json &id, int code, const std::string &message) {
        out_.send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
    }

    Output &out_;
    const Options options_;
    std::map<std::string, std::string> tools_;  // tool name -> profile
    json definitions_ = json::array();
    std::mutex mutex_;
    std::map<std::string, Running> running_;  // request id (JSON) -> call
    int active_ = 0;                          // calls whose callbacks may still run
    std::atomic<int> log_level_{0};            // the least severe log level sent (logging/setLevel)
    std::condition_variable idle_;
};

/// Why these profiles cannot be served together (a name no profile has, or
/// two profiles whose tools have the same name); "" when they can.
std::string unservable(const std::set<std::string> &profiles) {
    std::set<std::string> known;
    std::map<std::string, std::string> served;  // tool name -> profile
    for (auto &def : json::parse(waitfor::profiles())) {
        const std::string profile = def["profile"], name = def["tool"]["name"];
        known.insert(profile);
        if (profiles.count(profile) == 0) continue;
        auto [other, fresh] = served.emplace(name, profile);
        if (!fresh) return "--profile " + other->second + " and " + profile + " both name their tool `" + name + "`";
    }
    for (auto &profile : profiles)
        if (known.count(profile) == 0) return "unknown profile " + profile;
    return "";
}

/// Whether `text` is a count: decimal digits only, at most 18 of them.
bool is_count(const std::string &text) {
    return !text.empty() && text.size() <= 18 &&
           text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

int main(int argc, char **argv) {
    Options options;
    for (int i = 1; i < argc; i++) {
        const std::string flag = argv[i];
        const bool has_value = i + 1 < argc;
        if (flag == "--allow-send-keys") {
            options.send_keys = true;
        } else if (flag == "--profile" && has_value) {
            options.profiles.insert(argv[++i]);
        } else if (flag == "--root" && has_value) {
            options.host.grants.file_roots.push_back(argv[++i]);
        } else if (flag == "--allow-command" && has_value) {
            options.host.grants.commands.push_back(argv[++i]);
        } else if (flag == "--max-tool-calls" && has_value && is_count(argv[i + 1])) {
            waitfor::set_max_tool_calls(std::stoull(argv[++i]));
        } else {
            std::cerr << "usage: waitfor_mcp_server [--profile FAMILY/TOOL]... [--root DIR]... "
                         "[--allow-command PROG]... [--allow-send-keys] [--max-tool-calls N]"
                      << std::endl;
            return 2;
        }
    }
    if (options.profiles.empty()) options.profiles = {"aura/wait_for", "libtmux-cxx/wait_for_text"};
    const std::string why = unservable(options.profiles);
    if (!why.empty()) {
        std::cerr << "waitfor_mcp_server: " << why << std::endl;
        return 2;
    }

    Output out;
    Server server(out, std::move(options));
    std::string line;
    while (std::getline(std::cin, line))
        if (!line.empty()) server.handle(line);
    server.shutdown();
    return 0;
}
