//! The engine this module runs waits on: one per process, fork-aware.
//!
//! `waitfor::Engine::global()` lives as long as the process, but a forked
//! child inherits only the thread that called `fork()`: the parent's
//! scheduler thread is not there, and a wait started on it would never
//! end. So the module keeps its own engine together with the pid that
//! started it, and a process whose pid differs starts a fresh one. The
//! parent's engine is left alone in the child (its threads are gone; it is
//! never touched again).

use crate::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use waitfor::Engine;

static ENGINE: AtomicPtr<Engine> = AtomicPtr::new(std::ptr::null_mut());
static OWNER: AtomicU32 = AtomicU32::new(0);
static STARTING: Mutex<()> = Mutex::new(());

/// This process's engine, started on first use and again after a fork.
pub fn engine() -> &'static Engine {
    let pid = std::process::id();
    let current = ENGINE.load(Ordering::Acquire);
    if !current.is_null() && OWNER.load(Ordering::Acquire) == pid {
        // SAFETY: engines are leaked, never freed.
        return unsafe { &*current };
    }
    // Held only while an engine starts: a fork at that very moment is the
    // one case this does not cover.
    let _starting = STARTING.lock();
    let current = ENGINE.load(Ordering::Acquire);
    if !current.is_null() && OWNER.load(Ordering::Acquire) == pid {
        // SAFETY: as above.
        return unsafe { &*current };
    }
    let fresh: &'static Engine = Box::leak(Box::new(Engine::new()));
    ENGINE.store(fresh as *const Engine as *mut Engine, Ordering::Release);
    OWNER.store(pid, Ordering::Release);
    fresh
}
