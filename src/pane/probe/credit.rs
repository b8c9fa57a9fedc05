//! What a process wrote that the stream has not shown yet (see
//! `ReaderProbe`): a credit the stream pays back, which expires.

use super::CREDIT_LIFE;
use std::time::Instant;

/// Bytes written that the stream has not shown yet.
#[derive(Debug, Default)]
pub(super) struct Credit {
    pub(super) bytes: u64,
    since: Option<Instant>,
}

impl Credit {
    pub(super) fn add(&mut self, n: u64, now: Instant) {
        if n > 0 {
            self.bytes += n;
            self.since.get_or_insert(now);
        }
    }

    pub(super) fn expire(&mut self, now: Instant) {
        if self.since.is_some_and(|t| now - t > CREDIT_LIFE) {
            *self = Credit::default();
        }
    }

    /// Pay `n` bytes of the stream back; how many the credit covered.
    pub(super) fn pay(&mut self, n: u64) -> u64 {
        let covered = self.bytes.min(n);
        self.bytes -= covered;
        if self.bytes == 0 {
            self.since = None;
        }
        covered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn credit_pays_back_and_expires() {
        let t0 = Instant::now();
        let mut c = Credit::default();
        c.add(10, t0);
        assert_eq!(c.pay(4), 4);
        assert_eq!(c.pay(10), 6);
        assert_eq!(c.pay(1), 0);
        c.add(5, t0);
        c.expire(t0 + CREDIT_LIFE + Duration::from_millis(1));
        assert_eq!(c.pay(5), 0);
    }
}
