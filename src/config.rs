//! Turns what was typed into a validated request: durations, the timeout
//! ceiling, compiled patterns, channel names. No work starts on bad input.

use crate::error::{Error, Result};
use std::time::Duration;

/// The environment variable that caps every timeout (clamps, never rejects).
pub const MAX_SECONDS_ENV: &str = "TMUX_WAIT_MAX_SECONDS";

/// Longest duration accepted anywhere: about 31 years, far past any wait,
/// small enough that `Instant + d` cannot overflow.
const MAX_DURATION_SECS: f64 = 1.0e9;

/// Parse `2.5`, `500ms`, `10s`, `2m`, `1h`. Zero, negative, NaN and
/// infinite values are errors; so is anything above about 31 years.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let bad = || {
        format!(
            "'{}' is not a duration (try 2.5, 500ms, 2m or 1h)",
            s.escape_debug()
        )
    };
    if num.is_empty()
        || !num.bytes().all(|b| {
            b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'+' || b == b'e' || b == b'E'
        })
    {
        return Err(bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    let secs = v * scale;
    if !secs.is_finite() {
        return Err(format!("'{}' is not a finite duration", s.escape_debug()));
    }
    if secs <= 0.0 {
        return Err(format!("'{}' must be greater than zero", s.escape_debug()));
    }
    if secs > MAX_DURATION_SECS {
        return Err(format!(
            "'{}' is too long (at most {MAX_DURATION_SECS:e} s)",
            s.escape_debug()
        ));
    }
    let d = Duration::from_secs_f64(secs);
    if d.is_zero() {
        // Positive, but below a nanosecond: it would be a zero timeout.
        return Err(format!(
            "'{}' is shorter than a nanosecond",
            s.escape_debug()
        ));
    }
    Ok(d)
}

/// The ceiling from the environment, if set.
pub fn ceiling_from_env() -> Result<Option<Duration>> {
    match std::env::var_os(MAX_SECONDS_ENV) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => {
            let s = v.to_string_lossy();
            parse_duration(&s)
                .map(Some)
                .map_err(|e| Error::usage(format!("{MAX_SECONDS_ENV}: {e}")))
        }
    }
}

/// The ceiling from the environment, with how to name it in a notice
/// (`TMUX_WAIT_MAX_SECONDS=10m`).
pub fn ceiling_limit() -> Result<Option<Limit>> {
    Ok(ceiling_from_env()?.map(|d| Limit {
        max: d,
        name: format!(
            "{MAX_SECONDS_ENV}={}",
            std::env::var(MAX_SECONDS_ENV)
                .unwrap_or_default()
                .trim()
                .escape_debug()
        ),
    }))
}

/// A bound on a timeout and how a notice names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub max: Duration,
    /// "TMUX_WAIT_MAX_SECONDS=10", "output's ceiling of 1500s".
    pub name: String,
}

/// A duration for people: `1500s`, `0.5s`, `2.25s`.
pub fn show_secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}s")
}

/// The timeout enforced (the request, cut to the lowest limit) and, when a
/// limit cut it, the one line that says so: `shown` is the value as given,
/// `explicit` whether it was given (else it is the default).
pub fn clamp_timeout(
    requested: Duration,
    shown: &str,
    explicit: bool,
    limits: &[Limit],
) -> (Duration, Option<String>) {
    let mut timeout = requested;
    let mut by = None;
    for l in limits {
        if l.max < timeout {
            timeout = l.max;
            by = Some(&l.name);
        }
    }
    let note = by.map(|name| {
        let what = if explicit {
            format!("--timeout {}", shown.trim())
        } else {
            format!("the default --timeout of {}", show_secs(requested))
        };
        format!(
            "tmux-wait: {what} is more than {name}; waiting {}",
            show_secs(timeout)
        )
    });
    (timeout, note)
}

/// The timeout actually enforced: the request, clamped by the ceiling.
pub fn effective_timeout(requested: Duration, ceiling: Option<Duration>) -> Duration {
    match ceiling {
        Some(c) if c < requested => c,
        _ => requested,
    }
}

/// Channel names as libtmux-mcp accepts them: `^[A-Za-z0-9_.:-]{1,128}$`.
pub fn validate_channel(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        let shown: String = name.chars().take(40).collect();
        Err(Error::new(
            crate::error::Kind::InvalidChannel,
            format!(
                "invalid channel name '{}': use 1 to 128 of A-Z a-z 0-9 _ . : -",
                shown.escape_debug()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {

    /// Found by `cargo fuzz run duration`: positive, finite, and yet a
    /// zero `Duration`.
    #[test]
    fn fuzz_regression_tiny_positive_is_not_zero() {
        assert!(parse_duration("5e-55").is_err());
        assert!(parse_duration("1e-10s").is_err());
        assert_eq!(parse_duration("1e-9").unwrap(), Duration::from_nanos(1));
    }
    use super::*;

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 1 "), Ok(Duration::from_secs(1)));
    }

    #[test]
    fn bad_durations_are_rejected() {
        for s in [
            "0", "-1", "0ms", "nan", "NaN", "inf", "-inf", "infinity", "", "ms", "1x", "1e400",
            "1e12", "1 h", "0x10", "1;2", "--1",
        ] {
            assert!(parse_duration(s).is_err(), "{s:?} accepted");
        }
        assert!(
            parse_duration("nan")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(parse_duration("1e400").unwrap_err().contains("finite"));
        assert!(
            parse_duration("-1")
                .unwrap_err()
                .contains("greater than zero")
        );
    }

    #[test]
    fn random_durations_never_panic() {
        let alphabet = [
            "1", "0", ".", "e", "E", "-", "+", "ms", "s", "m", "h", " ", "9", "nan", "x",
        ];
        let mut rng = crate::testutil::XorShift(0x853c_49e6_748f_ea9b);
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..rng.below(8) {
                s.push_str(alphabet[rng.below(alphabet.len())]);
            }
            if let Ok(d) = parse_duration(&s) {
                assert!(
                    d > Duration::ZERO && d.as_secs_f64() <= MAX_DURATION_SECS,
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn ceiling_clamps() {
        let c = Some(Duration::from_secs(5));
        assert_eq!(
            effective_timeout(Duration::from_secs(8), c),
            Duration::from_secs(5)
        );
        assert_eq!(
            effective_timeout(Duration::from_secs(2), c),
            Duration::from_secs(2)
        );
        assert_eq!(
            effective_timeout(Duration::from_secs(8), None),
            Duration::from_secs(8)
        );
    }

    #[test]
    fn clamps_say_so() {
        let env = Limit {
            max: Duration::from_secs(10),
            name: "TMUX_WAIT_MAX_SECONDS=10".into(),
        };
        let cap = Limit {
            max: Duration::from_secs(1500),
            name: "output's ceiling of 1500s".into(),
        };
        let two_h = Duration::from_secs(7200);
        assert_eq!(
            clamp_timeout(two_h, "2h", true, std::slice::from_ref(&cap)),
            (
                Duration::from_secs(1500),
                Some(
                    "tmux-wait: --timeout 2h is more than output's ceiling of 1500s; waiting 1500s"
                        .into()
                )
            )
        );
        let (t, note) = clamp_timeout(two_h, "2h", true, &[env.clone(), cap.clone()]);
        assert_eq!(t, Duration::from_secs(10));
        assert!(
            note.unwrap()
                .contains("TMUX_WAIT_MAX_SECONDS=10; waiting 10s")
        );
        let (t, note) = clamp_timeout(Duration::from_secs(30), "30", false, &[env]);
        assert_eq!(t, Duration::from_secs(10));
        assert_eq!(
            note.unwrap(),
            "tmux-wait: the default --timeout of 30s is more than TMUX_WAIT_MAX_SECONDS=10; waiting 10s"
        );
        assert_eq!(
            clamp_timeout(Duration::from_secs(5), "5", true, &[cap]),
            (Duration::from_secs(5), None)
        );
        assert_eq!(show_secs(Duration::from_millis(500)), "0.5s");
        assert_eq!(show_secs(Duration::from_millis(2250)), "2.25s");
        assert_eq!(show_secs(Duration::from_secs(1500)), "1500s");
    }

    #[test]
    fn channel_names() {
        assert!(validate_channel("build.done:1-a_b").is_ok());
        assert!(validate_channel(&"a".repeat(128)).is_ok());
        for bad in [
            "",
            "a b",
            "a;b",
            "$(x)",
            "#{x}",
            "a'b",
            "a\nb",
            &"a".repeat(129),
            "é",
        ] {
            assert!(validate_channel(bad).is_err(), "{bad:?}");
        }
    }
}
