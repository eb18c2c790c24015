// The C++17 wrapper (waitfor.hpp) over the C ABI, with GoogleTest: every
// export through the wrapper or directly, each status code, probes that
// throw, hang, return invalid UTF-8 or too much, cancel and wake from other
// threads, the finalizer count, many concurrent waits, the shared vectors.
#include "waitfor.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const char *kReadySpec =
    R"({"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 30000})";

// Counts its own destruction: captured by a probe, it dies with the
// library's copy of the callbacks, i.e. when the finalizer runs.
struct Sentinel {
    explicit Sentinel(std::atomic<int> &count) : count(count) {}
    ~Sentinel() { count.fetch_add(1); }
    std::atomic<int> &count;
};

// Polls a condition with a generous deadline (the finalizer may run on a
// library thread just after a wait returned).
template <class F>
bool eventually(F done) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    return done();
}

waitfor::Probe ready_after(int n) {
    return [n](const waitfor::ProbeContext &ctx) {
        return waitfor::Observation::of_text(ctx.sample() >= static_cast<uint64_t>(n) ? "ready\n"
                                                                                      : "starting\n");
    };
}

int32_t status_of(const std::function<void()> &call) {
    try {
        call();
    } catch (const waitfor::Error &e) {
        return e.status();
    }
    return WAITFOR_OK;
}

// A host that lets built-in readers read files under /tmp only.
waitfor::Host tmp_reader() {
    waitfor::Host host;
    host.grants.file_roots = {"/tmp"};
    return host;
}

}  // namespace

TEST(Info, VersionsNamesAndSchemas) {
    EXPECT_EQ(waitfor::abi_version(), WAITFOR_ABI_VERSION);
    EXPECT_FALSE(waitfor::version().empty());
    EXPECT_STREQ(waitfor_status_name(WAITFOR_ERR_INVALID_UTF8), "invalid_utf8");
    EXPECT_EQ(sizeof(waitfor_callbacks), 5 * sizeof(void *));
    EXPECT_TRUE(json::parse(waitfor::spec_schema()).is_object());
    EXPECT_TRUE(json::parse(waitfor::result_schema()).contains("properties"));
    json profiles = json::parse(waitfor::profiles());
    ASSERT_TRUE(profiles.is_array());
    bool aura = false;
    for (auto &p : profiles) aura |= p["profile"] == "aura/wait_for" && p["tool"]["name"] == "wait_for";
    EXPECT_TRUE(aura);
    // The tool definitions are the profiles' tools, in the same order.
    json tools = json::parse(waitfor::tool_definitions());
    ASSERT_EQ(tools.size(), profiles.size());
    for (size_t i = 0; i < tools.size(); ++i) EXPECT_EQ(tools[i], profiles[i]["tool"]);
}

TEST(Info, Durations) {
    EXPECT_EQ(waitfor::parse_duration("2m"), 120000ms);
    EXPECT_EQ(waitfor::format_duration(90000ms), "90s");
    EXPECT_EQ(status_of([] { waitfor::parse_duration("-1s"); }), WAITFOR_ERR_INVALID_ARGUMENT);
    // One rule in every language: a fraction rounds, a negative count is
    // refused rather than wrapped to a huge unsigned value.
    EXPECT_EQ(waitfor::format_duration(1.5), "2ms");
    EXPECT_EQ(status_of([] { waitfor::format_duration(-1ms); }), WAITFOR_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { waitfor::format_duration(std::nan("")); }), WAITFOR_ERR_INVALID_ARGUMENT);
}

TEST(Wait, StdFunctionProbeMatches) {
    auto r = waitfor::Result::parse(waitfor::wait(kReadySpec, ready_after(3)));
    EXPECT_EQ(r.outcome, "matched");
    EXPECT_EQ(r.samples, 3u);
    EXPECT_EQ(json::parse(r.json)["matched_lines"], json::array({"ready"}));
}

TEST(Wait, BuiltInProbeWhenNoProbeGiven) {
    waitfor::Host host;
    host.grants.commands = {"echo"};
    auto r = waitfor::Result::parse(waitfor::wait(
        R"({"probe": {"command": {"argv": ["echo", "hi"]}}, "until": {"matches": "hi"}})", {}, {},
        host));
    EXPECT_EQ(r.outcome, "matched");
}

TEST(Grants, BuiltInProbesReachNothingByDefault) {
    for (const char *spec : {R"({"probe": {"command": {"argv": ["sh", "-c", "id"]}}, "until": {"matches": "uid"}})",
                             R"({"probe": {"file": {"path": "/etc/shadow"}}, "until": {"matches": "root"}})"}) {
        try {
            waitfor::wait(spec);
            FAIL() << "no error for " << spec;
        } catch (const waitfor::Error &e) {
            EXPECT_EQ(e.status(), WAITFOR_ERR_INVALID_SPEC);
            EXPECT_EQ(json::parse(e.detail_json())["rule"], "not_granted") << spec;
        }
    }
    for (const char *args :
         {R"({"probe": {"tool": "run_command", "args": {"argv": ["sh", "-c", "id"]}}, "until": {"matches": "uid"}})",
          R"({"probe": {"tool": "read_file", "args": {"path": "/etc/shadow"}}, "until": {"matches": "root"}})"}) {
        try {
            waitfor::call_tool("aura/wait_for", args);
            FAIL() << "no error for " << args;
        } catch (const waitfor::Error &e) {
            json detail = json::parse(e.detail_json());
            EXPECT_EQ(detail["rule"], "not_granted") << args;
            EXPECT_NE(detail["message"].get<std::string>().find("has not granted"), std::string::npos);
        }
    }
    // A host that grants one program still refuses the others.
    waitfor::Host host;
    host.grants.commands = {"echo"};
    EXPECT_EQ(status_of([&] {
                  waitfor::call_tool("aura/wait_for",
                                     R"({"probe": {"tool": "run_command", "args": {"argv": ["sh", "-c", "id"]}},
                                         "until": {"matches": "uid"}})",
                                     host);
              }),
              WAITFOR_ERR_INVALID_SPEC);
}

TEST(Grants, HostToolsAreCalledWithTheAgentsNameAndArguments) {
    auto finalized = std::make_shared<std::atomic<int>>(0);
    struct Calls {
        std::vector<std::pair<std::string, std::string>> seen;
        std::shared_ptr<std::atomic<int>> finalized;
        ~Calls() { ++*finalized; }
    };
    auto calls = std::make_shared<Calls>();
    calls->finalized = finalized;
    {
        waitfor::Host host;
        host.tools = [calls](const std::string &name, const std::string &args,
                             const waitfor::ProbeContext &ctx) -> std::string {
            calls->seen.emplace_back(name, args);
            if (name == "broken") throw std::runtime_error("kubectl: connection refused");
            return ctx.sample() < 2 ? "web 0/1 Pending" : "web 1/1 Running";
        };
        json out = json::parse(waitfor::call_tool(
            "aura/wait_for",
            R"({"probe": {"tool": "kubectl_get", "args": {"name": "web"}}, "until": {"matches": "Running"}, "poll_sec": 1})",
            host));
        EXPECT_EQ(out["reason"], "matched");
        EXPECT_EQ(out["last_observation"], "web 1/1 Running");
        ASSERT_EQ(calls->seen.size(), 2u);
        EXPECT_EQ(calls->seen[0].first, "kubectl_get");
        EXPECT_EQ(json::parse(calls->seen[0].second), json({{"name", "web"}}));

        // A tool that throws is the wait's runtime error, with what().
        auto w = waitfor::start_tool("aura/wait_for",
                                     R"({"probe": {"tool": "broken", "args": {}}, "until": {"matches": "x"}})", {}, host);
        try {
            w.get();
            FAIL() << "no error";
        } catch (const waitfor::Error &e) {
            EXPECT_EQ(e.status(), WAITFOR_ERR_RUNTIME);
            EXPECT_NE(e.detail_json().find("connection refused"), std::string::npos);
        }
    }
    calls.reset();
    // Each call's copy of the tool caller is released by its finalizer.
    for (int i = 0; i < 1000 && finalized->load() == 0; i++) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(finalized->load(), 1);
}

TEST(Wait, JsonObservationAndExitCode) {
    auto probe = [](const waitfor::ProbeContext &) {
        auto o = waitfor::Observation::of_json(R"({"state": {"phase": "Running"}})");
        o.exit_code = 0;
        return o;
    };
    json r = json::parse(waitfor::wait(
        R"({"until": {"json": {"pointer": "/state/phase", "equals": "Running"}}, "max_wait_ms": 30000})",
        probe));
    EXPECT_EQ(r["outcome"], "matched");
    EXPECT_EQ(r["exit_code"], 0);
}

TEST(Probe, ThrowBecomesProbeErrorWithMessage) {
    json r = json::parse(waitfor::wait(kReadySpec, [](const waitfor::ProbeContext &) -> waitfor::Observation {
        throw std::runtime_error("socket closed");
    }));
    EXPECT_EQ(r["outcome"], "probe_error");
    EXPECT_NE(r["probe"]["last_error"].get<std::string>().find("socket closed"), std::string::npos);

    r = json::parse(waitfor::wait(kReadySpec, [](const waitfor::ProbeContext &) -> waitfor::Observation {
        throw 42;
    }));
    EXPECT_EQ(r["outcome"], "probe_error");
    EXPECT_NE(r["probe"]["last_error"].get<std::string>().find("non-standard"), std::string::npos);
}

TEST(Probe, ToleratedErrorsThenMatch) {
    json r = json::parse(waitfor::wait(
        R"({"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 30000, "on_probe_error": {"tolerate": 5}})",
        [](const waitfor::ProbeContext &ctx) {
            if (ctx.sample() < 3) throw std::runtime_error("flaky");
            return waitfor::Observation::of_text("ready");
        }));
    EXPECT_EQ(r["outcome"], "matched");
    EXPECT_EQ(r["probe"]["errors"], 2);
}

TEST(Probe, InvalidUtf8IsAProbeError) {
    json r = json::parse(waitfor::wait(kReadySpec, [](const waitfor::ProbeContext &) {
        return waitfor::Observation::of_text("bad \xC3\x28 text");
    }));
    EXPECT_EQ(r["outcome"], "probe_error");
    EXPECT_NE(r["error"].dump().find("UTF-8"), std::string::npos);
}

TEST(Probe, InvalidJsonObservationIsAProbeError) {
    json r = json::parse(waitfor::wait(kReadySpec, [](const waitfor::ProbeContext &) {
        return waitfor::Observation::of_json("{not json");
    }));
    EXPECT_EQ(r["outcome"], "probe_error");
}

TEST(Probe, OverTheCapEndsWithError) {
    json r = json::parse(waitfor::wait(
        R"({"until": {"matches": "ready"}, "output_cap_bytes": 1024, "max_wait_ms": 30000})",
        [](const waitfor::ProbeContext &ctx) {
            EXPECT_EQ(ctx.output_cap(), 1024u);
            return waitfor::Observation::of_text(std::string(ctx.output_cap() + 1, 'x'));
        }));
    EXPECT_EQ(r["outcome"], "error");
}

TEST(Probe, HungProbeIsAbandonedAtTheDeadlineAndToldSo) {
    std::atomic<bool> told{false};
    json r = json::parse(waitfor::wait(
        R"({"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 200})",
        [&told](const waitfor::ProbeContext &ctx) {
            EXPECT_GT(ctx.budget().count(), 0);
            while (!ctx.wait_cancelled(1000ms)) {
            }
            told = ctx.cancelled();
            return waitfor::Observation::of_text("late");
        }));
    EXPECT_EQ(r["probe"]["abandoned"], 1);
    EXPECT_TRUE(eventually([&] { return told.load(); }));
}

TEST(Finalizer, RunsExactlyOnceOnSuccessAndOnEveryError) {
    std::atomic<int> finalized{0};
    auto probe_with_sentinel = [&finalized] {
        auto sentinel = std::make_shared<Sentinel>(finalized);
        return [sentinel](const waitfor::ProbeContext &) { return waitfor::Observation::of_text("ready"); };
    };
    waitfor::wait(kReadySpec, probe_with_sentinel());
    EXPECT_EQ(status_of([&] { waitfor::wait("{broken", probe_with_sentinel()); }), WAITFOR_ERR_INVALID_JSON);
    EXPECT_EQ(status_of([&] { waitfor::wait(R"({"until": {}})", probe_with_sentinel()); }),
              WAITFOR_ERR_INVALID_SPEC);
    EXPECT_EQ(status_of([&] { waitfor::start(std::string_view("\xff", 1), probe_with_sentinel()); }),
              WAITFOR_ERR_INVALID_UTF8);
    {
        auto w = waitfor::start(kReadySpec, probe_with_sentinel());
        w.get();
    }
    EXPECT_TRUE(eventually([&] { return finalized.load() == 5; }));
    std::this_thread::sleep_for(50ms);  // and never a sixth time
    EXPECT_EQ(finalized.load(), 5);
}

TEST(Errors, EveryStatusCode) {
    EXPECT_EQ(status_of([] { waitfor::wait("[1,", ready_after(1)); }), WAITFOR_ERR_INVALID_JSON);
    EXPECT_EQ(status_of([] { waitfor::wait(std::string_view("{\"a\":\"\xff\"}"), ready_after(1)); }),
              WAITFOR_ERR_INVALID_UTF8);
    EXPECT_EQ(status_of([] { waitfor::wait(std::string_view(nullptr, 0), ready_after(1)); }),
              WAITFOR_ERR_INVALID_JSON);
    char *out = nullptr;
    EXPECT_EQ(waitfor_wait(nullptr, 3, nullptr, &out, nullptr), WAITFOR_ERR_NULL_POINTER);
    try {
        waitfor::wait(R"({"until": {"matches": "("}, "regex": true})", ready_after(1));
        FAIL() << "no error";
    } catch (const waitfor::Error &e) {
        EXPECT_EQ(e.status(), WAITFOR_ERR_INVALID_SPEC);
        EXPECT_STREQ(e.kind(), "invalid_spec");
        EXPECT_EQ(e.code(), "invalid_spec");
        json detail = json::parse(e.detail_json());
        EXPECT_EQ(detail["field"], "until.matches");
        EXPECT_EQ(detail["rule"], "invalid_regex");
    }
    EXPECT_EQ(status_of([] { waitfor::call_tool("no/such", "{}"); }), WAITFOR_ERR_UNKNOWN_PROFILE);
    EXPECT_EQ(status_of([] {
                  waitfor::call_tool("aura/wait_for",
                                     R"({"probe": {"tool": "read_file", "args": {"path": "/tmp/waitfor-cpp-no-such-file"}},
                                         "until": {"matches": "x"}, "poll_sec": 1, "max_wait_sec": 5})",
                                     tmp_reader());
              }),
              WAITFOR_ERR_RUNTIME);
    auto w = waitfor::start(kReadySpec, ready_after(1000000));
    EXPECT_FALSE(w.get_for(0ms).has_value());  // WAITFOR_ERR_TIMEOUT
    char *error = nullptr;
    EXPECT_EQ(waitfor_handle_wait(w.raw(), 0, &out, &error), WAITFOR_ERR_TIMEOUT);
    waitfor_string_free(error);
    EXPECT_EQ(waitfor_selftest_panic(&error), WAITFOR_ERR_PANIC);
    EXPECT_NE(std::string(error).find("selftest"), std::string::npos);
    waitfor_string_free(error);
    EXPECT_EQ(status_of([] { waitfor::parse_duration("soon"); }), WAITFOR_ERR_INVALID_ARGUMENT);
}

TEST(Handle, CancelFromAnotherThread) {
    std::atomic<int> done_calls{0};
    waitfor::Hooks hooks;
    hooks.on_done = [&](int32_t status, const std::string &j) {
        EXPECT_EQ(status, WAITFOR_OK);
        EXPECT_EQ(json::parse(j)["outcome"], "cancelled");
        done_calls++;
    };
    auto w = waitfor::start(kReadySpec, ready_after(1000000), hooks);
    std::thread canceller([control = w.control()] {
        std::this_thread::sleep_for(30ms);  // the wait runs until cancelled, whenever that is
        control.cancel();
    });
    EXPECT_EQ(json::parse(w.get())["outcome"], "cancelled");
    canceller.join();
    EXPECT_EQ(done_calls.load(), 1);
    EXPECT_EQ(json::parse(w.get())["outcome"], "cancelled");  // the answer stays
}

TEST(Handle, WakeFromAnotherThreadSamplesNow) {
    // The wake comes once the first sample has begun: one before it (the
    // wait's patterns still compiling) has no sample to bring forward and
    // is dropped, so a wake after a fixed sleep raced the engine's start.
    auto probed = std::make_shared<std::atomic<int>>(0);
    auto w = waitfor::start(R"({"until": {"matches": "ready"}, "interval_ms": 60000, "max_wait_ms": 120000})",
                            [probed, ready = ready_after(2)](const waitfor::ProbeContext &ctx) {
                                probed->fetch_add(1);
                                return ready(ctx);
                            });
    std::thread waker([control = w.control(), probed] {
        eventually([&] { return probed->load() >= 1; });
        control.wake();
    });
    auto result = w.get_for(30s);
    waker.join();
    ASSERT_TRUE(result.has_value());
    json r = json::parse(*result);
    EXPECT_EQ(r["outcome"], "matched");
    EXPECT_EQ(r["woken"], true);
}

TEST(Handle, SeveralThreadsWaitOnOneHandle) {
    auto w = waitfor::start(kReadySpec, ready_after(5));
    std::vector<std::thread> waiters;
    std::atomic<int> matched{0};
    for (int i = 0; i < 4; i++)
        waiters.emplace_back([&] {
            if (json::parse(w.get())["outcome"] == "matched") matched++;
        });
    for (auto &t : waiters) t.join();
    EXPECT_EQ(matched.load(), 4);
}

TEST(Handle, DestructorCancelsARunningWait) {
    std::atomic<int> finalized{0};
    {
        auto sentinel = std::make_shared<Sentinel>(finalized);
        auto w = waitfor::start(kReadySpec, [sentinel](const waitfor::ProbeContext &) {
            return waitfor::Observation::of_text("not yet");
        });
    }
    EXPECT_TRUE(eventually([&] { return finalized.load() == 1; }));
}

TEST(Handle, ProgressHooksAndThrowingHooksStayInside) {
    std::atomic<int> progress{0};
    waitfor::Hooks hooks;
    hooks.on_progress = [&](const std::string &j) {
        EXPECT_TRUE(json::parse(j).contains("samples"));
        progress++;
        throw std::runtime_error("a hook that throws must not reach the library");
    };
    hooks.on_done = [](int32_t, const std::string &) { throw std::logic_error("neither here"); };
    auto w = waitfor::start(
        R"({"until": {"matches": "ready"}, "interval_ms": 10, "progress_every_ms": 1, "max_wait_ms": 30000})",
        ready_after(4), hooks);
    EXPECT_EQ(json::parse(w.get())["outcome"], "matched");
    EXPECT_GE(progress.load(), 1);
}

TEST(Echo, RecordSendKeysValidatesItsInput) {
    waitfor::record_send_keys("cpp-test", "%3", {"say \"hi\"\n", "tab\there"}, true, true);
    waitfor::record_send_keys("", "%3", {"C-c"}, false, false);
    EXPECT_EQ(status_of([] { waitfor::record_send_keys("", "not-a-pane", {"x"}, true, true); }),
              WAITFOR_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { waitfor::record_send_keys("", "%3", {"bad \xff"}, true, true); }),
              WAITFOR_ERR_INVALID_UTF8);
}

TEST(Echo, RecordSendKeysTakesASocketPathOnlyWhenTheHostAllowsPaths) {
    try {
        waitfor::record_send_keys("/tmp/x.sock", "%3", {"x"}, true, true);
        ADD_FAILURE() << "a socket path was taken without grants";
    } catch (const waitfor::Error &e) {
        EXPECT_EQ(e.status(), WAITFOR_ERR_INVALID_ARGUMENT);
        json detail = json::parse(e.detail_json());
        EXPECT_EQ(detail["field"], "socket_name");
        EXPECT_EQ(detail["rule"], "not_granted");
    }
    EXPECT_EQ(status_of([] { waitfor::record_send_keys(std::string(104, 's'), "%3", {"x"}, true, true); }),
              WAITFOR_ERR_INVALID_ARGUMENT);
    waitfor::Host paths;
    paths.grants.tmux_socket_paths = true;
    waitfor::record_send_keys("/tmp/x.sock", "%3", {"x"}, true, true, paths);
    waitfor::record_send_keys("cpp-test", "%3", {"x"}, true, true, paths);
}

TEST(Tools, EveryDefinedProfileIsReachableByName) {
    json defs = json::parse(waitfor::profiles());
    EXPECT_GE(defs.size(), 3u);  // aura, libtmux-mcp and libtmux-cxx at least
    for (auto &d : defs) {
        // An unknown field breaks every tool's input schema: the profile was
        // found, and its own validation answered.
        EXPECT_EQ(status_of([&] {
                      waitfor::call_tool(d["profile"].get<std::string>(), R"({"no_such_field": 1})");
                  }),
                  WAITFOR_ERR_INVALID_SPEC)
            << d["profile"];
    }
}

TEST(Tools, CallAndStartProfiles) {
    const char *args = R"({"probe": {"tool": "run_command", "args": {"argv": ["echo", "Running"]}},
                           "until": {"matches": "Running"}, "poll_sec": 1, "max_wait_sec": 10})";
    waitfor::Host host;
    host.grants.commands = {"echo", "true"};
    EXPECT_EQ(json::parse(waitfor::call_tool("aura/wait_for", args, host))["reason"], "matched");
    EXPECT_EQ(json::parse(waitfor::start_tool("aura/wait_for", args, {}, host).get())["reason"], "matched");

    // A cancelled tool call is AURA's runtime error, through the handle.
    auto w = waitfor::start_tool("aura/wait_for",
                                 R"({"probe": {"tool": "run_command", "args": {"argv": ["true"]}},
                                     "until": {"matches": "never"}, "poll_sec": 1, "max_wait_sec": 60})",
                                 {}, host);
    w.cancel();
    EXPECT_EQ(status_of([&] { w.get(); }), WAITFOR_ERR_RUNTIME);
}

TEST(Tools, NoticesReachTheHooksBeforeTheAnswer) {
    // AURA sends no progress of its own: seconds elapsed of the bound, no message.
    waitfor::Host host;
    host.tools = [](const std::string &, const std::string &, const waitfor::ProbeContext &ctx) -> std::string {
        return ctx.sample() < 2 ? "Pending" : "Running";
    };
    const char *args = R"({"probe": {"tool": "status", "args": {}}, "until": {"matches": "Running"},
                           "poll_sec": 1, "max_wait_sec": 20})";
    std::vector<json> heard;
    std::mutex mutex;
    auto hear = [&](const std::string &notice) {
        std::lock_guard<std::mutex> lock(mutex);
        heard.push_back(json::parse(notice));
    };
    EXPECT_EQ(json::parse(waitfor::call_tool("aura/wait_for", args, host, hear))["reason"], "matched");
    ASSERT_EQ(heard.size(), 1u);
    EXPECT_EQ(heard[0]["kind"], "progress");
    EXPECT_EQ(heard[0]["total"], 20.0);
    EXPECT_TRUE(heard[0]["message"].is_null());

    // AURA's UnknownProbeTool: a tool that throws its words.
    waitfor::Host none;
    none.tools = [](const std::string &, const std::string &, const waitfor::ProbeContext &) -> std::string {
        throw std::runtime_error("tool is not exposed by any connected MCP server");
    };
    try {
        waitfor::call_tool("aura/wait_for", args, none);
        FAIL() << "no error";
    } catch (const waitfor::Error &e) {
        EXPECT_EQ(json::parse(e.detail_json())["message"], "probe tool 'status' is not exposed by any connected MCP server");
    }

    // libtmux-mcp logs an invalid regex as a warning before it refuses it.
    heard.clear();
    waitfor::Hooks hooks;
    hooks.on_notice = hear;
    EXPECT_EQ(status_of([&] {
                  waitfor::start_tool("libtmux-mcp/wait_for_text", R"({"pane_id": "%0", "patterns": ["("], "regex": true})",
                                      hooks);
              }),
              WAITFOR_ERR_INVALID_SPEC);
    ASSERT_EQ(heard.size(), 1u);
    EXPECT_EQ(heard[0]["kind"], "log");
    EXPECT_EQ(heard[0]["level"], "warning");
    EXPECT_EQ(heard[0]["message"].get<std::string>().rfind("Invalid regex pattern: ", 0), 0u);
}

TEST(Concurrency, ManyWaitsFromManyHostThreads) {
    constexpr int kThreads = 8, kWaits = 25;
    std::atomic<int> matched{0}, finalized{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&] {
            for (int i = 0; i < kWaits; i++) {
                auto sentinel = std::make_shared<Sentinel>(finalized);
                auto probe = [sentinel](const waitfor::ProbeContext &ctx) {
                    return waitfor::Observation::of_text(ctx.sample() >= 2 ? "ready" : "no");
                };
                if (json::parse(waitfor::wait(kReadySpec, probe))["outcome"] == "matched") matched++;
            }
        });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(matched.load(), kThreads * kWaits);
    EXPECT_TRUE(eventually([&] { return finalized.load() == kThreads * kWaits; }));
}

// Every field of `want` is in `got` with the same value; objects compared
// field by field (the rule every binding uses for the shared vectors).
void expect_contains(const json &got, const json &want, const std::string &path,
                     std::vector<std::string> &wrong) {
    if (want.is_object() && got.is_object()) {
        for (auto it = want.begin(); it != want.end(); ++it) {
            if (!got.contains(it.key())) {
                wrong.push_back(path + "." + it.key() + ": missing");
            } else {
                expect_contains(got[it.key()], it.value(), path + "." + it.key(), wrong);
            }
        }
    } else if (got != want) {
        wrong.push_back(path + ": got " + got.dump() + ", want " + want.dump());
    }
}

TEST(Vectors, EverySharedVectorGivesItsExpectedAnswer) {
    int ran = 0;
    std::vector<std::string> wrong;
    for (const auto &entry : std::filesystem::directory_iterator(WAITFOR_VECTOR_DIR)) {
        if (entry.path().extension() != ".json") continue;
        std::ifstream in(entry.path());
        json doc = json::parse(in);
        for (const auto &vector : doc["vectors"]) {
            // The wrapper's simulate; tests/c/test_vectors.cpp runs every kind.
            if (vector.contains("kind")) continue;
            json answer = json::parse(waitfor::simulate(vector.dump()));
            std::vector<std::string> here;
            expect_contains(answer, vector.value("expect", json::object()), "", here);
            for (auto &w : here)
                wrong.push_back(entry.path().filename().string() + " / " + vector["name"].dump() + ": " + w);
            ran++;
        }
    }
    EXPECT_GE(ran, 50);
    for (auto &w : wrong) ADD_FAILURE() << w;
}

TEST(Errors, CarryCoresCodeBesideTheStatus) {
    try {
        waitfor::call_tool("wait_for", R"({"probe": {"tool": "", "args": {}}, "until": {"matches": "x"}})");
        FAIL() << "no error";
    } catch (const waitfor::Error &e) {
        EXPECT_EQ(e.status(), WAITFOR_ERR_INVALID_SPEC);
        EXPECT_EQ(e.code(), "invalid_arguments");
        EXPECT_EQ(json::parse(e.detail_json())["field"], "probe.tool");
    }
    try {
        waitfor::call_tool("wait_for_text", "{}");
        FAIL() << "no error";
    } catch (const waitfor::Error &e) {
        EXPECT_EQ(e.code(), "unknown_profile");
        EXPECT_TRUE(json::parse(e.detail_json())["field"].is_null());
    }
}
