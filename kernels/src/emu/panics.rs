//! Panics of kernel threads: one report a launch, not one a thread.
//!
//! A kernel body that panics (an index past a Rust array, an overflow, a
//! `trap`) usually does so in every thread that runs it, and the default
//! panic hook would print its message once for each before the launch's
//! error. The emulator installs a hook of its own, once, in front of the
//! one it finds: while an OS thread runs a launch's fibers (the worker
//! marks it, [`in_fibers`]) the hook prints nothing and notes where the
//! panic happened, which the thread's end reads ([`take_site`]) into the
//! launch's [`super::EmuError::Panicked`]; elsewhere it hands the panic to
//! the hook it replaced, so panics outside the emulator print as before.

use super::types::Site;
use std::boxed::Box;
use std::cell::Cell;
use std::string::String;
use std::sync::{Mutex, Once};
use std::vec::Vec;

std::thread_local! {
    /// Whether this OS thread is running a launch's fibers.
    static IN_FIBERS: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic of a fiber of this OS thread happened.
    static SITE: Cell<Option<Site>> = const { Cell::new(None) };
}

/// Installs the emulator's panic hook, the first time only.
pub(super) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_FIBERS.with(Cell::get) {
                let site = info.location().map(|l| Site { file: intern(l.file()), line: l.line(), column: l.column() });
                SITE.with(|s| s.set(site));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` with this OS thread marked as running fibers, as it was before
/// once `f` returns or unwinds.
pub(super) fn in_fibers<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_FIBERS.with(|m| m.set(self.0));
        }
    }
    let _restore = Restore(IN_FIBERS.with(|m| m.replace(true)));
    f()
}

/// Where the last panic of a fiber of this OS thread happened, if the
/// panic said; forgotten once read.
pub(super) fn take_site() -> Option<Site> {
    SITE.with(Cell::take)
}

/// `file` as a `'static` string, kept once per distinct file (a panic's
/// location borrows its file name only for the hook's call).
fn intern(file: &str) -> &'static str {
    static FILES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = files.iter().find(|f| **f == file) {
        return f;
    }
    let f: &'static str = Box::leak(String::from(file).into_boxed_str());
    files.push(f);
    f
}

/// The message a panic's payload carries, if it is text.
pub(super) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        String::from(*s)
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("(non-string panic payload)")
    }
}
