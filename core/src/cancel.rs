//! A cancel token shared between a wait and the probe calls it makes.

use crate::sync::{Condvar, Mutex};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Tells a probe call that its result is no longer wanted: the wait was
/// cancelled, reached its deadline, or abandoned the call.
///
/// Cloning gives another handle to the same token. Any thread may cancel it;
/// probes either poll [`CancelToken::is_cancelled`] or block in
/// [`CancelToken::wait_timeout`] instead of sleeping.
///
/// ```
/// use waitfor::CancelToken;
/// let token = CancelToken::new();
/// let seen_by_probe = token.clone();
/// token.cancel();
/// assert!(seen_by_probe.is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Read without the lock: probes and bindings ask once per call.
    cancelled: AtomicBool,
    /// Held to set `cancelled` and to sleep on `changed`, so no sleeper
    /// misses the change; it also holds the hooks to run on cancel.
    lock: Mutex<Hooks>,
    changed: Condvar,
    /// For a [`CancelToken::child`]: its entry on the parent, removed when
    /// the child goes.
    parent: OnceLock<CancelHook>,
}

impl Inner {
    /// A child reads its parent too: a parent only marked cancelled
    /// ([`CancelToken::mark_cancelled`]) runs the hook that cancels the
    /// child later, and the child must read cancelled meanwhile.
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
            || self
                .parent
                .get()
                .is_some_and(|hook| hook.inner.is_cancelled())
    }
}

/// What runs when a token is cancelled, registered and not yet ran or
/// dropped.
#[derive(Default)]
struct Hooks {
    next_id: u64,
    waiting: Vec<(u64, Hook)>,
}

/// Code a token runs when it is cancelled.
pub(crate) type HookFn = Box<dyn FnOnce() + Send>;

enum Hook {
    /// A host's ([`CancelToken::on_cancel`]): any code, which may block.
    Host(HookFn),
    /// The engine's own ([`CancelToken::on_cancel_quick`]): returns at
    /// once.
    Quick(HookFn),
    /// A [`CancelToken::child`], cancelled with its parent. Weak: the
    /// parent does not keep the child alive.
    Child(Weak<Inner>),
}

/// Keeps a hook of [`CancelToken::on_cancel`] registered; dropping it
/// removes a hook that has not run. A hook its token's cancel has already
/// taken up runs even if this is dropped meanwhile: the engine hands an
/// ended wait's hooks to a thread of its own, which may run them after
/// the probe call that registered them returned.
#[must_use = "dropping it removes the hook"]
pub struct CancelHook {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for CancelHook {
    fn drop(&mut self) {
        let removed = {
            let mut hooks = self.inner.lock.lock();
            let at = hooks.waiting.iter().position(|(id, _)| *id == self.id);
            at.map(|at| hooks.waiting.swap_remove(at))
        };
        // Dropped outside the lock: the closure's captures may be anything.
        drop(removed);
    }
}

impl CancelToken {
    /// A token that is not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token; every clone sees it. Cancelling twice is harmless.
    /// Every hook runs (on this thread) even if one panics; the first panic
    /// is then passed on to the caller.
    pub fn cancel(&self) {
        let mut host = Vec::new();
        let quick_panic = self.cancel_leaving_host_hooks(&mut host);
        let host_panic = run_hooks(host);
        if let Some(panic) = quick_panic.or(host_panic) {
            resume_unwind(panic);
        }
    }

    /// Cancels the token as [`CancelToken::cancel`] does (its sleepers and
    /// its children's are woken, the engine's quick hooks run here), but
    /// leaves the hooks of [`CancelToken::on_cancel`], its own and its
    /// children's, in `host` for the caller to run elsewhere: host code
    /// may block, and the engine's scheduler must not. Every quick hook
    /// runs even if one panics; the first panic is returned.
    pub(crate) fn cancel_leaving_host_hooks(&self, host: &mut Vec<HookFn>) -> Option<Panic> {
        let hooks = {
            let mut held = self.inner.lock.lock();
            self.inner.cancelled.store(true, Ordering::Release);
            self.inner.changed.notify_all();
            std::mem::take(&mut held.waiting)
        };
        // Run outside the lock, so a hook may use the token.
        let mut first_panic = None;
        for (_, hook) in hooks {
            let panic = match hook {
                Hook::Host(hook) => {
                    host.push(hook);
                    None
                }
                Hook::Quick(hook) => catch_unwind(AssertUnwindSafe(hook)).err(),
                Hook::Child(child) => child
                    .upgrade()
                    .and_then(|inner| CancelToken { inner }.cancel_leaving_host_hooks(host)),
            };
            if let Some(panic) = panic {
                first_panic.get_or_insert(panic);
            }
        }
        first_panic
    }

    /// Cancels the token without waking what waits on it: from now on
    /// [`CancelToken::is_cancelled`] says so, and a sleeper or hook coming
    /// later sees it at once; a sleeper already in
    /// [`CancelToken::wait_timeout`] and the hooks registered hear at the
    /// next [`CancelToken::cancel`], which the caller owes them.
    pub(crate) fn mark_cancelled(&self) {
        self.inner.cancelled.store(true, Ordering::Release);
    }

    /// Runs `hook` once when the token is cancelled, or now (on this
    /// thread) if it already is. For a probe that blocks on something
    /// other than the token, such as a descriptor in `poll(2)`: the hook
    /// wakes it, so a cancel is seen at once without waking up every few
    /// milliseconds to look. Dropping the returned [`CancelHook`] removes
    /// a hook that has not run.
    ///
    /// The hook runs on the thread that cancels: the host's, for
    /// [`WaitControl::cancel`](crate::WaitControl::cancel) or a
    /// [`CancelToken::cancel`] of its own. When the engine ends the wait
    /// (a match, the deadline, an error), it runs on the engine's hook
    /// thread, after the wait's result was handed to delivery; never on
    /// its scheduler or a worker (the call it wakes may hold the last
    /// worker there is). A hook that blocks delays the hooks of waits
    /// ending after it, never a sample, a deadline or a result.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// let token = waitfor::CancelToken::new();
    /// let woken = Arc::new(AtomicBool::new(false));
    /// let hook = token.on_cancel({
    ///     let woken = woken.clone();
    ///     move || woken.store(true, Ordering::SeqCst)
    /// });
    /// token.cancel();
    /// assert!(woken.load(Ordering::SeqCst));
    /// drop(hook);
    /// ```
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> CancelHook {
        self.register(Hook::Host(Box::new(hook)))
    }

    /// [`CancelToken::on_cancel`] for the engine's own hooks, which return
    /// at once (a byte written to a non-blocking socket, another token
    /// cancelled): these run on the cancelling thread even when that is
    /// the scheduler, so a run blocked in `poll(2)` is woken at its wait's
    /// end without waiting for the hook thread.
    pub(crate) fn on_cancel_quick(&self, hook: impl FnOnce() + Send + 'static) -> CancelHook {
        self.register(Hook::Quick(Box::new(hook)))
    }

    /// Registers `hook`, or runs it now if the token is cancelled.
    fn register(&self, hook: Hook) -> CancelHook {
        let mut held = self.inner.lock.lock();
        let id = held.next_id;
        held.next_id += 1;
        if self.is_cancelled() {
            drop(held);
            match hook {
                Hook::Host(hook) | Hook::Quick(hook) => hook(),
                Hook::Child(child) => {
                    if let Some(inner) = child.upgrade() {
                        CancelToken { inner }.cancel();
                    }
                }
            }
        } else {
            held.waiting.push((id, hook));
        }
        CancelHook {
            inner: self.inner.clone(),
            id,
        }
    }

    /// A token cancelled when this one is, whose own [`CancelToken::cancel`]
    /// leaves this one alone: what a probe call gets, so that it sees the
    /// end of its wait but cannot end the wait itself.
    pub(crate) fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        // The child's entry leaves the parent when the child goes.
        let entry = self.register(Hook::Child(Arc::downgrade(&child.inner)));
        let _ = child.inner.parent.set(entry);
        child
    }

    /// Whether [`CancelToken::cancel`] was called on this token or a clone
    /// (or, for a child, on its parent).
    pub fn is_cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// Blocks until the token is cancelled or `timeout` passes; returns
    /// whether it was cancelled. A probe sleeps in this instead of
    /// `thread::sleep`, so a cancelled wait releases it at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let token = waitfor::CancelToken::new();
    /// assert!(!token.wait_timeout(Duration::from_millis(1)));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut held = self.inner.lock.lock();
        while !self.is_cancelled() {
            match deadline {
                Some(deadline) => {
                    if self.inner.changed.wait_until(&mut held, deadline) {
                        return self.is_cancelled();
                    }
                }
                None => self.inner.changed.wait(&mut held),
            }
        }
        true
    }
}

/// A panic caught from a hook.
pub(crate) type Panic = Box<dyn std::any::Any + Send>;

/// Runs `hooks` in order, each even if one before it panics; returns the
/// first panic.
pub(crate) fn run_hooks(hooks: Vec<HookFn>) -> Option<Panic> {
    let mut first_panic = None;
    for hook in hooks {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(hook)) {
            first_panic.get_or_insert(panic);
        }
    }
    first_panic
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
        let runs = Arc::new(AtomicUsize::new(0));
        let hook = {
            let runs = runs.clone();
            move || {
                runs.fetch_add(1, Ordering::SeqCst);
            }
        };
        (runs, hook)
    }

    #[test]
    fn a_hook_runs_once_however_often_the_token_is_cancelled() {
        let token = CancelToken::new();
        let (runs, hook) = counter();
        let _hook = token.on_cancel(hook);
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        token.cancel();
        token.clone().cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_hook_on_a_cancelled_token_runs_at_once() {
        let token = CancelToken::new();
        token.cancel();
        let (runs, hook) = counter();
        let _hook = token.on_cancel(hook);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_dropped_hook_never_runs_and_frees_what_it_held() {
        let token = CancelToken::new();
        let (runs, hook) = counter();
        let kept = Arc::new(());
        let held = kept.clone();
        drop(token.on_cancel(move || {
            let _held = held;
            hook();
        }));
        assert_eq!(Arc::strong_count(&kept), 1);
        token.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_child_sees_its_parent_cancelled_but_does_not_cancel_it() {
        let parent = CancelToken::new();
        let child = parent.child();
        let (runs, hook) = counter();
        let _hook = child.on_cancel(hook);
        child.cancel();
        assert!(!parent.is_cancelled());
        let second = parent.child();
        parent.cancel();
        assert!(second.is_cancelled());
        assert!(second.wait_timeout(Duration::from_secs(60)));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(parent.child().is_cancelled());
    }

    #[test]
    fn a_child_reads_its_marked_parent_cancelled_before_it_is_woken() {
        let parent = CancelToken::new();
        let child = parent.child();
        let (runs, hook) = counter();
        let _hook = child.on_cancel(hook);
        parent.mark_cancelled();
        assert!(child.is_cancelled());
        assert_eq!(runs.load(Ordering::SeqCst), 0, "hooks wait for the cancel");
        parent.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_dropped_child_leaves_no_hook_on_its_parent() {
        let parent = CancelToken::new();
        for _ in 0..3 {
            drop(parent.child());
        }
        assert!(parent.inner.lock.lock().waiting.is_empty());
    }

    #[test]
    fn a_marked_token_reads_cancelled_and_wakes_its_sleepers_at_the_cancel() {
        let token = CancelToken::new();
        let (runs, hook) = counter();
        let _hook = token.on_cancel(hook);
        let sleeper = {
            let token = token.clone();
            std::thread::spawn(move || token.wait_timeout(Duration::from_secs(60)))
        };
        token.mark_cancelled();
        assert!(token.is_cancelled());
        assert_eq!(runs.load(Ordering::SeqCst), 0, "hooks wait for the cancel");
        // Seen at once by what comes after the mark.
        assert!(token.wait_timeout(Duration::from_secs(60)));
        let (late_runs, late_hook) = counter();
        let _late = token.on_cancel(late_hook);
        assert_eq!(late_runs.load(Ordering::SeqCst), 1);
        token.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(sleeper.join().unwrap());
    }

    #[test]
    fn a_panicking_hook_keeps_no_other_from_running_and_is_passed_on() {
        let parent = CancelToken::new();
        let child = parent.child();
        let (runs, hook) = counter();
        let (child_runs, child_hook) = counter();
        let _panics = child.on_cancel(|| panic!("a hook's bug"));
        let _child_hook = child.on_cancel(child_hook);
        let _panics_too = parent.on_cancel(|| panic!("another hook's bug"));
        let _hook = parent.on_cancel(hook);
        let cancel = std::panic::catch_unwind(AssertUnwindSafe(|| parent.cancel()));
        assert!(cancel.is_err(), "the panic is the caller's to hear");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(child_runs.load(Ordering::SeqCst), 1);
        assert!(child.is_cancelled());
    }

    #[test]
    fn a_cancel_leaving_host_hooks_wakes_sleepers_and_runs_only_quick_hooks() {
        let parent = CancelToken::new();
        let child = parent.child();
        let (quick_runs, quick) = counter();
        let (host_runs, host) = counter();
        let (child_runs, child_host) = counter();
        let _quick = child.on_cancel_quick(quick);
        let _host = parent.on_cancel(host);
        let _child_host = child.on_cancel(child_host);
        let sleeper = {
            let child = child.clone();
            std::thread::spawn(move || child.wait_timeout(Duration::from_secs(60)))
        };
        let mut left = Vec::new();
        assert!(parent.cancel_leaving_host_hooks(&mut left).is_none());
        assert_eq!(quick_runs.load(Ordering::SeqCst), 1);
        assert!(sleeper.join().unwrap());
        assert_eq!(host_runs.load(Ordering::SeqCst), 0);
        assert_eq!(child_runs.load(Ordering::SeqCst), 0);
        assert_eq!(left.len(), 2, "the parent's hook and the child's");
        assert!(run_hooks(left).is_none());
        assert_eq!(host_runs.load(Ordering::SeqCst), 1);
        assert_eq!(child_runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_hook_may_use_its_token() {
        let token = CancelToken::new();
        let inner = token.clone();
        let (runs, hook) = counter();
        let _hook = token.on_cancel(move || {
            assert!(inner.wait_timeout(Duration::from_secs(60)));
            hook();
        });
        token.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
