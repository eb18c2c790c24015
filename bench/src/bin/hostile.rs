//! The hostile suite as a table (issue 19, "Measure"): each class of
//! hostile input an agent can send, run through the public API, with
//! how many inputs held (refused with a clear error, or ended by their
//! deadline), how far past the deadline they returned, and the memory the
//! process kept after them.
//!
//! Each class runs in a child process of its own (this program run with
//! `--class NAME`), so one class's hung threads or pinned memory cannot
//! blur another's figures, and a class that never ends or eats memory is
//! killed and reported as such. The table goes to stdout and to its
//! section of bench/RESULTS.md.
//! Run: `cargo run --release -p waitfor-bench --bin hostile [CLASS...]`;
//! with `HOSTILE_MEMORY=1`, each class also says on stderr where its
//! resident memory is, before and after.

use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use waitfor::grants::{Commands, Grants};
use waitfor::profiles::{call, Host};
use waitfor::{
    probe_fn, Condition, Engine, Observation, Outcome, Pattern, Policy, Spec, WaitOptions,
    WaitResult,
};
use waitfor_bench::{
    ms, peak_resident_bytes, percentile, process_cpu, resident_bytes, results_path, threads,
    write_section,
};

/// The deadline of the deadline-bound inputs.
const DEADLINE: Duration = Duration::from_millis(200);
/// How far past its deadline an input may return and still hold.
const GOAL: Duration = Duration::from_millis(50);
/// An input with no answer this long after its deadline counts as hung.
const HUNG: Duration = Duration::from_secs(5);
/// A class still running after this is killed.
const CLASS_LIMIT: Duration = Duration::from_secs(80);
/// How long after a round's inputs its memory may take to come back: the
/// engine's extra workers and CPU threads leave after 10 s idle (a compile
/// may outlive the inputs), and it trims 0.5 s later.
const SETTLE: Duration = Duration::from_secs(15);
/// A class whose resident memory passes this is killed.
const MEMORY_LIMIT: u64 = 3 << 30;

/// What one class's inputs did.
#[derive(Default)]
struct Tally {
    inputs: usize,
    held: usize,
    /// Time past the deadline of each input that ended.
    past: Vec<Duration>,
    notes: Vec<String>,
    /// Which round runs (0, 1): classes whose patterns the compile cache
    /// could keep send other ones in each, so that the second round is
    /// new input, not cache hits.
    round: usize,
}

impl Tally {
    /// Records one input: whether it held, and when it returned relative
    /// to its deadline (`None`: it never returned).
    fn record(&mut self, what: &str, held: bool, past: Option<Duration>) {
        self.inputs += 1;
        self.held += usize::from(held);
        self.past.push(past.unwrap_or(HUNG));
        if !held {
            let note = match past {
                None => format!("{what} (never returned)"),
                Some(p) if p > GOAL => format!("{what} ({} late)", ms(p)),
                Some(_) => what.to_string(),
            };
            self.notes.push(note);
        }
    }
}

/// Runs `f` on its own thread and waits at most `deadline` + [`HUNG`]:
/// an input that hangs leaves its thread behind and reports `None`.
fn guarded<T: Send + 'static>(
    deadline: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> (Option<T>, Duration) {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || drop(tx.send(f())));
    let answer = rx.recv_timeout(deadline + HUNG).ok();
    (answer, started.elapsed())
}

/// Runs `spec` on its built-in probe under `policy`, guarded: the start's
/// refusal or the result, and how long after the call's start it came.
fn run_builtin(spec: Spec, policy: Policy) -> (Option<Result<WaitResult, String>>, Duration) {
    let deadline = spec.max_wait;
    guarded(deadline, move || {
        let options = WaitOptions::default().policy(policy);
        Engine::global()
            .start_with(spec, None, options)
            .map(|handle| handle.wait())
            .map_err(|e| e.to_string())
    })
}

/// A spec from JSON, polling every 20 ms unless it says otherwise.
fn spec_json(mut value: Value) -> Spec {
    if value.get("interval_ms").is_none() {
        value["interval_ms"] = 20.into();
    }
    Spec::from_json(&value.to_string()).expect("a valid spec")
}

/// Shows what an input answered, with `HOSTILE_VERBOSE=1`.
fn show(what: &str, answer: &impl std::fmt::Debug) {
    if std::env::var_os("HOSTILE_VERBOSE").is_some() {
        eprintln!("{what}: {answer:?}");
    }
}

/// Records an input that must be refused before it runs anything.
fn expect_refused(t: &mut Tally, what: &str, spec: Spec, policy: Policy) {
    let deadline = spec.max_wait;
    let (answer, took) = run_builtin(spec, policy);
    show(what, &answer);
    // Refused at the start, naming the probe's field: nothing ran.
    let held = matches!(&answer, Some(Err(e)) if e.starts_with("probe."));
    t.record(what, held, answer.map(|_| took.saturating_sub(deadline)));
}

/// Records an input that must end by its deadline + [`GOAL`], whatever
/// its outcome.
fn expect_on_time(t: &mut Tally, what: &str, spec: Spec, policy: Policy) {
    let deadline = spec.max_wait;
    let (answer, took) = run_builtin(spec, policy);
    show(what, &answer);
    let past = answer.map(|_| took.saturating_sub(deadline));
    t.record(what, past.is_some_and(|p| p <= GOAL), past);
}

/// A profile call's output as text, or its tool error's code and message.
type ToolAnswer = Result<String, (String, String)>;

/// Runs a profile call guarded; its answer as text (`Err` for a tool
/// error) and the time past `deadline`.
fn profile_call(
    profile: &'static str,
    args: Value,
    host: Host,
    deadline: Duration,
) -> (Option<ToolAnswer>, Option<Duration>) {
    let (answer, took) = guarded(deadline, move || {
        call(profile, &args, &host)
            .map(|v| v.to_string())
            .map_err(|e| (e.code().to_string(), e.to_string()))
    });
    show(profile, &answer);
    let past = answer.as_ref().map(|_| took.saturating_sub(deadline));
    (answer, past)
}

/// A directory the host grants, private to this process.
fn granted_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waitfor-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn host_granting(dir: &Path) -> Host {
    Host {
        grants: Grants::none().file_root(dir),
        ..Host::default()
    }
}

fn file_spec(path: &Path, max_wait: Duration) -> Spec {
    spec_json(json!({
        "probe": {"file": {"path": path}},
        "until": {"matches": "never written"},
        "interval_ms": 20,
        "max_wait_ms": max_wait.as_millis() as u64,
    }))
}

fn ouro_args(path: &Path, cursor: Option<&str>) -> Value {
    let mut args = json!({"path": path, "timeout": DEADLINE.as_millis() as u64});
    if let Some(cursor) = cursor {
        args["cursor"] = cursor.into();
    }
    args
}

/// Commands an agent names that the host did not grant.
fn command_outside_grants(t: &mut Tally) {
    let command = |argv: &[&str]| {
        spec_json(json!({
            "probe": {"command": {"argv": argv}},
            "until": {"matches": "uid"},
            "max_wait_ms": 1000,
        }))
    };
    expect_refused(
        t,
        "sh -c id, no grants",
        command(&["sh", "-c", "id"]),
        Policy::default(),
    );
    let echo_only = Grants::none().commands(Commands::Only(vec!["echo".into()]));
    expect_refused(
        t,
        "/bin/echo when only echo is granted",
        command(&["/bin/echo", "uid"]),
        Policy::default().grants(echo_only.clone()),
    );
    let in_tmp = spec_json(json!({
        "probe": {"command": {"argv": ["echo", "uid"], "cwd": "/tmp"}},
        "until": {"matches": "uid"},
        "max_wait_ms": 1000,
    }));
    expect_refused(
        t,
        "echo granted, cwd outside the file roots",
        in_tmp,
        Policy::default().grants(echo_only.file_root(granted_dir())),
    );
    let args = json!({
        "probe": {"tool": "run_command", "args": {"argv": ["sh", "-c", "id"]}},
        "until": {"matches": "uid="}, "poll_sec": 1, "max_wait_sec": 2,
    });
    let (answer, past) = profile_call(
        "aura/wait_for",
        args,
        Host::default(),
        Duration::from_secs(2),
    );
    let held = matches!(&answer, Some(Err((_, e))) if !e.contains("uid="))
        || matches!(&answer, Some(Ok(out)) if !out.contains("uid=") && !out.contains("\"matched\""));
    t.record("aura run_command sh -c id, default host", held, past);
}

/// Files outside the granted root, by path, link and `..`.
fn file_outside_grants(t: &mut Tally) {
    let dir = granted_dir();
    let policy = Policy::default().grants(Grants::none().file_root(&dir));
    let link = dir.join("passwd-link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    let dotdot = dir.join("../../../../etc/passwd");
    for (what, path) in [
        ("/etc/passwd", Path::new("/etc/passwd")),
        ("a link to /etc/passwd", link.as_path()),
        ("dir/../../../../etc/passwd", dotdot.as_path()),
    ] {
        let spec = file_spec(path, Duration::from_secs(1));
        expect_refused(t, &format!("file probe on {what}"), spec, policy.clone());
    }
    let deadline = Duration::from_secs(2);
    let args = json!({
        "probe": {"tool": "read_file", "args": {"path": "/etc/passwd"}},
        "until": {"matches": "root:"}, "poll_sec": 1, "max_wait_sec": 2,
    });
    let (answer, past) = profile_call("aura/wait_for", args, host_granting(&dir), deadline);
    let held = matches!(&answer, Some(Err((_, e))) if !e.contains("root:x"))
        || matches!(&answer, Some(Ok(out)) if !out.contains("root:x") && !out.contains("\"matched\""));
    t.record("aura read_file /etc/passwd", held, past);
    let args = ouro_args(Path::new("/etc/passwd"), Some("end"));
    let (answer, past) = profile_call("ouro/wait", args, host_granting(&dir), DEADLINE);
    let held = matches!(&answer, Some(Err((code, _))) if code == "invalid_arguments");
    t.record("ouro/wait on /etc/passwd", held, past);
}

fn cursor_words(cursor: Option<&str>) -> String {
    cursor.map_or("no cursor".into(), |c| format!("cursor \"{c}\""))
}

/// Opens and closes the FIFO for writing, so a reader blocked in its
/// open or read gets end of file and its thread can leave.
fn release_fifo_readers(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

/// A FIFO in the granted directory, as a followed file and an events log.
fn fifo(t: &mut Tally) {
    let dir = granted_dir();
    let fifo = dir.join("events.fifo");
    let _ = std::fs::remove_file(&fifo);
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let policy = Policy::default().grants(Grants::none().file_root(&dir));
    expect_on_time(t, "file probe", file_spec(&fifo, DEADLINE), policy);
    release_fifo_readers(&fifo);
    for cursor in [Some("end"), None] {
        let args = ouro_args(&fifo, cursor);
        let (_, past) = profile_call("ouro/wait", args, host_granting(&dir), DEADLINE);
        let what = format!("ouro/wait, {}", cursor_words(cursor));
        t.record(&what, past.is_some_and(|p| p <= GOAL), past);
        release_fifo_readers(&fifo);
    }
    fifo_command(t, &fifo);
}

/// The `waitfor` command on the FIFO, when it was built beside this
/// program (`cargo build --release -p waitfor-cli`): the process must exit
/// at its deadline.
fn fifo_command(t: &mut Tally, fifo: &Path) {
    let program = std::env::current_exe().unwrap().with_file_name("waitfor");
    if !program.exists() {
        t.notes
            .push("`waitfor file FIFO` not tried: build waitfor-cli in release first".into());
        return;
    }
    let deadline = Duration::from_secs(1);
    let started = Instant::now();
    let mut child = Command::new(program)
        .arg("file")
        .arg(fifo)
        .args(["--timeout", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let past = loop {
        if child.try_wait().unwrap().is_some() {
            break Some(started.elapsed().saturating_sub(deadline));
        }
        if started.elapsed() > deadline + HUNG {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Ends a command that outlived its deadline; reaps it either way.
    let _ = child.kill();
    let _ = child.wait();
    t.record(
        "waitfor file FIFO --timeout 1s",
        past.is_some_and(|p| p <= GOAL),
        past,
    );
    release_fifo_readers(fifo);
}

/// Records whether the process stays idle once every call returned: no
/// thread left reading or spinning.
fn expect_idle_after(t: &mut Tally) {
    let window = Duration::from_millis(500);
    let cpu = process_cpu();
    std::thread::sleep(window);
    let busy = (process_cpu() - cpu).as_secs_f64() / window.as_secs_f64();
    t.record(
        "idle after the calls (CPU < 10%)",
        busy < 0.1,
        Some(Duration::ZERO),
    );
    if busy >= 0.1 {
        t.notes
            .push(format!("{:.0}% CPU after the calls returned", busy * 100.0));
    }
}

/// Devices that never end or never block, as a followed file and an
/// events log.
fn devices(t: &mut Tally) {
    let policy = Policy::default().grants(Grants::none().file_root("/dev"));
    let host = || Host {
        grants: Grants::none().file_root("/dev"),
        ..Host::default()
    };
    expect_on_time(
        t,
        "file probe on /dev/zero",
        file_spec(Path::new("/dev/zero"), DEADLINE),
        policy,
    );
    for cursor in [Some("end"), None] {
        let args = ouro_args(Path::new("/dev/zero"), cursor);
        let (_, past) = profile_call("ouro/wait", args, host(), DEADLINE);
        let what = format!("ouro/wait on /dev/zero, {}", cursor_words(cursor));
        t.record(&what, past.is_some_and(|p| p <= GOAL), past);
    }
    expect_idle_after(t);
}

/// AURA's built-in `read_file` on endless devices (the host grants /dev).
fn read_file_devices(t: &mut Tally) {
    let deadline = Duration::from_secs(2);
    for device in ["/dev/zero", "/dev/urandom"] {
        let args = json!({
            "probe": {"tool": "read_file", "args": {"path": device}},
            "until": {"matches": "never"}, "poll_sec": 1, "max_wait_sec": 2,
        });
        let host = Host {
            grants: Grants::none().file_root("/dev"),
            ..Host::default()
        };
        let (_, past) = profile_call("aura/wait_for", args, host, deadline);
        let what = format!("aura read_file {device}");
        t.record(&what, past.is_some_and(|p| p <= GOAL), past);
    }
    expect_idle_after(t);
}

/// A directory where a file is expected.
fn directory(t: &mut Tally) {
    let dir = granted_dir();
    let policy = Policy::default().grants(Grants::none().file_root(&dir));
    let (answer, took) = run_builtin(file_spec(&dir, DEADLINE), policy);
    let held = match &answer {
        Some(Err(_)) => true,
        Some(Ok(result)) => {
            result.outcome == Outcome::Error || result.outcome == Outcome::ProbeError
        }
        None => false,
    };
    t.record(
        "file probe on a directory",
        held,
        answer.map(|_| took.saturating_sub(DEADLINE)),
    );
    let (answer, past) = profile_call(
        "ouro/wait",
        ouro_args(&dir, None),
        host_granting(&dir),
        DEADLINE,
    );
    t.record(
        "ouro/wait on a directory",
        matches!(answer, Some(Err(_))),
        past,
    );
}

/// Backoff factors whose interval overflows a duration, all at once;
/// then a healthy wait, which the engine must still run.
fn backoff(t: &mut Tally) {
    let waits: Vec<_> = [1e20, 1e300, f64::MAX]
        .into_iter()
        .map(|factor| {
            let spec = spec_json(json!({
                "until": {"matches": "ready"},
                "interval_ms": 10,
                "backoff": {"factor": factor, "max_interval_ms": 1000},
                "max_wait_ms": DEADLINE.as_millis() as u64,
            }));
            let probe = probe_fn(|_| Ok(Observation::text("no")));
            (
                factor,
                Instant::now(),
                Engine::global().start(spec, probe).unwrap(),
            )
        })
        .collect();
    for (factor, began, handle) in waits {
        let patience = (began + DEADLINE + HUNG).saturating_duration_since(Instant::now());
        let past = handle
            .wait_timeout(patience)
            .map(|_| began.elapsed().saturating_sub(DEADLINE));
        t.record(
            &format!("factor {factor:e}"),
            past.is_some_and(|p| p <= GOAL),
            past,
        );
    }
    let healthy = Spec::new(Condition::Matches(Pattern::literal("ready")))
        .interval(Duration::from_millis(10))
        .max_wait(DEADLINE);
    let (after, took) = guarded(DEADLINE, move || {
        let probe = probe_fn(|_| Ok(Observation::text("ready")));
        Engine::global().wait(healthy, probe).map(|r| r.outcome)
    });
    let past = after.as_ref().map(|_| took.saturating_sub(DEADLINE));
    let held = matches!(after, Some(Ok(Outcome::Matched)));
    t.record("a healthy wait afterwards matches", held, past);
}

/// Where hung probe calls block until the class releases them.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn block(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// 1,000 waits whose probe calls hang, then 200 waits whose probe
/// answers `ready` from 0.2 s on: each must match, and each hung wait
/// end at its deadline.
fn hung_and_healthy(t: &mut Tally) {
    let gate = Arc::new(Gate::default());
    let hung_deadline = Duration::from_secs(1);
    let spec = |max_wait: Duration| {
        Spec::new(Condition::Matches(Pattern::literal("ready")))
            .interval(Duration::from_millis(20))
            .max_wait(max_wait)
    };
    let start = |spec: Spec, probe: Box<dyn waitfor::Probe>| {
        let done = Arc::new(Mutex::new(None));
        let on_done = {
            let done = done.clone();
            move |r: &WaitResult| *done.lock().unwrap() = Some((Instant::now(), r.outcome))
        };
        let options = WaitOptions::default().on_done(on_done);
        let handle = Engine::global()
            .start_with(spec, Some(probe), options)
            .unwrap();
        (Instant::now(), handle, done)
    };
    let hung: Vec<_> = (0..1000)
        .map(|_| {
            let gate = gate.clone();
            let probe = probe_fn(move |_| {
                gate.block();
                Ok(Observation::text("late"))
            });
            start(spec(hung_deadline), Box::new(probe))
        })
        .collect();
    let healthy_deadline = Duration::from_secs(2);
    let healthy: Vec<_> = (0..200)
        .map(|_| {
            let probe = probe_fn(|ctx| {
                let ready = ctx.elapsed >= Duration::from_millis(200);
                Ok(Observation::text(if ready { "ready" } else { "starting" }))
            });
            start(spec(healthy_deadline), Box::new(probe))
        })
        .collect();
    for (group, deadline, want) in [
        (&healthy, healthy_deadline, Some(Outcome::Matched)),
        (&hung, hung_deadline, None),
    ] {
        for (started, handle, done) in group {
            let ended = handle.wait_timeout(
                (*started + deadline + HUNG).saturating_duration_since(Instant::now()),
            );
            let arrived = *done.lock().unwrap();
            let past = arrived
                .filter(|_| ended.is_some())
                .map(|(at, _)| at.saturating_duration_since(*started + deadline));
            let held = match want {
                Some(outcome) => arrived.is_some_and(|(_, o)| o == outcome),
                None => past.is_some_and(|p| p <= GOAL),
            };
            t.inputs += 1;
            t.held += usize::from(held);
            t.past.push(past.unwrap_or(HUNG));
        }
    }
    let matched = healthy
        .iter()
        .filter(|(_, _, done)| matches!(*done.lock().unwrap(), Some((_, Outcome::Matched))))
        .count();
    t.notes
        .push(format!("{matched} of 200 healthy waits matched"));
    gate.open();
}

/// Runs `count` waits at once, each with the patterns `patterns(i)` and a
/// probe that never matches, deadline `deadline`; records each.
fn pattern_waits(
    t: &mut Tally,
    what: &str,
    count: usize,
    deadline: Duration,
    patterns: impl Fn(usize) -> Vec<Pattern>,
) {
    let calls = Arc::new(AtomicU64::new(0));
    let started: Vec<_> = (0..count)
        .map(|i| {
            let spec = Spec::new(Condition::Patterns(patterns(i)))
                .interval(Duration::from_millis(10))
                .max_wait(deadline);
            let calls = calls.clone();
            let probe = probe_fn(move |_| {
                calls.fetch_add(1, Ordering::Relaxed);
                Ok(Observation::text("nothing to see"))
            });
            let began = Instant::now();
            (began, Engine::global().start(spec, probe))
        })
        .collect();
    for (began, handle) in started {
        let past = match handle {
            Ok(handle) => handle
                .wait_timeout((began + deadline + HUNG).saturating_duration_since(Instant::now()))
                .map(|_| began.elapsed().saturating_sub(deadline)),
            // Refused at the start (a size limit): held if refused in time.
            Err(_) => Some(began.elapsed().saturating_sub(deadline)),
        };
        t.record(what, past.is_some_and(|p| p <= GOAL), past);
    }
}

/// 120 distinct `\w{150}N` patterns: each compiles to megabytes.
fn big_compiled_patterns(t: &mut Tally) {
    let round = t.round;
    pattern_waits(t, "\\w{150}N wait", 120, Duration::from_millis(50), |i| {
        vec![Pattern::regex(format!("{i}\\w{{150}}N{round}"))]
    });
}

/// Waits of 60 patterns of 60 KiB each, with a 50 ms deadline.
fn huge_pattern_lists(t: &mut Tally) {
    let (unit, round) = ("[a-y]z", t.round);
    pattern_waits(
        t,
        "60 x 60 KiB patterns",
        3,
        Duration::from_millis(50),
        |i| {
            (0..60)
                .map(|j| {
                    let head = format!("{round}-{i}-{j}:");
                    let body = unit.repeat((60 * 1024 - head.len()) / unit.len());
                    Pattern::regex(head + &body)
                })
                .collect()
        },
    );
}

/// Two waits whose eight case-insensitive `\w{38}X\w{2}` patterns search
/// 150 KB of Unicode words a sample (about a second each), and quick waits
/// one after another beside them: none of them late.
fn costly_searches(t: &mut Tally) {
    let alphabet: Vec<char> = [0x41..0x5b, 0x3b1..0x3c9, 0x430..0x44f, 0x4e00..0x4e40]
        .into_iter()
        .flatten()
        .filter_map(char::from_u32)
        .collect();
    let text: String = (0..60_000usize)
        .map(|i| alphabet[i.wrapping_mul(2_654_435_761) % alphabet.len()])
        .collect();
    let separators = ["#%&~=<>@", "!$*+,;?^"][t.round % 2];
    let patterns: Vec<Pattern> = separators
        .chars()
        .map(|c| Pattern::regex(format!(r"\w{{38}}{c}\w{{2}}")).case_insensitive())
        .collect();
    let costly_deadline = Duration::from_secs(2);
    let costly: Vec<_> = (0..2)
        .map(|_| {
            let spec = Spec::new(Condition::Patterns(patterns.clone()))
                .interval(Duration::from_millis(10))
                .max_wait(costly_deadline);
            let text = text.clone();
            let probe = probe_fn(move |_| Ok(Observation::text(text.clone())));
            (Instant::now(), Engine::global().start(spec, probe).unwrap())
        })
        .collect();
    let quick = Spec::new(Condition::Matches(Pattern::literal("never")))
        .interval(Duration::from_millis(20))
        .max_wait(DEADLINE);
    for _ in 0..8 {
        let spec = quick.clone();
        let (answer, took) = guarded(DEADLINE, move || {
            Engine::global().wait(spec, probe_fn(|_| Ok(Observation::text("x"))))
        });
        let past = answer.map(|_| took.saturating_sub(DEADLINE));
        t.record("quick wait", past.is_some_and(|p| p <= GOAL), past);
    }
    for (began, handle) in costly {
        let past = handle
            .wait_timeout(
                (began + costly_deadline + HUNG).saturating_duration_since(Instant::now()),
            )
            .map(|_| began.elapsed().saturating_sub(costly_deadline));
        t.record("costly wait", past.is_some_and(|p| p <= GOAL), past);
    }
}

/// Commands that never stop writing: over the output cap, not run to
/// the deadline.
fn endless_output(t: &mut Tally) {
    let deadline = Duration::from_secs(2);
    for argv in [&["yes"][..], &["cat", "/dev/zero"][..]] {
        let spec = spec_json(json!({
            "probe": {"command": {"argv": argv}},
            "until": {"matches": "never"},
            "max_wait_ms": deadline.as_millis() as u64,
        }));
        let policy = Policy::default().grants(Grants::none().commands(Commands::Any));
        let (answer, took) = run_builtin(spec, policy);
        show(
            &argv.join(" "),
            &answer.as_ref().map(|r| r.as_ref().map(|r| r.outcome)),
        );
        let past = answer.as_ref().map(|_| took.saturating_sub(deadline));
        // Held: reported over the cap well before the deadline.
        let held = matches!(&answer, Some(Ok(r)) if r.outcome == Outcome::Error) && took < deadline;
        t.record(&argv.join(" "), held, past);
    }
}

/// 1,000 command waits starting together, each command a shell that sleeps
/// 0.3 s: on 2 cores, their starts hold this process's memory map, where
/// the scheduler thread waits too (0.5-0.7 s past the deadline).
fn many_command_waits(t: &mut Tally) {
    let deadline = Duration::from_secs(1);
    let waits: Vec<_> = (0..1000)
        .map(|_| {
            let spec = spec_json(json!({
                "probe": {"command": {"argv": ["sh", "-c", "echo x; sleep 0.3"]}},
                "until": {"matches": "never"},
                "interval_ms": 50,
                "max_wait_ms": deadline.as_millis() as u64,
            }));
            let done = Arc::new(Mutex::new(None));
            let on_done = {
                let done = done.clone();
                move |_: &WaitResult| *done.lock().unwrap() = Some(Instant::now())
            };
            let policy = Policy::default().grants(Grants::none().commands(Commands::Any));
            let options = WaitOptions::default().policy(policy).on_done(on_done);
            let started = Instant::now();
            let handle = Engine::global().start_with(spec, None, options).unwrap();
            (started, handle, done)
        })
        .collect();
    for (started, handle, done) in waits {
        let ended = handle
            .wait_timeout((started + deadline + HUNG).saturating_duration_since(Instant::now()));
        let past = (*done.lock().unwrap())
            .filter(|_| ended.is_some())
            .map(|at| at.saturating_duration_since(started + deadline));
        t.inputs += 1;
        t.held += usize::from(past.is_some_and(|p| p <= GOAL));
        t.past.push(past.unwrap_or(HUNG));
    }
    let late = t.inputs - t.held;
    t.notes.push(format!("{late} of 1,000 past the goal"));
}

/// A log of 8 MiB of short events (70,000), waited on from its start: the
/// answer holds the first 1,000, and building it takes little memory.
fn big_event_log(t: &mut Tally) {
    use std::io::Write;
    let dir = granted_dir();
    let log = dir.join("events.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&log).unwrap());
    // Written without a String a line, so that the process's own memory
    // stays where it was: 70,000 lines of 120 bytes.
    for n in 0..70_000 {
        let at = "2026-01-01T00:00:00Z";
        writeln!(
            file,
            r#"{{"type":"build.done","at":"{at}","by":"ci","summary":"build {n:05} passed","data":{{}}}}"#
        )
        .unwrap();
    }
    file.flush().unwrap();
    let peak_before = peak_resident_bytes();
    let (answer, past) = profile_call(
        "ouro/wait",
        ouro_args(&log, None),
        host_granting(&dir),
        DEADLINE,
    );
    /// The answer's events, counted without building them: the 1,000
    /// events as a `Value` tree would leave megabytes of this program's own
    /// freed memory in the row's "after".
    #[derive(serde::Deserialize)]
    struct Counted {
        events: Vec<serde::de::IgnoredAny>,
    }
    let events = answer
        .as_ref()
        .and_then(|a| a.as_ref().ok())
        .and_then(|text| serde_json::from_str::<Counted>(text).ok())
        .map(|counted| counted.events.len());
    let grew = peak_resident_bytes().saturating_sub(peak_before);
    // Held: the first 1,000 events, in at most 64 MiB more than before.
    t.record(
        &format!("from the start: {events:?} events, peak +{}", mib(grew)),
        events == Some(1000) && grew < 64 << 20,
        past,
    );
}

/// A resume token taken after a partial UTF-8 character, used after the
/// file was truncated and rewritten; and a token for another file.
fn resume_tokens(t: &mut Tally) {
    let dir = granted_dir();
    let log = dir.join("resume.log");
    std::fs::write(&log, "").unwrap();
    let policy = || Policy::default().grants(Grants::none().file_root(&dir));
    let wait = |path: &Path, until: &str, resume: Option<String>| {
        let mut value = json!({
            "probe": {"file": {"path": path}},
            "view": "fresh",
            "until": {"matches": until},
            "interval_ms": 10,
            "max_wait_ms": 300,
        });
        if let Some(token) = resume {
            value["resume"] = token.into();
        }
        let options = WaitOptions::default().policy(policy());
        Engine::global().start_with(spec_json(value), None, options)
    };
    // The first wait sees a line and half of "é".
    let first = wait(&log, "never", None).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(&log, b"line one\n\xc3").unwrap();
    let token = first.wait().resume;
    show("resume token after a partial character", &token);
    // Between the two calls the file is truncated and rewritten, shorter.
    std::fs::write(&log, "ready\n").unwrap();
    let began = Instant::now();
    let outcome = token
        .clone()
        .map(|token| wait(&log, "ready", Some(token)).map(|h| h.wait().outcome));
    show("resumed after the truncation", &outcome);
    // Held: the new line is seen, or the token is refused as not fitting.
    let held = matches!(
        outcome,
        Some(Ok(Outcome::Matched | Outcome::Error | Outcome::ProbeError)) | Some(Err(_))
    );
    t.record(
        "truncated after a partial character: resumed wait sees the new line",
        held,
        Some(began.elapsed().saturating_sub(Duration::from_millis(300))),
    );
    // The same token on another file: an error, not a replay from 0.
    let other = dir.join("other.log");
    std::fs::write(&other, "ready\n").unwrap();
    let began = Instant::now();
    let outcome = token.map(|token| wait(&other, "ready", Some(token)).map(|h| h.wait().outcome));
    show("token of another file", &outcome);
    let held = matches!(
        outcome,
        Some(Err(_)) | Some(Ok(Outcome::Error | Outcome::ProbeError))
    );
    t.record(
        "token of another file: refused",
        held,
        Some(began.elapsed().saturating_sub(Duration::from_millis(300))),
    );
}

/// tmux socket names that are paths.
fn tmux_socket_paths(t: &mut Tally) {
    for name in ["../../x.sock", "/tmp/x.sock"] {
        let spec = spec_json(json!({
            "probe": {"tmux": {"socket_name": name}},
            "until": {"matches": "never"},
            "max_wait_ms": DEADLINE.as_millis() as u64,
        }));
        expect_refused(
            t,
            &format!("tmux probe socket_name {name}"),
            spec,
            Policy::default(),
        );
        let args = json!({"socket_name": name, "patterns": ["never"], "timeout": 0.2});
        let (answer, past) =
            profile_call("libtmux-mcp/wait_for_text", args, Host::default(), DEADLINE);
        let held = matches!(&answer, Some(Err((code, _))) if code == "invalid_arguments");
        t.record(&format!("wait_for_text socket_name {name}"), held, past);
    }
}

/// Many pane waits on one tmux server: each must end at its deadline
/// having read the pane (a timeout, as its original reports), none
/// without a sample because the others crowd it out.
fn many_pane_waits(t: &mut Tally) {
    const WAITS: usize = 300;
    let name = format!("waitfor-hostile-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &name, "-f", "/dev/null"])
            .args(args)
            .status()
            .is_ok_and(|status| status.success())
    };
    if !tmux(&["new-session", "-d", "-x", "80", "-y", "24"]) {
        t.notes.push("no tmux server could start".into());
        return;
    }
    let deadline = Duration::from_secs(2);
    let calls: Vec<_> = (0..WAITS)
        .map(|_| {
            let args = json!({"socket_name": name, "pane_id": "%0",
                              "patterns": ["never printed"], "timeout": 2.0});
            std::thread::spawn(move || {
                profile_call("libtmux-mcp/wait_for_text", args, Host::default(), deadline)
            })
        })
        .collect();
    for call in calls {
        let (answer, past) = call.join().expect("a call thread");
        let held = matches!(&answer, Some(Ok(text)) if text.contains(r#""outcome":"timeout""#));
        t.record("wait_for_text among 300 on one server", held, past);
    }
    tmux(&["kill-server"]);
}

/// Runs one class's inputs.
type Class = fn(&mut Tally);

/// The classes, in table order: name, what the row says, the class.
const CLASSES: &[(&str, &str, Class)] = &[
    (
        "commands",
        "command outside the grants",
        command_outside_grants,
    ),
    (
        "files",
        "file outside the grants (path, link, ..)",
        file_outside_grants,
    ),
    ("fifo", "FIFO as a file and as an events log", fifo),
    (
        "devices",
        "/dev/zero as a file and as an events log",
        devices,
    ),
    (
        "read-file-devices",
        "read_file on /dev/zero, /dev/urandom",
        read_file_devices,
    ),
    (
        "directory",
        "directory as a file and as an events log",
        directory,
    ),
    ("backoff", "backoff factor 1e20 and beyond", backoff),
    (
        "hung",
        "1,000 hung probes + 200 healthy waits",
        hung_and_healthy,
    ),
    (
        "patterns",
        "120 distinct \\w{150}N patterns",
        big_compiled_patterns,
    ),
    (
        "costly-search",
        "2 waits searching 1 s a sample + 8 quick waits beside",
        costly_searches,
    ),
    (
        "pattern-lists",
        "60 patterns of 60 KiB, 50 ms deadline",
        huge_pattern_lists,
    ),
    ("output", "command output without end (yes)", endless_output),
    (
        "many-commands",
        "1,000 command waits, 0.3 s commands",
        many_command_waits,
    ),
    (
        "event-log",
        "an 8 MiB log of 70,000 events, from its start",
        big_event_log,
    ),
    (
        "resume",
        "resume token: partial UTF-8, then truncation",
        resume_tokens,
    ),
    (
        "tmux-socket",
        "tmux socket_name ../../x.sock",
        tmux_socket_paths,
    ),
    (
        "tmux-many",
        "300 pane waits on one tmux server",
        many_pane_waits,
    ),
];

/// The child: runs one class twice and prints its row's figures on one
/// line. The first round starts from a cold process; what it leaves is
/// the allocator's, thread stacks' and code pages' one-time footprint
/// (glibc keeps a thread arena's free top for the next thread, and
/// `malloc_trim` leaves it) as much as anything the calls kept. The
/// second round, the same inputs again, starts from the first's settled
/// process: memory it leaves beyond that is memory repeated hostile calls
/// pin, which the goal checks. Both rounds' inputs must hold.
fn run_class(name: &str) {
    let (_, _, class) = CLASSES
        .iter()
        .find(|(n, _, _)| *n == name)
        .unwrap_or_else(|| panic!("no class {name}"));
    // Start the engine's threads before the baseline.
    let probe = probe_fn(|_| Ok(Observation::text("ready")));
    Engine::global()
        .wait(
            Spec::new(Condition::Matches(Pattern::literal("ready"))),
            probe,
        )
        .unwrap();
    let (cold, engine_threads) = (resident_bytes(), threads());
    memory_report("cold", engine_threads);
    let mut tally = Tally::default();
    class(&mut tally);
    tally.round = 1;
    let first_after = settle(cold, engine_threads);
    memory_report("after the first round", engine_threads);
    let (baseline, heap_baseline) = (resident_bytes(), heap_in_use());
    class(&mut tally);
    let after = settle(baseline, engine_threads);
    memory_report("after the second round", engine_threads);
    let _ = std::fs::remove_dir_all(granted_dir());
    let (p99, max) = (
        percentile(&mut tally.past, 99.0),
        percentile(&mut tally.past, 100.0),
    );
    tally.notes.dedup();
    let line = json!({
        "inputs": tally.inputs, "held": tally.held,
        "p99_ms": p99.as_secs_f64() * 1e3, "max_ms": max.as_secs_f64() * 1e3,
        "cold": cold, "first_after": first_after,
        "baseline": baseline, "after": after, "notes": tally.notes,
        "heap_baseline": heap_baseline, "heap_after": heap_in_use(),
    });
    println!("{line}");
    // Hung inputs may have left threads behind: leave without them.
    std::process::exit(0);
}

/// The resident size once a round's memory is back to `baseline`, or once
/// the engine's extra threads have left and it has trimmed (it does 0.5 s
/// after the last leaves), or after [`SETTLE`]. Memory may take a while:
/// extra workers and CPU threads leave after about 10 s idle, and work a
/// wait started can outlive it (a compile runs to its end).
fn settle(baseline: u64, engine_threads: u64) -> u64 {
    let settle_until = Instant::now() + SETTLE;
    let mut threads_left_at = None;
    loop {
        let after = resident_bytes();
        let now = Instant::now();
        if threads() <= engine_threads {
            threads_left_at.get_or_insert(now);
        }
        let trimmed = threads_left_at.is_some_and(|at| now > at + TRIM_DELAY);
        if memory_back(baseline, after) || trimmed || now >= settle_until {
            return after;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Past the engine's 0.5 s delay before it gives memory back.
const TRIM_DELAY: Duration = Duration::from_secs(1);

/// Runs one class in a child, killing it past [`CLASS_LIMIT`] or
/// [`MEMORY_LIMIT`]; its figures, or why there are none.
fn child_row(name: &str) -> Result<Value, String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--class", name])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let killed = loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break None;
        }
        let rss = std::fs::read_to_string(format!("/proc/{}/statm", child.id()))
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0)
            // SAFETY: sysconf with a valid name only reads a constant.
            * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        if rss > MEMORY_LIMIT {
            break Some(format!("killed at {} MiB resident", rss >> 20));
        }
        if started.elapsed() > CLASS_LIMIT {
            break Some(format!(
                "killed: still running after {} s",
                CLASS_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if let Some(why) = killed {
        let _ = child.kill();
        let _ = child.wait();
        return Err(why);
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .map_err(|e| e.to_string())?;
    let last = out.lines().last().unwrap_or("");
    serde_json::from_str(last).map_err(|_| format!("the class ended without its figures: {out}"))
}

/// Slack on top of 10% of a baseline of a few MiB: allocator and
/// thread-local caches of the first calls.
const MEMORY_SLACK: u64 = 1 << 20;

/// Whether memory is back to `baseline` within 10% (+ [`MEMORY_SLACK`]).
fn memory_back(baseline: u64, after: u64) -> bool {
    after <= baseline + baseline / 10 + MEMORY_SLACK
}

/// Bytes the program holds in allocator blocks (glibc's counters; 0
/// elsewhere): unlike the resident size, free memory the allocator keeps
/// for reuse is not in it.
fn heap_in_use() -> u64 {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let info = unsafe { libc::mallinfo2() };
        (info.uordblks + info.hblkhd) as u64
    }
    #[cfg(not(target_env = "gnu"))]
    0
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// One table row from a class's figures.
fn row(what: &str, figures: Result<Value, String>) -> String {
    let v = match figures {
        Ok(v) => v,
        Err(why) => return format!("| {what} | - | not held: {why} | - | - | - | - | |\n"),
    };
    let (inputs, held) = (
        v["inputs"].as_u64().unwrap_or(0),
        v["held"].as_u64().unwrap_or(0),
    );
    let (p99, max) = (
        v["p99_ms"].as_f64().unwrap_or(0.0),
        v["max_ms"].as_f64().unwrap_or(0.0),
    );
    let bytes = |key: &str| v[key].as_u64().unwrap_or(0);
    let (cold, first_after) = (bytes("cold"), bytes("first_after"));
    let (base, after) = (bytes("baseline"), bytes("after"));
    let change = |from: u64, to: u64| (to as f64 / from.max(1) as f64 - 1.0) * 100.0;
    let kib = |key: &str| v[key].as_u64().unwrap_or(0) >> 10;
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(Value::as_str).take(4).collect())
        .unwrap_or_default();
    format!(
        "| {what} | {inputs} | {held} {} | {p99:.1} / {max:.1} ms {} | {} → {} ({:+.0}%) | {} → {} ({:+.0}%) {} | {} → {} KiB | {} |\n",
        mark(held == inputs),
        mark(max <= GOAL.as_secs_f64() * 1e3),
        mib(cold),
        mib(first_after),
        change(cold, first_after),
        mib(base),
        mib(after),
        change(base, after),
        mark(memory_back(base, after)),
        kib("heap_baseline"),
        kib("heap_after"),
        notes.join("; ").replace('|', "\\|"),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, name] = args.as_slice() {
        if flag == "--class" {
            return run_class(name);
        }
    }
    let started = Instant::now();
    let mut table = String::from(
        "### hostile inputs (cargo run --release -p waitfor-bench --bin hostile)\n\n\
         Each class runs twice in a fresh process: the first round from cold, the second, the \
         same inputs again, from where the first settled. Goals: every input of both rounds held \
         (refused with a clear error, or ended by its deadline); at most 50 ms past the deadline; \
         memory after the second round within 10% (+ 1 MiB) of what it started from, so repeated \
         calls pin nothing. What the first round leaves is mostly the one-time footprint of the \
         threads it grew: glibc keeps each thread arena's free top and each thread stack for the \
         next thread (README: what a host sets to have it back). The resident size (RSS) \
         includes that free memory; \"in use\" is what the program holds in allocator blocks.\n\n\
         | class | inputs (2 rounds) | held | past the deadline, p99 / max | RSS first round: cold → after | RSS second round: before → after | in use, second round | not held |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for (name, what, _) in CLASSES {
        if !args.is_empty() && !args.iter().any(|a| a == name) {
            continue;
        }
        let line = row(what, child_row(name));
        print!("{line}");
        table += &line;
    }
    table += &format!("\nWhole suite: {:.0} s.\n", started.elapsed().as_secs_f64());
    println!("\n{table}");
    if args.is_empty() {
        write_section(&results_path(), "hostile", &table).expect("bench/RESULTS.md written");
    }
}

/// With `HOSTILE_MEMORY=1`, where the resident memory is, on stderr: the
/// anonymous part, what the allocator holds in use and free, and resident
/// bytes by kind of mapping (glibc's thread arenas are the anonymous
/// mappings at 64 MiB boundaries, thread stacks the ones of a stack's size).
fn memory_report(when: &str, baseline_threads: u64) {
    if std::env::var_os("HOSTILE_MEMORY").is_none() {
        return;
    }
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let anonymous = rollup.lines().find(|l| l.starts_with("Anonymous:"));
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    eprintln!(
        "[{when}] RSS {} KiB, {} | threads {} (baseline {baseline_threads}) | allocator: \
         {} KiB in use, {} KiB free, {} KiB mapped alone",
        resident_bytes() >> 10,
        anonymous
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        threads(),
        info.uordblks >> 10,
        info.fordblks >> 10,
        info.hblkhd >> 10,
    );
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut kinds: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut kind = String::new();
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let Some(rss) = line.strip_prefix("Rss:") {
            let kib: u64 = rss
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            let entry = kinds.entry(kind.clone()).or_default();
            entry.0 += kib;
            entry.1 += 1;
        } else if let Some((start, end)) = fields.first().and_then(|r| r.split_once('-')) {
            let (Ok(start), Ok(end)) =
                (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
            else {
                continue;
            };
            let kib = (end - start) >> 10;
            kind = match fields.get(5) {
                Some(name) if name.starts_with('[') => name.to_string(),
                Some(_) => "files".into(),
                None if start % (64 << 20) == 0 => "thread arenas".into(),
                None if (2040..=2060).contains(&kib) => "thread stacks".into(),
                None => "other anonymous".into(),
            };
        }
    }
    for (kind, (kib, count)) in kinds.iter().filter(|(_, (kib, _))| *kib > 0) {
        eprintln!("    {kib:6} KiB in {count:4} {kind}");
    }
}
