/*
 * The C ABI from a C99 program: every export, each status code, probe
 * callbacks that fail, hang, return invalid UTF-8 or too much, cancel and
 * wake from another thread, the finalizer count. (The shared vectors run
 * through test_vectors.cpp.)
 *
 * Built with -std=c99 -Wall -Wextra -Werror (and again with ASan+UBSan, and
 * run under valgrind) by tests/cpp/CMakeLists.txt. Usage: test_waitfor
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include "waitfor.h"
#include "waitfor.h" /* included twice on purpose: the guard must hold */

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Counters shared with callbacks on library threads (C99 has no
 * <stdatomic.h>: the GCC/Clang builtins do the same). */
typedef int atomic_int;
#define atomic_fetch_add(p, n) __atomic_fetch_add((p), (n), __ATOMIC_SEQ_CST)
#define atomic_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

static atomic_int checks = 0;
static atomic_int failures = 0;

#define CHECK(cond)                                                                \
    do {                                                                           \
        atomic_fetch_add(&checks, 1);                                              \
        if (!(cond)) {                                                             \
            atomic_fetch_add(&failures, 1);                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                          \
    } while (0)

#define S(lit) (lit), (sizeof(lit) - 1)

static int contains(const char *haystack, const char *needle) {
    return haystack != NULL && strstr(haystack, needle) != NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls until *counter reaches want or 10 s passed: the finalizer may run
 * on a library thread just after the wait returned. */
static int eventually_equals(atomic_int *counter, int want) {
    double deadline = now_s() + 10.0;
    while (atomic_load(counter) != want && now_s() < deadline) sleep_ms(5);
    return atomic_load(counter) == want;
}

/* ---- a probe's user data ------------------------------------------------ */

/* The cap on tool calls in flight: one over it is refused at once with its
 * own status, the one running goes on, and its place comes back at its end. */
static int32_t never_ready(void *user_data, const char *name, size_t name_len, const char *args,
                           size_t args_len, const waitfor_probe_ctx *ctx, waitfor_observation *out) {
    (void)user_data, (void)name, (void)name_len, (void)args, (void)args_len, (void)ctx;
    return waitfor_observation_set_text(out, S("starting"));
}

static void test_tool_call_cap(void) {
    CHECK(waitfor_max_tool_calls() == 1024);
    CHECK(waitfor_set_max_tool_calls(1) == 1024 && waitfor_max_tool_calls() == 1);
    waitfor_tool_caller tools = {never_ready, NULL, NULL};
    const char *args = "{\"probe\": {\"tool\": \"status\", \"args\": {}},"
                       " \"until\": {\"matches\": \"ready\"}, \"poll_sec\": 1, \"max_wait_sec\": 60}";
    waitfor_handle *running = NULL, *next = NULL;
    char *out = NULL, *error = NULL;
    CHECK(waitfor_tool_start_with_host(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools, NULL,
                                       &running, NULL) == WAITFOR_OK);
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools, &out,
                                      &error) == WAITFOR_ERR_TOO_MANY_CALLS);
    CHECK(out == NULL && contains(error, "\"code\":\"too_many_calls\"") &&
          contains(error, "\"kind\":\"too_many_calls\"") && contains(error, "at most 1"));
    CHECK(strcmp(waitfor_status_name(WAITFOR_ERR_TOO_MANY_CALLS), "too_many_calls") == 0);
    waitfor_string_free(error);
    /* The refusal left the running call alone; its end gives the place back. */
    CHECK(waitfor_handle_wait(running, 0, &out, NULL) == WAITFOR_ERR_TIMEOUT);
    CHECK(waitfor_handle_cancel(running) == WAITFOR_OK);
    CHECK(waitfor_handle_wait(running, -1, &out, &error) == WAITFOR_ERR_RUNTIME);
    CHECK(contains(error, "cancelled"));
    waitfor_string_free(error);
    waitfor_handle_free(running);
    CHECK(waitfor_tool_start_with_host(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools, NULL,
                                       &next, NULL) == WAITFOR_OK);
    CHECK(waitfor_handle_cancel(next) == WAITFOR_OK);
    CHECK(waitfor_handle_wait(next, -1, &out, &error) == WAITFOR_ERR_RUNTIME);
    waitfor_string_free(error);
    waitfor_handle_free(next);
    CHECK(waitfor_set_max_tool_calls(1024) == 1);
}

typedef struct {
    atomic_int calls;
    atomic_int finalized;
    atomic_int progress;
    atomic_int done;
    int ready_at;         /* answer "ready" from this call on */
    int mode;             /* what the probe does, see probe() */
} probe_state;

enum { MODE_COUNT, MODE_FAIL, MODE_BAD_UTF8, MODE_BIG, MODE_HANG, MODE_JSON };

static int32_t probe(void *user_data, const waitfor_probe_ctx *ctx, waitfor_observation *out) {
    probe_state *st = (probe_state *)user_data;
    int n = atomic_fetch_add(&st->calls, 1) + 1;
    CHECK(waitfor_probe_ctx_sample(ctx) == (uint64_t)n);
    CHECK(waitfor_probe_ctx_output_cap(ctx) > 0);
    CHECK(waitfor_probe_ctx_budget_ms(ctx) > 0);
    (void)waitfor_probe_ctx_elapsed_ms(ctx);
    switch (st->mode) {
    case MODE_FAIL:
        waitfor_observation_set_error(out, S("connection refused"));
        return 1;
    case MODE_BAD_UTF8:
        CHECK(waitfor_observation_set_text(out, S("bad \xff byte")) == WAITFOR_ERR_INVALID_UTF8);
        return 0;
    case MODE_BIG: {
        static char big[4096];
        memset(big, 'x', sizeof big);
        return waitfor_observation_set_text(out, big, sizeof big);
    }
    case MODE_HANG:
        /* Sleeps until abandoned: the cancel token ends it. */
        while (!waitfor_probe_ctx_wait_cancelled(ctx, 1000)) {
        }
        CHECK(waitfor_probe_ctx_cancelled(ctx));
        return 0;
    case MODE_JSON:
        CHECK(waitfor_observation_set_exit_code(out, 3) == WAITFOR_OK);
        return waitfor_observation_set_json(out, S("{\"status\": \"ok\"}"));
    default:
        if (n >= st->ready_at) return waitfor_observation_set_text(out, S("ready\n"));
        return waitfor_observation_set_text(out, S("starting\n"));
    }
}

static void finalize(void *user_data) {
    atomic_fetch_add(&((probe_state *)user_data)->finalized, 1);
}

static void on_progress(void *user_data, const char *json, size_t len) {
    CHECK(strlen(json) == len && contains(json, "\"samples\""));
    atomic_fetch_add(&((probe_state *)user_data)->progress, 1);
}

static void on_done(void *user_data, int32_t status, const char *json, size_t len) {
    CHECK(status == WAITFOR_OK && strlen(json) == len && contains(json, "\"outcome\""));
    atomic_fetch_add(&((probe_state *)user_data)->done, 1);
}

static waitfor_callbacks callbacks_for(probe_state *st) {
    waitfor_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.probe = probe;
    cb.progress = on_progress;
    cb.done = on_done;
    cb.user_data = st;
    cb.finalize = finalize;
    return cb;
}

/* Runs a blocking wait with a C probe in `mode` and returns the result JSON. */
static char *wait_with(const char *spec, int mode, probe_state *st) {
    memset(st, 0, sizeof *st);
    st->mode = mode;
    st->ready_at = 3;
    waitfor_callbacks cb = callbacks_for(st);
    char *result = NULL, *error = NULL;
    int32_t status = waitfor_wait(spec, strlen(spec), &cb, &result, &error);
    CHECK(status == WAITFOR_OK);
    CHECK(error == NULL);
    CHECK(eventually_equals(&st->finalized, 1));
    return result;
}

/* ---- tests -------------------------------------------------------------- */

static void test_versions_and_names(void) {
    CHECK(waitfor_abi_version() == WAITFOR_ABI_VERSION);
    CHECK(strlen(waitfor_version()) >= 5);
    CHECK(strcmp(waitfor_status_name(WAITFOR_OK), "ok") == 0);
    CHECK(strcmp(waitfor_status_name(WAITFOR_ERR_PANIC), "panic") == 0);
    CHECK(strcmp(waitfor_status_name(999), "unknown") == 0);
    CHECK(sizeof(waitfor_callbacks) == 5 * sizeof(void *));
    CHECK(sizeof(waitfor_tool_caller) == 3 * sizeof(void *));
    CHECK(contains(waitfor_spec_schema(), "\"$schema\""));
    CHECK(contains(waitfor_result_schema(), "outcome"));
    waitfor_string_free(NULL);
    waitfor_handle_free(NULL);
}

static void test_durations(void) {
    uint64_t ms = 0;
    char *error = NULL, *text = NULL;
    CHECK(waitfor_duration_parse(S("90s"), &ms, &error) == WAITFOR_OK && ms == 90000);
    CHECK(error == NULL);
    CHECK(waitfor_duration_parse(S("1.5s"), &ms, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"kind\":\"invalid_argument\""));
    waitfor_string_free(error);
    CHECK(waitfor_duration_parse(S("9\xff"), &ms, NULL) == WAITFOR_ERR_INVALID_UTF8);
    CHECK(waitfor_duration_parse(S("1s"), NULL, NULL) == WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_duration_format(120000, &text, NULL) == WAITFOR_OK && strcmp(text, "2m") == 0);
    waitfor_string_free(text);
    CHECK(waitfor_duration_format(1, NULL, NULL) == WAITFOR_ERR_NULL_POINTER);
    /* Core's error on field `duration`, not a bare message. */
    CHECK(waitfor_duration_parse(S("soon"), &ms, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"code\":\"invalid_arguments\"") && contains(error, "\"field\":\"duration\"") &&
          contains(error, "\"rule\":\"wrong_type\""));
    waitfor_string_free(error);
    /* Longer than every language holds exactly (2^53 - 1 ms). */
    CHECK(waitfor_duration_parse(S("9007199254740991ms"), &ms, NULL) == WAITFOR_OK && ms == 9007199254740991ULL);
    CHECK(waitfor_duration_parse(S("9007199254740992ms"), &ms, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"rule\":\"out_of_range\""));
    waitfor_string_free(error);
    CHECK(waitfor_duration_format(9007199254740992ULL, &text, &error) == WAITFOR_ERR_INVALID_ARGUMENT && text == NULL);
    waitfor_string_free(error);
    /* A host's number: a fraction rounds to the nearest millisecond, a half up. */
    CHECK(waitfor_duration_format_number(1.5, &text, NULL) == WAITFOR_OK && strcmp(text, "2ms") == 0);
    waitfor_string_free(text);
    CHECK(waitfor_duration_format_number(89999.6, &text, NULL) == WAITFOR_OK && strcmp(text, "90s") == 0);
    waitfor_string_free(text);
    CHECK(waitfor_duration_format_number(-0.4, &text, NULL) == WAITFOR_OK && strcmp(text, "0s") == 0);
    waitfor_string_free(text);
    CHECK(waitfor_duration_format_number(-1.0, &text, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"field\":\"duration\"") && contains(error, "\"rule\":\"out_of_range\""));
    waitfor_string_free(error);
    CHECK(waitfor_duration_format_number(NAN, &text, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"rule\":\"wrong_type\""));
    waitfor_string_free(error);
    CHECK(waitfor_duration_format_number(INFINITY, &text, NULL) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(waitfor_duration_format_number(1.0, NULL, NULL) == WAITFOR_ERR_NULL_POINTER);
}

static void test_builtin_probe(void) {
    const char *spec = "{\"probe\": {\"command\": {\"argv\": [\"echo\", \"build ok\"]}},"
                       " \"until\": {\"matches\": \"ok\"}, \"max_wait_ms\": 10000}";
    const char *echo_only = "{\"grants\": {\"commands\": [\"echo\"]}}";
    char *result = NULL, *error = NULL;
    CHECK(waitfor_wait_with_host(spec, strlen(spec), echo_only, strlen(echo_only), NULL, &result,
                                 NULL) == WAITFOR_OK);
    CHECK(contains(result, "\"outcome\":\"matched\""));
    waitfor_string_free(result);

    /* Nothing is granted by default: no command, no file. */
    const char *shell = "{\"probe\": {\"command\": {\"argv\": [\"sh\", \"-c\", \"id\"]}},"
                        " \"until\": {\"matches\": \"uid\"}, \"max_wait_ms\": 10000}";
    CHECK(waitfor_wait(shell, strlen(shell), NULL, &result, &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(result == NULL && contains(error, "\"rule\":\"not_granted\""));
    waitfor_string_free(error);
    CHECK(waitfor_wait_with_host(shell, strlen(shell), echo_only, strlen(echo_only), NULL, &result,
                                 &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(contains(error, "not_granted") && contains(error, "`sh`"));
    waitfor_string_free(error);
    const char *shadow = "{\"probe\": {\"file\": {\"path\": \"/etc/shadow\"}},"
                         " \"until\": {\"matches\": \"root\"}, \"max_wait_ms\": 10000}";
    CHECK(waitfor_wait(shadow, strlen(shadow), NULL, &result, &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(contains(error, "\"field\":\"probe.file.path\"") && contains(error, "not_granted"));
    waitfor_string_free(error);

    /* Host options that break their schema say which field. */
    CHECK(waitfor_wait_with_host(spec, strlen(spec), S("{\"grants\": {\"commands\": \"all\"}}"),
                                 NULL, &result, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"field\":\"host.grants.commands\""));
    waitfor_string_free(error);
    /* An unknown key of a megabyte, in the host options or in their grants,
     * is named cut in field and message, not repeated whole. */
    size_t key_len = 1u << 20;
    char *big = malloc(key_len + 64);
    for (int in_grants = 0; in_grants < 2; in_grants++) {
        int head = sprintf(big, in_grants ? "{\"grants\": {\"" : "{\"");
        memset(big + head, 'x', key_len);
        strcpy(big + head + key_len, in_grants ? "\": 1}}" : "\": 1}");
        CHECK(waitfor_wait_with_host(spec, strlen(spec), big, strlen(big), NULL, &result, &error) ==
              WAITFOR_ERR_INVALID_ARGUMENT);
        CHECK(result == NULL && contains(error, "\"rule\":\"unknown_field\"") &&
              contains(error, in_grants ? "\"field\":\"host.grants.xxx" : "\"field\":\"host.xxx") &&
              strlen(error) < 2000);
        waitfor_string_free(error);
    }
    free(big);
    CHECK(waitfor_wait_with_host(spec, strlen(spec), S("{"), NULL, &result, &error) ==
          WAITFOR_ERR_INVALID_JSON);
    waitfor_string_free(error);
}

static void test_c_probe(void) {
    probe_state st;
    char *r = wait_with("{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 10,"
                        " \"max_wait_ms\": 20000}", MODE_COUNT, &st);
    CHECK(contains(r, "\"outcome\":\"matched\"") && contains(r, "\"samples\":3"));
    CHECK(atomic_load(&st.done) == 1 && atomic_load(&st.progress) >= 1);
    waitfor_string_free(r);

    r = wait_with("{\"until\": {\"json\": {\"pointer\": \"/status\", \"equals\": \"ok\"}},"
                  " \"max_wait_ms\": 20000}", MODE_JSON, &st);
    CHECK(contains(r, "\"outcome\":\"matched\"") && contains(r, "\"exit_code\":3"));
    waitfor_string_free(r);
}

/* Runs `body(arg)` in a forked child and gives its answer, which comes
 * through a pipe: under valgrind the child's exit code is valgrind's,
 * which counts the parent's engine as leaked in the child. A child still
 * running after 30 s is killed, and its answer is no. */
static char in_forked_child(char (*body)(void *), void *arg) {
    int answer[2];
    CHECK(pipe(answer) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char ok = body(arg);
        ssize_t written = write(answer[1], &ok, 1);
        _exit(written == 1 ? 0 : 1);
    }
    close(answer[1]);
    int status = 0;
    double deadline = now_s() + 30.0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_s() > deadline) {
            kill(pid, SIGKILL); /* the child must not outlive the test */
            waitpid(pid, &status, 0);
            break;
        }
        sleep_ms(10);
    }
    char ok = 0;
    if (read(answer[0], &ok, 1) != 1) ok = 0;
    close(answer[0]);
    return ok;
}

static const char *FORK_SPEC = "{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 10,"
                               " \"max_wait_ms\": 10000}";

static char child_waits_on_its_own_engine(void *arg) {
    char *r = wait_with(FORK_SPEC, MODE_COUNT, arg);
    char ok = contains(r, "\"outcome\":\"matched\"") && contains(r, "\"samples\":3");
    if (!ok) fprintf(stderr, "the forked child's wait: %s\n", r ? r : "(none)");
    return ok;
}

static char child_is_refused_the_parents_wait(void *arg) {
    char *result = NULL, *error = NULL;
    int status = waitfor_handle_wait(arg, -1, &result, &error);
    char ok = status == WAITFOR_ERR_RUNTIME && result == NULL && contains(error, "forked");
    if (!ok) fprintf(stderr, "the parent's wait in a child: %d %s\n", status, error ? error : "");
    return ok;
}

/* A forked child has none of its parent's engine threads: its waits run
 * on an engine of its own (they used to hang on the parent's, gone), and
 * waiting there for a wait its parent started, which never ends, fails at
 * once (it used to block for good). */
static void test_fork(void) {
    probe_state st;
    waitfor_string_free(wait_with(FORK_SPEC, MODE_COUNT, &st)); /* the parent's engine runs */
    CHECK(in_forked_child(child_waits_on_its_own_engine, &st));

    memset(&st, 0, sizeof st);
    st.ready_at = 1000000;
    waitfor_callbacks cb = callbacks_for(&st);
    waitfor_handle *h = NULL;
    const char *spec = "{\"until\": {\"matches\": \"ready\"}, \"max_wait_ms\": 60000}";
    CHECK(waitfor_start(spec, strlen(spec), &cb, &h, NULL) == WAITFOR_OK && h != NULL);
    CHECK(in_forked_child(child_is_refused_the_parents_wait, h));
    CHECK(waitfor_handle_cancel(h) == WAITFOR_OK);
    waitfor_handle_free(h);
    CHECK(eventually_equals(&st.finalized, 1));
}

static void test_probe_failures(void) {
    probe_state st;
    const char *spec = "{\"until\": {\"matches\": \"ready\"}, \"max_wait_ms\": 20000}";
    char *r = wait_with(spec, MODE_FAIL, &st);
    CHECK(contains(r, "\"outcome\":\"probe_error\"") && contains(r, "connection refused"));
    waitfor_string_free(r);

    r = wait_with(spec, MODE_BAD_UTF8, &st);
    CHECK(contains(r, "\"outcome\":\"probe_error\"") && contains(r, "not valid UTF-8"));
    waitfor_string_free(r);

    r = wait_with("{\"until\": {\"matches\": \"ready\"}, \"output_cap_bytes\": 100,"
                  " \"max_wait_ms\": 20000}", MODE_BIG, &st);
    CHECK(contains(r, "\"outcome\":\"error\""));
    waitfor_string_free(r);

    /* A hung probe: the deadline holds, the call is abandoned and told. */
    r = wait_with("{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 10,"
                  " \"max_wait_ms\": 200}", MODE_HANG, &st);
    CHECK(contains(r, "\"outcome\":\"timeout\"") || contains(r, "\"outcome\":\"probe_error\""));
    CHECK(contains(r, "\"abandoned\":1"));
    waitfor_string_free(r);
}

static void test_errors(void) {
    char *result = NULL, *error = NULL;
    probe_state st;
    memset(&st, 0, sizeof st);
    waitfor_callbacks cb = callbacks_for(&st);

    CHECK(waitfor_wait(S("{not json"), &cb, &result, &error) == WAITFOR_ERR_INVALID_JSON);
    CHECK(result == NULL && contains(error, "\"kind\":\"invalid_json\""));
    waitfor_string_free(error);
    /* Past 4 MiB of JSON a spec is refused before it is read. */
    size_t huge_len = (4u << 20) + 1;
    char *huge = malloc(huge_len);
    memset(huge, ' ', huge_len);
    memcpy(huge, "{}", 2);
    CHECK(waitfor_wait(huge, huge_len, &cb, &result, &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(result == NULL && contains(error, "\"rule\":\"too_large\""));
    waitfor_string_free(error);
    free(huge);
    CHECK(waitfor_wait(S("{\"until\": \xff}"), &cb, &result, &error) == WAITFOR_ERR_INVALID_UTF8);
    waitfor_string_free(error);
    CHECK(waitfor_wait(NULL, 5, &cb, &result, &error) == WAITFOR_ERR_NULL_POINTER);
    waitfor_string_free(error);
    CHECK(waitfor_wait(S("{\"until\": {\"matches\": \"x\"}}"), &cb, NULL, NULL) ==
          WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_wait(S("{\"until\": {\"matches\": \"(\"}, \"regex\": true}"), &cb, &result,
                       &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(contains(error, "\"field\":\"until.matches\"") && contains(error, "invalid_regex"));
    waitfor_string_free(error);
    /* A lone surrogate escape is not JSON to serde_json: the error names its string. */
    CHECK(waitfor_wait(S("{\"until\": {\"matches\": \"\\ud800\"}}"), &cb, &result, &error) ==
          WAITFOR_ERR_INVALID_JSON);
    CHECK(result == NULL && contains(error, "\"field\":\"until.matches\"") &&
          contains(error, "\"rule\":\"invalid_json\""));
    waitfor_string_free(error);
    /* An unknown key of a megabyte is named cut, not repeated whole. */
    size_t key_len = 1u << 20;
    char *big = malloc(key_len + 64);
    int head = sprintf(big, "{\"until\": {\"matches\": \"x\"}, \"");
    memset(big + head, 'x', key_len);
    strcpy(big + head + key_len, "\": 1}");
    CHECK(waitfor_wait(big, strlen(big), &cb, &result, &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(result == NULL && contains(error, "\"rule\":\"unknown_field\"") &&
          contains(error, "... (cut; 1048576 bytes in all)\"") && strlen(error) < 2000);
    waitfor_string_free(error);
    free(big);
    /* every failed call above ran the finalizer exactly once */
    CHECK(eventually_equals(&st.finalized, 8));
    CHECK(atomic_load(&st.calls) == 0);

    CHECK(waitfor_selftest_panic(&error) == WAITFOR_ERR_PANIC);
    CHECK(contains(error, "\"kind\":\"panic\""));
    waitfor_string_free(error);
    /* the library is still usable after a panic */
    CHECK(waitfor_duration_parse(S("5s"), &(uint64_t){0}, NULL) == WAITFOR_OK);
}

static void test_tools(void) {
    char *defs = NULL, *out = NULL, *error = NULL;
    CHECK(waitfor_profiles(&defs, NULL) == WAITFOR_OK);
    CHECK(contains(defs, "\"profile\":\"aura/wait_for\"") && contains(defs, "inputSchema"));
    waitfor_string_free(defs);
    CHECK(waitfor_profiles(NULL, NULL) == WAITFOR_ERR_NULL_POINTER);
    /* the tools alone, as Python's and Node's tool_definitions() give them */
    CHECK(waitfor_tool_definitions(&defs, NULL) == WAITFOR_OK);
    CHECK(defs[0] == '[' && defs[1] == '{' && !contains(defs, "\"profile\"") &&
          contains(defs, "\"name\":\"wait_for\""));
    waitfor_string_free(defs);
    CHECK(waitfor_tool_definitions(NULL, NULL) == WAITFOR_ERR_NULL_POINTER);

    const char *args = "{\"probe\": {\"tool\": \"run_command\", \"args\": {\"argv\": [\"echo\", "
                       "\"Running\"]}}, \"until\": {\"matches\": \"Running\"}, \"poll_sec\": 1,"
                       " \"max_wait_sec\": 10}";
    const char *host = "{\"grants\": {\"commands\": [\"echo\"], \"file_roots\": [\"/tmp\"]}}";
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), args, strlen(args), host, strlen(host),
                                      NULL, &out, &error) == WAITFOR_OK);
    CHECK(contains(out, "\"reason\":\"matched\""));
    waitfor_string_free(out);
    /* Without grants the built-in tools are refused before the wait starts. */
    CHECK(waitfor_call_tool(S("aura/wait_for"), args, strlen(args), &out, &error) ==
          WAITFOR_ERR_INVALID_SPEC);
    CHECK(out == NULL && contains(error, "not_granted") && contains(error, "has not granted"));
    waitfor_string_free(error);
    const char *shadow = "{\"probe\": {\"tool\": \"read_file\", \"args\": {\"path\": "
                         "\"/etc/shadow\"}}, \"until\": {\"matches\": \"root\"}}";
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), shadow, strlen(shadow), host,
                                      strlen(host), NULL, &out, &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(contains(error, "\"field\":\"probe.args.path\"") && contains(error, "outside"));
    waitfor_string_free(error);

    CHECK(waitfor_call_tool(S("nope/none"), S("{}"), &out, &error) == WAITFOR_ERR_UNKNOWN_PROFILE);
    waitfor_string_free(error);
    CHECK(waitfor_call_tool(S("aura/wait_for"), S("{\"until\": {}}"), &out, &error) ==
          WAITFOR_ERR_INVALID_SPEC);
    CHECK(contains(error, "\"rule\""));
    waitfor_string_free(error);
    /* a probe that fails (a file that is not there) is AURA's runtime error */
    const char *broken = "{\"probe\": {\"tool\": \"read_file\", \"args\": {\"path\": "
                         "\"/tmp/waitfor-c-test-no-such-file\"}}, \"until\": {\"matches\": \"x\"},"
                         " \"poll_sec\": 1, \"max_wait_sec\": 10}";
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), broken, strlen(broken), host,
                                      strlen(host), NULL, &out, &error) == WAITFOR_ERR_RUNTIME);
    CHECK(out == NULL && contains(error, "\"kind\":\"runtime\""));
    waitfor_string_free(out);
    waitfor_string_free(error);

    probe_state st;
    memset(&st, 0, sizeof st);
    waitfor_callbacks cb = callbacks_for(&st);
    waitfor_handle *h = NULL;
    CHECK(waitfor_tool_start(S("aura/wait_for"), args, strlen(args), &cb, &h, &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(h == NULL && eventually_equals(&st.finalized, 1));
    waitfor_string_free(error);
    CHECK(waitfor_tool_start_with_host(S("aura/wait_for"), args, strlen(args), host, strlen(host),
                                       NULL, NULL, &h, NULL) == WAITFOR_OK);
    CHECK(waitfor_handle_wait(h, -1, &out, NULL) == WAITFOR_OK && contains(out, "matched"));
    waitfor_string_free(out);
    waitfor_handle_free(h);
}

/* ---- the host's own tools ----------------------------------------------- */

typedef struct {
    atomic_int calls;
    atomic_int finalized;
    char name[64];
    char args[256];
} tools_state;

static int32_t call_tool(void *user_data, const char *name, size_t name_len, const char *args,
                         size_t args_len, const waitfor_probe_ctx *ctx, waitfor_observation *out) {
    tools_state *st = (tools_state *)user_data;
    int n = atomic_fetch_add(&st->calls, 1) + 1;
    CHECK(strlen(name) == name_len && strlen(args) == args_len);
    CHECK(waitfor_probe_ctx_sample(ctx) == (uint64_t)n);
    snprintf(st->name, sizeof st->name, "%s", name);
    snprintf(st->args, sizeof st->args, "%s", args);
    if (strcmp(name, "broken") == 0) {
        waitfor_observation_set_error(out, S("kubectl: connection refused"));
        return 1;
    }
    if (n < 2) return waitfor_observation_set_text(out, S("web 0/1 Pending"));
    return waitfor_observation_set_text(out, S("web 1/1 Running"));
}

static void finalize_tools(void *user_data) {
    atomic_fetch_add(&((tools_state *)user_data)->finalized, 1);
}

static void test_host_tools(void) {
    tools_state st;
    memset(&st, 0, sizeof st);
    waitfor_tool_caller tools = {call_tool, &st, finalize_tools};
    char *out = NULL, *error = NULL;
    const char *args = "{\"probe\": {\"tool\": \"kubectl_get\", \"args\": {\"name\": \"web\"}},"
                       " \"until\": {\"matches\": \"Running\"}, \"poll_sec\": 1, \"max_wait_sec\": 30}";
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools, &out,
                                      &error) == WAITFOR_OK);
    CHECK(contains(out, "\"reason\":\"matched\"") && contains(out, "web 1/1 Running"));
    CHECK(contains(out, "\"samples\":2"));
    CHECK(strcmp(st.name, "kubectl_get") == 0 && strcmp(st.args, "{\"name\":\"web\"}") == 0);
    CHECK(eventually_equals(&st.finalized, 1));
    waitfor_string_free(out);

    /* The host's tools replace the built-in ones: run_command is its own. */
    memset(&st, 0, sizeof st);
    const char *shell = "{\"probe\": {\"tool\": \"run_command\", \"args\": {\"argv\": [\"sh\"]}},"
                        " \"until\": {\"matches\": \"Running\"}, \"poll_sec\": 1, \"max_wait_sec\": 30}";
    waitfor_handle *h = NULL;
    CHECK(waitfor_tool_start_with_host(S("aura/wait_for"), shell, strlen(shell), NULL, 0, &tools,
                                       NULL, &h, &error) == WAITFOR_OK);
    CHECK(waitfor_handle_wait(h, -1, &out, NULL) == WAITFOR_OK && contains(out, "Running"));
    CHECK(strcmp(st.name, "run_command") == 0);
    waitfor_string_free(out);
    waitfor_handle_free(h);
    CHECK(eventually_equals(&st.finalized, 1));

    /* A tool's error is the wait's runtime error, with its message. */
    memset(&st, 0, sizeof st);
    const char *broken = "{\"probe\": {\"tool\": \"broken\", \"args\": {}}, \"until\": {\"matches\": \"x\"},"
                         " \"poll_sec\": 1, \"max_wait_sec\": 30}";
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), broken, strlen(broken), NULL, 0, &tools,
                                      &out, &error) == WAITFOR_ERR_RUNTIME);
    CHECK(contains(error, "connection refused"));
    waitfor_string_free(error);
    CHECK(eventually_equals(&st.finalized, 1));

    /* Failures before the wait still run the finalizer, once. */
    memset(&st, 0, sizeof st);
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), S("{\"until\": {}}"), NULL, 0, &tools,
                                      &out, &error) == WAITFOR_ERR_INVALID_SPEC);
    waitfor_string_free(error);
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), args, strlen(args), S("[]"), &tools, &out,
                                      &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    waitfor_string_free(error);
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools, NULL,
                                      NULL) == WAITFOR_ERR_NULL_POINTER);
    waitfor_tool_caller no_call = {NULL, &st, finalize_tools};
    CHECK(waitfor_call_tool_with_host(S("aura/wait_for"), args, strlen(args), NULL, 0, &no_call,
                                      &out, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "tools->call"));
    waitfor_string_free(error);
    CHECK(eventually_equals(&st.finalized, 4) && atomic_load(&st.calls) == 0);
}

/* ---- a tool call's notices ---------------------------------------------- */

typedef struct {
    atomic_int count;
    atomic_int finalized;
    atomic_int at_done; /* notices heard when `done` ran */
    char all[4096];     /* every notice, one a line */
} notices_state;

static void on_notice(void *user_data, const char *json, size_t len) {
    notices_state *st = (notices_state *)user_data;
    CHECK(strlen(json) == len);
    atomic_fetch_add(&st->count, 1);
    size_t used = strlen(st->all);
    snprintf(st->all + used, sizeof st->all - used, "%s\n", json);
}

static void finalize_notices(void *user_data) {
    atomic_fetch_add(&((notices_state *)user_data)->finalized, 1);
}

static void done_after_notices(void *user_data, int32_t status, const char *json, size_t len) {
    (void)status, (void)json, (void)len;
    notices_state *st = (notices_state *)user_data;
    st->at_done = atomic_load(&st->count);
}

static void test_notices(void) {
    CHECK(sizeof(waitfor_notices) == 3 * sizeof(void *));
    tools_state tools_st;
    memset(&tools_st, 0, sizeof tools_st);
    waitfor_tool_caller tools = {call_tool, &tools_st, finalize_tools};
    notices_state st;
    memset(&st, 0, sizeof st);
    waitfor_notices notices = {on_notice, &st, finalize_notices};
    char *out = NULL, *error = NULL;
    /* AURA sends no progress of its own: seconds elapsed of the bound, no
     * message, nothing logged. */
    const char *args = "{\"probe\": {\"tool\": \"kubectl_get\", \"args\": {}},"
                       " \"until\": {\"matches\": \"Running\"}, \"poll_sec\": 1, \"max_wait_sec\": 30}";
    CHECK(waitfor_call_tool_with_notices(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools,
                                         &notices, &out, &error) == WAITFOR_OK);
    CHECK(contains(out, "\"reason\":\"matched\""));
    CHECK(atomic_load(&st.count) == 1);
    CHECK(contains(st.all, "{\"kind\":\"progress\",\"progress\":"));
    CHECK(contains(st.all, "\"total\":30.0,\"message\":null}"));
    CHECK(eventually_equals(&st.finalized, 1) && eventually_equals(&tools_st.finalized, 1));
    waitfor_string_free(out);

    /* Started: the notices come before `done`. */
    memset(&st, 0, sizeof st);
    memset(&tools_st, 0, sizeof tools_st);
    waitfor_callbacks cb = {NULL, NULL, done_after_notices, &st, NULL};
    waitfor_handle *h = NULL;
    CHECK(waitfor_tool_start_with_notices(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools,
                                          &cb, &notices, &h, &error) == WAITFOR_OK);
    CHECK(waitfor_handle_wait(h, -1, &out, NULL) == WAITFOR_OK);
    CHECK(st.at_done == 1);
    waitfor_string_free(out);
    waitfor_handle_free(h);
    CHECK(eventually_equals(&st.finalized, 1));

    /* libtmux-mcp logs an invalid regex as a warning before it refuses the
     * call, with the refusal's words; the sink hears it before the return. */
    memset(&st, 0, sizeof st);
    const char *bad = "{\"pane_id\": \"%0\", \"patterns\": [\"(\"], \"regex\": true}";
    CHECK(waitfor_call_tool_with_notices(S("libtmux-mcp/wait_for_text"), bad, strlen(bad), NULL, 0,
                                         NULL, &notices, &out, &error) == WAITFOR_ERR_INVALID_SPEC);
    CHECK(atomic_load(&st.count) == 1);
    CHECK(contains(st.all, "{\"kind\":\"log\",\"level\":\"warning\",\"message\":\"Invalid regex pattern: "));
    CHECK(contains(error, "Invalid regex pattern: "));
    waitfor_string_free(error);
    CHECK(eventually_equals(&st.finalized, 1));

    /* Failures before the wait run the finalizer once; NULL notices is the
     * `_with_host` call. */
    memset(&st, 0, sizeof st);
    CHECK(waitfor_call_tool_with_notices(S("aura/wait_for"), args, strlen(args), S("[]"), NULL,
                                         &notices, &out, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    waitfor_string_free(error);
    CHECK(waitfor_call_tool_with_notices(S("nope/none"), S("{}"), NULL, 0, NULL, &notices, &out,
                                         &error) == WAITFOR_ERR_UNKNOWN_PROFILE);
    waitfor_string_free(error);
    CHECK(eventually_equals(&st.finalized, 2) && atomic_load(&st.count) == 0);
    memset(&tools_st, 0, sizeof tools_st);
    CHECK(waitfor_call_tool_with_notices(S("aura/wait_for"), args, strlen(args), NULL, 0, &tools,
                                         NULL, &out, &error) == WAITFOR_OK);
    waitfor_string_free(out);
}

static void test_echo(void) {
    char *error = NULL;
    CHECK(waitfor_echo_record_send_keys(S("c-test-socket"), S("%7"), S("[\"make test\"]"), true, true,
                                        &error) == WAITFOR_OK);
    CHECK(error == NULL);
    CHECK(waitfor_echo_record_send_keys(NULL, 0, S("%7"), S("[\"C-c\"]"), false, false, NULL) ==
          WAITFOR_OK);
    CHECK(waitfor_echo_record_send_keys(NULL, 0, S("main:0"), S("[\"x\"]"), true, true, &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "pane id"));
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys(NULL, 0, S("%1"), S("[1, 2]"), true, true, &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys(NULL, 0, S("%1"), S("[\"x\""), true, true, NULL) ==
          WAITFOR_ERR_INVALID_JSON);
    CHECK(waitfor_echo_record_send_keys(NULL, 0, NULL, 2, S("[]"), true, true, NULL) ==
          WAITFOR_ERR_NULL_POINTER);

    /* A socket is a name, not a path, unless the host allows paths: as the
     * wait_for_text profiles, Python's record_send_keys and Node's
     * recordSendKeys refuse it, with the field and the rule. */
    const char *paths[] = {"../x.sock", "/tmp/x", "..", "a\\b"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        CHECK(waitfor_echo_record_send_keys(paths[i], strlen(paths[i]), S("%7"), S("[\"x\"]"), true,
                                            true, &error) == WAITFOR_ERR_INVALID_ARGUMENT);
        CHECK(contains(error, "\"field\":\"socket_name\"") && contains(error, "\"rule\":\"not_granted\"") &&
              contains(error, "\"code\":\"invalid_arguments\""));
        waitfor_string_free(error);
        /* the same with no host options */
        CHECK(waitfor_echo_record_send_keys_with_host(paths[i], strlen(paths[i]), S("%7"), S("[\"x\"]"),
                                                      true, true, NULL, 0, &error) ==
              WAITFOR_ERR_INVALID_ARGUMENT);
        CHECK(contains(error, "\"rule\":\"not_granted\""));
        waitfor_string_free(error);
    }
    /* 104 bytes: one more than a socket's name or path can have. */
    char long_name[104 + 1];
    memset(long_name, 's', 104);
    long_name[104] = '\0';
    CHECK(waitfor_echo_record_send_keys(long_name, 104, S("%7"), S("[\"x\"]"), true, true, &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"field\":\"socket_name\"") && contains(error, "\"rule\":\"out_of_range\""));
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys(long_name, 103, S("%7"), S("[\"x\"]"), true, true, &error) ==
          WAITFOR_OK);
    CHECK(error == NULL);
    CHECK(waitfor_echo_record_send_keys(S("a\0b"), S("%7"), S("[\"x\"]"), true, true, &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"rule\":\"contains_nul\""));
    waitfor_string_free(error);
    /* The socket is checked before the pane id. */
    CHECK(waitfor_echo_record_send_keys(S("/tmp/x"), S("main:0"), S("[\"x\"]"), true, true, &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "socket_name"));
    waitfor_string_free(error);

    /* A host that allows socket paths records keys typed through one. */
    const char *allow = "{\"grants\": {\"tmux_socket_paths\": true}}";
    CHECK(waitfor_echo_record_send_keys_with_host(S("/tmp/x"), S("%7"), S("[\"x\"]"), true, true, allow,
                                                  strlen(allow), &error) == WAITFOR_OK);
    CHECK(error == NULL);
    CHECK(waitfor_echo_record_send_keys_with_host(S("../x.sock"), S("%7"), S("[\"x\"]"), true, true,
                                                  allow, strlen(allow), NULL) == WAITFOR_OK);
    CHECK(waitfor_echo_record_send_keys_with_host(S("c-test-socket"), S("%7"), S("[\"x\"]"), true, true,
                                                  allow, strlen(allow), &error) == WAITFOR_OK);
    CHECK(error == NULL);
    /* ... but no path is longer than a socket's can be, granted or not. */
    long_name[0] = '/';
    CHECK(waitfor_echo_record_send_keys_with_host(long_name, 104, S("%7"), S("[\"x\"]"), true, true,
                                                  allow, strlen(allow), &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"rule\":\"out_of_range\""));
    waitfor_string_free(error);
    /* Host options that grant no paths refuse one; the pane id is still checked. */
    CHECK(waitfor_echo_record_send_keys_with_host(S("/tmp/x"), S("%7"), S("[\"x\"]"), true, true,
                                                  S("{\"grants\": {}}"), &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "not_granted"));
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys_with_host(S("/tmp/x"), S("main:0"), S("[\"x\"]"), true, true,
                                                  allow, strlen(allow), &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"field\":\"pane_id\""));
    waitfor_string_free(error);

    /* Bad host options are refused, naming their field, and record nothing. */
    CHECK(waitfor_echo_record_send_keys_with_host(S("c-test-socket"), S("%7"), S("[\"x\"]"), true, true,
                                                  S("{\"grants\": {\"tmux_socket_paths\": \"yes\"}}"),
                                                  &error) == WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"field\":\"host.grants.tmux_socket_paths\""));
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys_with_host(S("c-test-socket"), S("%7"), S("[\"x\"]"), true, true,
                                                  S("{\"grant\": {}}"), &error) ==
          WAITFOR_ERR_INVALID_ARGUMENT);
    CHECK(contains(error, "\"field\":\"host.grant\""));
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys_with_host(S("c-test-socket"), S("%7"), S("[\"x\"]"), true, true,
                                                  S("{"), &error) == WAITFOR_ERR_INVALID_JSON);
    waitfor_string_free(error);
    CHECK(waitfor_echo_record_send_keys_with_host(S("c-test-socket"), S("%7"), S("[\"x\"]"), true, true,
                                                  NULL, 2, &error) == WAITFOR_ERR_NULL_POINTER);
    waitfor_string_free(error);
}

static void *cancel_later(void *handle) {
    sleep_ms(50); /* not synchronisation: the wait runs until cancelled whenever this fires */
    waitfor_handle_cancel((const waitfor_handle *)handle);
    return NULL;
}

/* Wakes the wait once its probe has been called: a wake that comes
 * before the first sample begins (the wait's patterns still compiling)
 * has no sample to bring forward and is dropped, so waking after a fixed
 * sleep raced the engine's start on a loaded machine or under valgrind. */
typedef struct {
    const waitfor_handle *handle;
    probe_state *st;
} wake_target;

static void *wake_once_probed(void *arg) {
    wake_target *target = (wake_target *)arg;
    double deadline = now_s() + 30.0;
    while (atomic_load(&target->st->calls) < 1 && now_s() < deadline) sleep_ms(5);
    waitfor_handle_wake(target->handle);
    return NULL;
}

static void test_handles(void) {
    probe_state st;
    memset(&st, 0, sizeof st);
    st.ready_at = 1000000;
    waitfor_callbacks cb = callbacks_for(&st);
    waitfor_handle *h = NULL;
    char *result = NULL, *error = NULL;
    const char *spec = "{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 10,"
                       " \"max_wait_ms\": 60000}";
    CHECK(waitfor_start(spec, strlen(spec), &cb, &h, &error) == WAITFOR_OK && h != NULL);
    CHECK(waitfor_handle_wait(h, 0, &result, &error) == WAITFOR_ERR_TIMEOUT);
    CHECK(result == NULL && contains(error, "still running"));
    waitfor_string_free(error);
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, h);
    CHECK(waitfor_handle_wait(h, -1, &result, NULL) == WAITFOR_OK);
    CHECK(contains(result, "\"outcome\":\"cancelled\""));
    waitfor_string_free(result);
    pthread_join(t, NULL);
    /* the answer stays: a second wait gives it again */
    CHECK(waitfor_handle_wait(h, 0, &result, NULL) == WAITFOR_OK && contains(result, "cancelled"));
    waitfor_string_free(result);
    waitfor_handle_free(h);
    CHECK(eventually_equals(&st.finalized, 1) && atomic_load(&st.done) == 1);

    /* wake: a 60 s interval, but the wake makes the second sample now */
    memset(&st, 0, sizeof st);
    st.ready_at = 2;
    cb = callbacks_for(&st);
    const char *slow = "{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 60000,"
                       " \"max_wait_ms\": 120000}";
    CHECK(waitfor_start(slow, strlen(slow), &cb, &h, NULL) == WAITFOR_OK);
    wake_target target = {h, &st};
    pthread_create(&t, NULL, wake_once_probed, &target);
    CHECK(waitfor_handle_wait(h, 30000, &result, NULL) == WAITFOR_OK);
    CHECK(contains(result, "\"outcome\":\"matched\"") && contains(result, "\"woken\":true"));
    waitfor_string_free(result);
    pthread_join(t, NULL);
    waitfor_handle_free(h);

    CHECK(waitfor_handle_wait(NULL, 0, &result, NULL) == WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_handle_cancel(NULL) == WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_handle_wake(NULL) == WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_start(spec, strlen(spec), NULL, NULL, NULL) == WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_observation_set_text(NULL, S("x")) == WAITFOR_ERR_NULL_POINTER);
    CHECK(waitfor_probe_ctx_cancelled(NULL));
    CHECK(waitfor_probe_ctx_sample(NULL) == 0);
}

/* A progress callback that blocks (against the contract) delays its own
 * wait's answer only: other waits' answers come on time. It used to hold
 * every wait whose answer shared its delivery thread. */
static atomic_int blocking_release;
static atomic_int blocking_entered;

static void blocking_progress(void *user_data, const char *json, size_t len) {
    (void)user_data;
    (void)json;
    (void)len;
    if (atomic_fetch_add(&blocking_entered, 1) == 0) {
        double deadline = now_s() + 60.0;
        while (!atomic_load(&blocking_release) && now_s() < deadline) sleep_ms(5);
    }
}

static void test_a_blocked_progress_callback_holds_no_other_answer(void) {
    atomic_store(&blocking_release, 0);
    atomic_store(&blocking_entered, 0);
    const char *spec = "{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 10,"
                       " \"max_wait_ms\": 300, \"progress_every_ms\": 10}";
    probe_state slow, others[4];
    memset(&slow, 0, sizeof slow);
    slow.ready_at = 1000000;
    waitfor_callbacks cb = callbacks_for(&slow);
    cb.progress = blocking_progress;
    waitfor_handle *blocked = NULL, *h[4] = {NULL};
    CHECK(waitfor_start(spec, strlen(spec), &cb, &blocked, NULL) == WAITFOR_OK);
    double deadline = now_s() + 30.0;
    while (!atomic_load(&blocking_entered) && now_s() < deadline) sleep_ms(5);
    /* Waits take delivery threads by id: four, so some shared its thread. */
    for (int i = 0; i < 4; i++) {
        memset(&others[i], 0, sizeof others[i]);
        others[i].ready_at = 1000000;
        waitfor_callbacks plain = callbacks_for(&others[i]);
        plain.progress = NULL;
        CHECK(waitfor_start(spec, strlen(spec), &plain, &h[i], NULL) == WAITFOR_OK);
    }
    for (int i = 0; i < 4; i++) {
        char *result = NULL;
        CHECK(waitfor_handle_wait(h[i], 20000, &result, NULL) == WAITFOR_OK);
        CHECK(contains(result, "\"outcome\":\"timeout\""));
        waitfor_string_free(result);
        waitfor_handle_free(h[i]);
    }
    CHECK(!atomic_load(&blocking_release)); /* the slow callback still runs */
    atomic_store(&blocking_release, 1);
    char *result = NULL;
    CHECK(waitfor_handle_wait(blocked, 20000, &result, NULL) == WAITFOR_OK);
    waitfor_string_free(result);
    waitfor_handle_free(blocked);
    CHECK(eventually_equals(&slow.finalized, 1) && atomic_load(&slow.done) == 1);
}

/* ---- simulate --------------------------------------------------------- */

/* The shared vectors run through tests/c/test_vectors.cpp; here, only a
 * vector the simulator refuses. */
static void test_simulate(void) {
    char *error = NULL, *answer = NULL;
    CHECK(waitfor_simulate(S("{\"spec\": {}, \"script\": {\"steps\": []}}"), &answer, &error) ==
          WAITFOR_ERR_INVALID_SPEC);
    CHECK(contains(error, "\"code\":\"invalid_spec\""));
    waitfor_string_free(error);
}

/* ---- many waits from many threads --------------------------------------- */

static void *many_waits(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++) {
        probe_state st;
        char *r = wait_with("{\"until\": {\"matches\": \"ready\"}, \"interval_ms\": 10,"
                            " \"max_wait_ms\": 60000}", MODE_COUNT, &st);
        CHECK(contains(r, "\"outcome\":\"matched\""));
        waitfor_string_free(r);
    }
    return NULL;
}

static void test_concurrency(void) {
    pthread_t threads[8];
    for (int i = 0; i < 8; i++) pthread_create(&threads[i], NULL, many_waits, NULL);
    for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
}

int main(void) {
    test_versions_and_names();
    test_durations();
    test_builtin_probe();
    test_c_probe();
    test_fork();
    test_probe_failures();
    test_errors();
    test_tools();
    test_host_tools();
    test_tool_call_cap();
    test_notices();
    test_handles();
    test_a_blocked_progress_callback_holds_no_other_answer();
    test_echo();
    test_simulate();
    test_concurrency();
    int failed = atomic_load(&failures);
    printf("%d passed, %d failed\n", atomic_load(&checks) - failed, failed);
    return failed == 0 ? 0 : 1;
}
