//! `async def` probes of asyncio waits, run on the caller's event loop
//! with no engine thread waiting for them.
//!
//! The engine begins a call on its scheduler thread ([`AsyncProbe::begin`]),
//! which must neither block nor take the interpreter lock: the call, with
//! its [`Reply`], goes into the queue of the loop's [`LoopInbox`], and the
//! loop is woken through a socket it watches (`loop.add_reader`), written
//! only when the queue was empty. On the loop, [`LoopInbox::drain`] takes
//! what is queued and starts each call's coroutine as a task in the
//! caller's context; the task's done-callback sends the answer, with the
//! others of the same loop turn (one engine wake-up for the lot). The engine
//! abandons a call only when its wait ends: the wait's probe, dropped then,
//! queues the end, and the loop cancels the task.

use crate::invoke::{start_task, Called};
use crate::observe::observation;
use crate::probe::PyProbe;
use crate::sync::Mutex;
use pyo3::intern;
use pyo3::prelude::*;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use waitfor::{AsyncProbe, CancelToken, Observation, ProbeContext, ProbeError, ProbeMode, Reply};

type Answer = Result<Observation, ProbeError>;

/// What the engine hands a loop.
enum Job {
    /// Begin a probe call.
    Call(Call),
    /// A wait ended: cancel its call in flight.
    End(Ending),
}

/// The end of a wait's call in flight, for the loop to cancel.
struct Ending(Arc<Flight>);

/// Dropped untaken (the loop is gone, or its inbox): the call's task is
/// let go of. It never runs again, and it holds its flight through its
/// done-callback: kept, the two would keep each other, the queue and
/// the probe for good.
impl Drop for Ending {
    fn drop(&mut self) {
        let state = std::mem::take(&mut *self.0 .0.lock());
        drop(state);
    }
}

/// One probe call for the loop to begin.
struct Call {
    queue: Arc<Queue>,
    probe: Arc<PyProbe>,
    ctx: ProbeContext,
    reply: Reply,
    flight: Arc<Flight>,
}

/// Where a wait's call is (a wait has at most one).
#[derive(Default)]
struct Flight(Mutex<State>);

#[derive(Default)]
enum State {
    /// No call: the last one has answered.
    #[default]
    Idle,
    /// Queued for the loop.
    Queued,
    /// Running on the loop as this task.
    Task(Py<PyAny>),
}

impl Flight {
    fn set(&self, state: State) {
        *self.0.lock() = state;
    }

    /// The wait ended: its task, if one runs, is cancelled (on the loop).
    fn end(&self, py: Python<'_>) {
        if let State::Task(task) = std::mem::take(&mut *self.0.lock()) {
            let _ = task.bind(py).call_method0(intern!(py, "cancel"));
        }
    }
}

/// The calls waiting for one loop, its wake-up, and the answers of its
/// current turn.
struct Queue {
    /// `None` once the loop's inbox is gone: nobody takes jobs any more.
    jobs: Mutex<Option<Vec<Job>>>,
    answers: Mutex<Vec<(Reply, Answer)>>,
    /// Written to wake the loop.
    bell: UnixStream,
    /// The end the loop watches.
    door: UnixStream,
}

impl Queue {
    fn new() -> std::io::Result<Self> {
        let (bell, door) = UnixStream::pair()?;
        bell.set_nonblocking(true)?;
        door.set_nonblocking(true)?;
        Ok(Self {
            jobs: Mutex::new(Some(Vec::new())),
            answers: Mutex::default(),
            bell,
            door,
        })
    }

    /// Queues `job`, and wakes the loop unless a wake is on its way
    /// (something was queued already). Never blocks. Once the loop's inbox
    /// is gone the job is dropped (a call's reply, dropped, answers): kept,
    /// it would keep the queue (a call holds it, an ended call its task,
    /// whose done-callback holds it) and the probe for good.
    fn push(&self, job: Job) {
        let first = {
            let mut jobs = self.jobs.lock();
            let Some(jobs) = jobs.as_mut() else {
                return;
            };
            jobs.push(job);
            jobs.len() == 1
        };
        if first {
            // One byte at most per `take`: the socket never fills up.
            let _ = (&self.bell).write(&[1]);
        }
    }

    /// Everything queued. The wake-up is read first, so a job pushed
    /// meanwhile wakes the loop again.
    fn take(&self) -> Vec<Job> {
        let mut bytes = [0u8; 16];
        while matches!((&self.door).read(&mut bytes), Ok(n) if n > 0) {}
        self.jobs
            .lock()
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Sends `answer` at the end of this turn of `event_loop` (on it),
    /// with the others of the turn.
    fn answer(self: &Arc<Self>, event_loop: &Bound<'_, PyAny>, reply: Reply, answer: Answer) {
        let first = {
            let mut answers = self.answers.lock();
            answers.push((reply, answer));
            answers.len() == 1
        };
        let py = event_loop.py();
        if first
            && event_loop
                .call_method1(intern!(py, "call_soon"), (SendAnswers(self.clone()),))
                .is_err()
        {
            // A closed loop runs nothing more.
            self.send();
        }
    }

    fn send(&self) {
        Reply::send_all(std::mem::take(&mut *self.answers.lock()));
    }
}

/// Sends the answers of a loop turn (scheduled on the loop).
#[pyclass(frozen, module = "waitfor._native")]
struct SendAnswers(Arc<Queue>);

#[pymethods]
impl SendAnswers {
    fn __call__(&self) {
        self.0.send();
    }
}

/// The way in for one event loop's probe calls (internal: `waitfor._aio`
/// makes one per loop, which calls `drain` when `fileno()` is readable).
#[pyclass(frozen, module = "waitfor._native")]
pub struct LoopInbox {
    queue: Arc<Queue>,
}

#[pymethods]
impl LoopInbox {
    #[new]
    fn new() -> PyResult<Self> {
        Ok(Self {
            queue: Arc::new(Queue::new()?),
        })
    }

    /// The file descriptor that is readable when calls are queued.
    fn fileno(&self) -> i32 {
        self.queue.door.as_raw_fd()
    }

    /// Begins the queued calls and cancels the calls of waits that ended
    /// (on the loop, which is running).
    fn drain(&self, py: Python<'_>) {
        for job in self.queue.take() {
            match job {
                Job::Call(call) => call.begin(py),
                Job::End(ending) => ending.0.end(py),
            }
        }
    }
}

/// Let go of when its loop is (closed, or gone): what the loop never
/// took goes now, and later jobs are dropped (see [`Queue::push`]).
/// Answers still waiting for a turn of the loop are sent.
impl Drop for LoopInbox {
    fn drop(&mut self) {
        let jobs = self.queue.jobs.lock().take();
        drop(jobs);
        self.queue.send();
    }
}

impl Call {
    /// Calls the probe; a coroutine it returns runs as a task, which
    /// answers when done.
    fn begin(self, py: Python<'_>) {
        let Call {
            queue,
            probe,
            ctx,
            reply,
            flight,
        } = self;
        // The wait ended before the loop came to its call: nobody wants
        // the answer.
        if ctx.cancel.is_cancelled() {
            return flight.set(State::Idle);
        }
        let called = probe
            .args(py, &ctx)
            .and_then(|args| probe.calls.invoke(py, probe.func.bind(py), args));
        let answer = match called {
            Ok(Called::Value(value)) => observation(&value, ctx.output_cap),
            Ok(Called::Awaitable(awaitable, context)) => match start_task(&context, awaitable) {
                Ok(task) => {
                    let done = Done {
                        queue,
                        reply: Mutex::new(Some(reply)),
                        probe: probe.clone(),
                        flight: flight.clone(),
                        cancel: ctx.cancel,
                        output_cap: ctx.output_cap,
                    };
                    // Should this fail, `done` is dropped with the reply,
                    // which answers with a probe error.
                    let _ = task.call_method1(intern!(py, "add_done_callback"), (done,));
                    return flight.set(State::Task(task.unbind()));
                }
                Err(err) => Err(probe.calls.failed(py, err)),
            },
            Err(err) => Err(err),
        };
        flight.set(State::Idle);
        reply.send(answer);
    }
}

/// A probe task's done-callback: sends its answer.
#[pyclass(frozen, module = "waitfor._native")]
struct Done {
    queue: Arc<Queue>,
    reply: Mutex<Option<Reply>>,
    probe: Arc<PyProbe>,
    flight: Arc<Flight>,
    /// The wait's token: cancelled when it ends.
    cancel: CancelToken,
    /// The wait's output cap, for reading the answer.
    output_cap: usize,
}

#[pymethods]
impl Done {
    fn __call__(&self, py: Python<'_>, task: &Bound<'_, PyAny>) {
        self.flight.set(State::Idle);
        let Some(reply) = self.reply.lock().take() else {
            return;
        };
        // Ended with its wait (and cancelled by it, or on its way): its
        // error is no probe error.
        if self.cancel.is_cancelled() {
            return;
        }
        let answer = match task.call_method0(intern!(py, "result")) {
            Ok(value) => observation(&value, self.output_cap),
            Err(err) => Err(self.probe.calls.failed(py, err)),
        };
        match task.call_method0(intern!(py, "get_loop")) {
            Ok(event_loop) => self.queue.answer(&event_loop, reply, answer),
            Err(_) => reply.send(answer),
        }
    }
}

/// A Python probe whose calls begin on an event loop, through its inbox.
pub struct LoopProbe {
    probe: Arc<PyProbe>,
    queue: Arc<Queue>,
    flight: Arc<Flight>,
}

impl LoopProbe {
    /// `probe`, called on the loop of `inbox`.
    pub fn new(probe: PyProbe, inbox: &LoopInbox) -> Self {
        Self {
            probe: Arc::new(probe),
            queue: inbox.queue.clone(),
            flight: Arc::default(),
        }
    }
}

impl AsyncProbe for LoopProbe {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        self.flight.set(State::Queued);
        self.queue.push(Job::Call(Call {
            queue: self.queue.clone(),
            probe: self.probe.clone(),
            ctx: ctx.clone(),
            reply,
            flight: self.flight.clone(),
        }));
    }

    fn mode(&self) -> ProbeMode {
        self.probe.probe_mode()
    }

    fn name(&self) -> &str {
        "python"
    }
}

/// Dropped when its wait ends: a call still queued or running is ended
/// too (queued behind it, so the loop sees the call first).
impl Drop for LoopProbe {
    fn drop(&mut self) {
        if !matches!(*self.flight.0.lock(), State::Idle) {
            self.queue.push(Job::End(Ending(self.flight.clone())));
        }
    }
}
