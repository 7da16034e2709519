// SPDX-License-Identifier: GPL-2.0-only
//! Transport retry timeouts.
//!
//! An RC request nobody answers (no such QP, not connected back, GID not
//! reachable) fails on hardware only after the requester has waited for an
//! ACK `retry_cnt + 1` times, each wait the QP's local ACK timeout
//! (4.096 µs × 2^`timeout`). The engine keeps such a send at the head of
//! its send queue with a deadline ([`retry_wait`] from now) and completes it
//! with `IBV_WC_RETRY_EXC_ERR` when the deadline has passed.
//!
//! A small timer thread makes that happen without another verb call: it
//! sleeps, holding only its own lock, until the earliest deadline, then
//! runs the engine's progress (which fails whatever sends are due). Lock
//! order: the engine lock may be held while scheduling (timer lock inside
//! it); the timer thread never holds its lock while taking the engine's.
//! A deadline whose send is gone (QP destroyed, flushed, or the peer
//! answered in time) only causes a progress pass that finds nothing to do.

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The per-try wait when the QP's `timeout` attribute is 0: the spec's
/// "infinite", capped.
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_millis(500);
/// The longest a send waits before its retries count as exhausted.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(4);

/// How long an unanswered request retries: the local ACK timeout
/// (4.096 µs × 2^`timeout`, [`DEFAULT_ACK_TIMEOUT`] for 0) times
/// `retry_cnt + 1`, at most [`MAX_RETRY_WAIT`].
pub fn retry_wait(timeout: u8, retry_cnt: u8) -> Duration {
    let per_try = match timeout {
        0 => DEFAULT_ACK_TIMEOUT,
        // modify_qp accepts 1..=31; 4096 << 31 ns still fits a u64.
        t => Duration::from_nanos(4096u64 << t.min(31)),
    };
    per_try
        .saturating_mul(u32::from(retry_cnt.min(7)) + 1)
        .min(MAX_RETRY_WAIT)
}

/// Pending deadlines and the condition variable the timer thread sleeps on.
struct Timer {
    deadlines: Mutex<BTreeSet<Instant>>,
    changed: Condvar,
}

/// The timer, its thread started on first use; `None` if the thread could
/// not be started (deadlines are then only noticed by later verb calls).
fn timer() -> Option<&'static Timer> {
    static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
    *TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            deadlines: Mutex::new(BTreeSet::new()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("pvrdma-retry".into())
            .spawn(move || run(t))
            .ok()
            .map(|_| t)
    })
}

/// Asks for an engine progress pass at (or just after) `at`.
pub fn schedule(at: Instant) {
    let Some(t) = timer() else {
        return;
    };
    let mut d = t.deadlines.lock().unwrap_or_else(|e| e.into_inner());
    let earlier = d.first().is_none_or(|first| at < *first);
    d.insert(at);
    if earlier {
        t.changed.notify_one();
    }
}

/// The timer thread: sleeps until the earliest deadline, then runs the
/// engine's progress with only the engine lock held.
fn run(t: &'static Timer) {
    let mut d = t.deadlines.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        d = match d.first().copied() {
            None => t.changed.wait(d).unwrap_or_else(|e| e.into_inner()),
            Some(at) if at > now => {
                let r = t.changed.wait_timeout(d, at - now);
                r.unwrap_or_else(|e| e.into_inner()).0
            }
            Some(_) => {
                while d.first().is_some_and(|first| *first <= now) {
                    d.pop_first();
                }
                drop(d);
                super::lock().progress();
                t.deadlines.lock().unwrap_or_else(|e| e.into_inner())
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_follows_timeout_and_retries() {
        // ibv_rc_pingpong's timeout 14, retry_cnt 7: 8 × 67.1 ms.
        assert_eq!(retry_wait(14, 7), Duration::from_nanos(8 * (4096 << 14)));
        assert_eq!(retry_wait(1, 0), Duration::from_nanos(8192));
        assert_eq!(retry_wait(0, 0), DEFAULT_ACK_TIMEOUT);
        assert_eq!(retry_wait(0, 7), MAX_RETRY_WAIT);
        assert_eq!(retry_wait(31, 7), MAX_RETRY_WAIT);
    }
}
