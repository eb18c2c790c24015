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
// cancelled request gets no response (as MCP asks).
//
// Usage: waitfor_mcp_server [--profile FAMILY/TOOL]... [--root DIR]...
//        [--allow-command PROG]... [--allow-send-keys]
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
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// Objects keep their members in the order they came: a wait echoes its
// arguments (a resume command) as the agent wrote them.
using json = nlohmann::ordered_json;

namespace {

const char *const kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

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
            return error("send_keys needs `target` and `keys`, both strings");
        const std::string target = args["target"], keys = args["keys"];
        const bool literal = args.value("literal", true), enter = args.value("enter", true);
        // -u on every tmux call: tmux reads and writes UTF-8 whatever the
        // locale (MCP clients start servers without LANG), as libwaitfor's own
        // tmux calls do.
        auto [found, pane] = run({"tmux", "-u", "display-message", "-p", "-t", target, "#{pane_id}"});
        while (!pane.empty() && (pane.back() == '\n' || pane.back() == '\r')) pane.pop_back();
        if (found != 0 || pane.empty() || pane[0] != '%') return error("no pane " + target + ": " + pane);
        // Recorded before the keys go out: a wait sampling the pane in between
        // must never see an unrecorded echo (a record for keys that fail to go
        // out just expires).
        waitfor::record_send_keys("", pane, {keys}, literal, enter);
        std::vector<std::string> argv = {"tmux", "-u", "send-keys", "-t", pane};
        if (literal) argv.push_back("-l");
        argv.push_back(keys);
        auto [sent, why] = run(argv);
        if (sent == 0 && enter) std::tie(sent, why) = run({"tmux", "-u", "send-keys", "-t", pane, "Enter"});
        if (sent != 0) return error("tmux send-keys failed: " + why);
        json out = {{"pane_id", pane}, {"keys", keys}, {"enter", enter}};
        return {{"content", {{{"type", "text"}, {"text", out.dump()}}}}, {"structuredContent", out}, {"isError", false}};
    }

    static json error(const std::string &message) {
        return {{"content", {{{"type", "text"}, {"text", message}}}}, {"isError", true}};
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

    /// Handles one incoming message.
    void handle(const json &message) {
        const std::string method = message.value("method", "");
        const bool is_request = message.contains("id");
        if (method == "notifications/cancelled") {
            cancel(message["params"].value("requestId", json()));
        } else if (!is_request) {
            // notifications/initialized and others: nothing to do.
        } else if (method == "initialize") {
            reply(message["id"], initialize(message.value("params", json::object())));
        } else if (method == "ping") {
            reply(message["id"], json::object());
        } else if (method == "tools/list") {
            reply(message["id"], {{"tools", definitions_}});
        } else if (method == "tools/call") {
            call_tool(message["id"], message.value("params", json::object()));
        } else if (method == "logging/setLevel") {
            int level = severity(message.value("params", json::object()).value("level", ""));
            if (level < 0) return fail(message["id"], -32602, "unknown logging level");
            log_level_ = level;
            reply(message["id"], json::object());
        } else {
            fail(message["id"], -32601, "method not found: " + method);
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

    json initialize(const json &params) {
        std::string wanted = params.value("protocolVersion", "");
        std::string version = kProtocolVersions[0];
        for (const char *v : kProtocolVersions)
            if (wanted == v) version = v;
        return {{"protocolVersion", version},
                {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
                {"serverInfo", {{"name", "waitfor-cpp-example"}, {"version", waitfor::version()}}}};
    }

    void call_tool(const json &id, const json &params) {
        const std::string name = params.value("name", "");
        if (name == "send_keys" && options_.send_keys) {
            reply(id, SendKeys::call(params.value("arguments", json::object())));
            return;
        }
        auto tool = tools_.find(name);
        if (tool == tools_.end()) {
            fail(id, -32602, "unknown tool: " + name);
            return;
        }
        json args = params.value("arguments", json::object());
        json token = params.contains("_meta") ? params["_meta"].value("progressToken", json()) : json();
        auto call = std::make_shared<Call>();
        waitfor::Hooks hooks;
        hooks.on_notice = [this, token](const std::string &notice_json) { notify(token, json::parse(notice_json)); };
        const std::string key = id.dump();
        hooks.on_done = [this, id, key, call](int32_t status, const std::string &answer) {
            {
                std::lock_guard<std::mutex> lock(call->mutex);
                call->finished = true;
                if (!call->cancelled) reply(id, tool_result(status, answer));
            }
            finish(key);
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
            reply(id, tool_result(e.status(), e.detail_json()));
            finish(key);
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

    /// A call is over: drop its handle, and count it out.
    void finish(const std::string &key) {
        std::lock_guard<std::mutex> lock(mutex_);
        running_.erase(key);
        active_--;
        idle_.notify_all();
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
        } else {
            std::cerr << "usage: waitfor_mcp_server [--profile FAMILY/TOOL]... [--root DIR]... "
                         "[--allow-command PROG]... [--allow-send-keys]"
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
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        json message = json::parse(line, nullptr, false);
        if (message.is_discarded() || !message.is_object()) {
            out.send({{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", -32700}, {"message", "parse error"}}}});
            continue;
        }
        server.handle(message);
    }
    server.shutdown();
    return 0;
}
