// SPDX-License-Identifier: GPL-2.0-only
//! Keeping unsolicited MAD deliveries out of QEMU's request/response exchange.
//!
//! QEMU 7.2 (`hw/rdma/rdma_backend.c`) reads the mad chardev in two ways:
//! - `rdmacm_mux_send` (vCPU thread, big lock held): write a request, then
//!   `qemu_chr_fe_read_all` 360 bytes and take them as the RESP, whatever they
//!   are (`rdmacm_mux_check_op_status` logs an error if they are not a RESP).
//! - `rdmacm_mux_read` (main loop, big lock held): every other message, taken
//!   as an incoming MAD unless `msg_type != REQ && op_code != MAD`.
//!
//! Both hold the big lock, so they never overlap. The race: the mux writes an
//! unsolicited MAD, and before the main loop reads it the vCPU sends a request;
//! the synchronous read then takes the MAD as its response, the MAD never
//! reaches the guest, and the mux's real RESP is later read by the main loop as
//! if it were a MAD.
//!
//! The mux cannot stop QEMU from sending, but it can tell what happened from
//! its own send queue (SIOCOUTQ: bytes written and not yet read by QEMU):
//! - Settled: after a delivery, SIOCOUTQ reads 0 and *then* no request bytes
//!   are waiting (SIOCINQ 0). QEMU read the delivery before it sent anything,
//!   so the main loop took it. Nothing of ours is in the way any more.
//! - Taken: a request arrives while SIOCOUTQ is still non-zero. QEMU holds the
//!   big lock from writing its request until its synchronous read returns, so
//!   nothing but that read can consume our pending bytes now: it takes them
//!   as the response. The mux then does not send the RESP (the vCPU no longer
//!   waits for it; it would only be a stray) and delivers the MAD again.
//! - Ambiguous: a request arrives, SIOCOUTQ is 0, but the delivery was never
//!   seen settled. Either reader may have taken it. The mux answers (safe in
//!   both cases: a stray RESP is dropped by QEMU, see
//!   [`OP_CODE_MAD_RESP`](pvrdma_fabric::mux_msg::OP_CODE_MAD_RESP)) and
//!   delivers the MAD again: if the main loop had it, the guest sees a
//!   duplicate, which the CM protocol tolerates (MADs are datagrams that get
//!   retransmitted; Linux's CM resends its last answer or ignores it); if the
//!   vCPU took it, it would otherwise be lost until the CM's retry timeout
//!   (seconds).
//!
//! QEMU reads right after it writes, and waking the mux's thread takes longer,
//! so a real race is usually seen as ambiguous; "taken" needs the vCPU to be
//! delayed between its write and its read. The connection thread is woken the
//! moment QEMU reads a delivery (an edge-triggered EPOLLOUT, see
//! [`Poller`](crate::sock::Poller)) and settles it then, so a false
//! "ambiguous" (no race) needs QEMU's vCPU to send a request within the
//! thread's wake-up latency (tens of microseconds) after the main loop read the
//! delivery. A MAD is redelivered at most [`MAX_REDELIVERIES`] times.

use std::io;
use std::time::{Duration, Instant};

use pvrdma_fabric::mux_msg::MuxMsg;

/// How often one MAD is delivered again after a race before it is given up.
pub const MAX_REDELIVERIES: u32 = 5;

/// A MAD delivery to write to QEMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The REQ/MAD message.
    pub msg: MuxMsg,
    /// 0 for the first write, then one more per redelivery.
    pub attempt: u32,
}

impl Delivery {
    /// A first delivery of `msg`.
    pub fn new(msg: MuxMsg) -> Delivery {
        Delivery { msg, attempt: 0 }
    }

    /// The next attempt, unless the redelivery budget is spent.
    pub fn again(self) -> Option<Delivery> {
        (self.attempt < MAX_REDELIVERIES).then_some(Delivery {
            msg: self.msg,
            attempt: self.attempt + 1,
        })
    }
}

/// Reads the connection's queue lengths.
pub trait Probe {
    /// Bytes we wrote that QEMU has not read (0 or not).
    fn outq(&self) -> io::Result<usize>;
    /// Bytes QEMU wrote that we have not read.
    fn inq(&self) -> io::Result<usize>;
}

/// Something we wrote whose reader we do not know yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsettled {
    /// An unsolicited MAD delivery.
    Delivery(Box<Delivery>),
    /// A RESP written in the ambiguous case: maybe read by a waiting vCPU,
    /// maybe a stray for the main loop.
    Resp,
    /// Pending bytes that QEMU's synchronous reader is known to take.
    TakenByRequest,
}

/// What to do with a request that just arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing of ours is pending: answer it.
    Clear,
    /// QEMU's synchronous reader takes our pending message as its answer: do
    /// not answer; redeliver it if it was a MAD.
    TakenAsResponse(Unsettled),
    /// Our pending message was read by one of the two readers, we cannot tell
    /// which: answer (harmless if stray); redeliver it if it was a MAD.
    Ambiguous(Unsettled),
}

/// Per-connection tracker of what we wrote.
#[derive(Default)]
pub struct RaceGuard {
    pending: Option<Unsettled>,
    since: Option<Instant>,
}

impl RaceGuard {
    /// A guard with nothing pending.
    pub fn new() -> RaceGuard {
        RaceGuard::default()
    }

    /// True when nothing we wrote can still be in QEMU's way.
    pub fn is_settled(&self) -> bool {
        self.pending.is_none()
    }

    /// What is pending, if anything.
    pub fn pending(&self) -> Option<&Unsettled> {
        self.pending.as_ref()
    }

    /// How long the pending item has been pending.
    pub fn pending_for(&self) -> Duration {
        self.since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Records that a delivery was just written.
    pub fn wrote_delivery(&mut self, d: Delivery) {
        self.set(Unsettled::Delivery(Box::new(d)));
    }

    /// Records that a RESP was written in the ambiguous case.
    pub fn wrote_ambiguous_resp(&mut self) {
        self.set(Unsettled::Resp);
    }

    fn set(&mut self, u: Unsettled) {
        self.pending = Some(u);
        self.since = Some(Instant::now());
    }

    /// While idle: settles the pending item if QEMU read it before sending
    /// anything. Returns whether the guard is settled now.
    pub fn try_settle(&mut self, probe: &dyn Probe) -> io::Result<bool> {
        if self.pending.is_none() {
            return Ok(true);
        }
        // Order matters: outq first, then inq. "Consumed at or before the
        // first look, and no request even at the later look" proves the
        // consumption came before any request.
        if probe.outq()? == 0 && probe.inq()? == 0 {
            self.pending = None;
            self.since = None;
            return Ok(true);
        }
        Ok(false)
    }

    /// When a request has arrived (its bytes are waiting): classifies it.
    pub fn on_request(&mut self, probe: &dyn Probe) -> io::Result<Verdict> {
        let Some(pending) = self.pending.take() else {
            return Ok(Verdict::Clear);
        };
        self.since = None;
        let outq = probe.outq()?;
        Ok(match pending {
            // QEMU cannot send a new request before its previous synchronous
            // read returned, so what it took is gone; if bytes are still
            // pending, this peer does not behave like QEMU: answer normally.
            Unsettled::TakenByRequest => Verdict::Clear,
            taken if outq > 0 => {
                self.set(Unsettled::TakenByRequest);
                Verdict::TakenAsResponse(taken)
            }
            read => Verdict::Ambiguous(read),
        })
    }

    /// How long to sleep before looking again while something is pending.
    /// The connection thread is woken when QEMU reads our data (see
    /// [`Poller::add_consumed`](crate::sock::Poller::add_consumed)); this is
    /// the fallback: every millisecond at first, slower if QEMU is busy or
    /// stuck.
    pub fn poll_interval(&self) -> Option<Duration> {
        self.since?;
        Some(if self.pending_for() < Duration::from_secs(1) {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(20)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct FakeProbe {
        outq: Cell<usize>,
        inq: Cell<usize>,
    }

    impl Probe for FakeProbe {
        fn outq(&self) -> io::Result<usize> {
            Ok(self.outq.get())
        }
        fn inq(&self) -> io::Result<usize> {
            Ok(self.inq.get())
        }
    }

    fn probe(outq: usize, inq: usize) -> FakeProbe {
        FakeProbe {
            outq: Cell::new(outq),
            inq: Cell::new(inq),
        }
    }

    #[test]
    fn nothing_pending_is_clear() {
        let mut g = RaceGuard::new();
        assert_eq!(g.on_request(&probe(0, 360)).unwrap(), Verdict::Clear);
        assert!(g.try_settle(&probe(100, 0)).unwrap());
        assert_eq!(g.poll_interval(), None);
    }

    #[test]
    fn delivery_read_before_any_request_settles() {
        let mut g = RaceGuard::new();
        g.wrote_delivery(Delivery::new(MuxMsg::default()));
        assert!(!g.try_settle(&probe(768, 0)).unwrap(), "not read yet");
        assert!(
            !g.try_settle(&probe(0, 360)).unwrap(),
            "request already waiting"
        );
        assert!(g.poll_interval().is_some());
        assert!(g.try_settle(&probe(0, 0)).unwrap());
        assert_eq!(g.on_request(&probe(0, 360)).unwrap(), Verdict::Clear);
    }

    #[test]
    fn request_with_unread_delivery_takes_it() {
        let mut g = RaceGuard::new();
        let m = Delivery::new(MuxMsg::default());
        g.wrote_delivery(m);
        assert_eq!(
            g.on_request(&probe(768, 360)).unwrap(),
            Verdict::TakenAsResponse(Unsettled::Delivery(Box::new(m)))
        );
        assert_eq!(g.pending(), Some(&Unsettled::TakenByRequest));
        // The synchronous read consumes it; then the guard settles.
        assert!(!g.try_settle(&probe(768, 0)).unwrap());
        assert!(g.try_settle(&probe(0, 0)).unwrap());
    }

    #[test]
    fn next_request_after_a_take_is_clear() {
        let mut g = RaceGuard::new();
        g.wrote_delivery(Delivery::new(MuxMsg::default()));
        g.on_request(&probe(768, 360)).unwrap();
        assert_eq!(g.on_request(&probe(0, 360)).unwrap(), Verdict::Clear);
        assert!(g.is_settled());
    }

    #[test]
    fn redeliveries_are_capped() {
        let mut d = Delivery::new(MuxMsg::default());
        for _ in 0..MAX_REDELIVERIES {
            d = d.again().unwrap();
        }
        assert_eq!(d.attempt, MAX_REDELIVERIES);
        assert_eq!(d.again(), None);
    }

    #[test]
    fn consumed_but_unsettled_is_ambiguous() {
        let mut g = RaceGuard::new();
        g.wrote_delivery(Delivery::new(MuxMsg::default()));
        assert!(matches!(
            g.on_request(&probe(0, 360)).unwrap(),
            Verdict::Ambiguous(Unsettled::Delivery(_))
        ));
        g.wrote_ambiguous_resp();
        // The next request while that RESP is unread: QEMU takes the RESP.
        assert_eq!(
            g.on_request(&probe(768, 360)).unwrap(),
            Verdict::TakenAsResponse(Unsettled::Resp)
        );
    }
}
