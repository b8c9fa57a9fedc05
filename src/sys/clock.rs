//! A clock for "since when" that outlives a process but never jumps: the
//! time since the machine booted, sleep included (Linux `CLOCK_BOOTTIME`;
//! macOS's `CLOCK_MONOTONIC` goes on while asleep too). The wall clock
//! moves when it is set or corrected, and a mark made after it was set
//! back would pass for one made before; this one orders marks as they
//! were made, and their waits as they were waited, whatever the wall
//! clock does. Good for as long as the machine runs, as the tmux server
//! whose options keep it.

/// Seconds since boot, to the millisecond.
pub fn boot_secs() -> f64 {
    #[cfg(target_os = "linux")]
    let clock = libc::CLOCK_BOOTTIME;
    #[cfg(not(target_os = "linux"))]
    let clock = libc::CLOCK_MONOTONIC;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, owned here.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0.0;
    }
    let s = ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9;
    (s * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    #[test]
    fn goes_forward() {
        let a = super::boot_secs();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = super::boot_secs();
        assert!(a > 0.0 && b >= a + 0.015, "{a} {b}");
    }
}
