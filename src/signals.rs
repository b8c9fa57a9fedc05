//! SIGINT, SIGTERM and SIGHUP become events, so a wait can clean up (end its
//! tmux clients, reap children) and then exit with 128 + the signal number.
//!
//! One thread owns the signal iterator for the whole process; the current
//! wait registers where events should go. A signal that arrives before any
//! wait has registered is kept and delivered on registration.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// Where a signal goes: the current wait's wake-up.
type Route = Box<dyn Fn(i32) + Send>;

static PENDING: AtomicI32 = AtomicI32::new(0);
static ROUTE: Mutex<Option<Route>> = Mutex::new(None);

/// Start handling the signals. Call once, early in `main`.
pub fn install() -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                PENDING.store(sig, Ordering::SeqCst);
                if let Ok(route) = ROUTE.lock()
                    && let Some(deliver) = route.as_ref()
                {
                    deliver(sig);
                }
            }
        })?;
    Ok(())
}

/// Deliver signals to `deliver` from now on (and one that already
/// arrived).
pub fn route_to(deliver: impl Fn(i32) + Send + 'static) {
    if let Ok(mut route) = ROUTE.lock() {
        let sig = PENDING.load(Ordering::SeqCst);
        if sig != 0 {
            deliver(sig);
        }
        *route = Some(Box::new(deliver));
    }
}

/// The signal that arrived, if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
