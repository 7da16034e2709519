// SPDX-License-Identifier: GPL-2.0

//! The command channel: one request slot, one response slot, one command at a time.
//!
//! The driver writes a request into the command slot and 0 to `REQUEST`; `ERR` then tells
//! whether the device accepted it, and the response interrupt (vector 0) says the response is in
//! the response slot. Every request carries a sequence number in `hdr.response`, which the
//! device echoes, so a late or stray response is recognised instead of being taken for the
//! current one; for the same reason the response slot is not cleared before a command (what it
//! holds answers an earlier sequence number). The echo is the device's ABI, not a habit of
//! QEMU's: the request header's `response` is the "key for response lookup" and the response
//! header's is "from cmd hdr" (`struct pvrdma_cmd_hdr` and `struct pvrdma_cmd_resp_hdr` of the
//! C driver's `pvrdma_dev_api.h`, VMware's ABI), though the C driver, which waits for the
//! interrupt and has one command in flight, never needs to read it.
//!
//! The response interrupt signals a counting completion, which is never re-initialised (C's
//! `reinit_completion()` races with an interrupt still completing the previous command): the
//! waiter takes signals until the response slot holds the answer to its own sequence number.
//!
//! Only the interrupt says that a response is complete. The device ABI does not say in which
//! order the device writes the slot, and a device that writes it front to back has the header,
//! with this command's sequence number, in place before the body: a look at the slot before the
//! interrupt could take a half-written response for the answer. So the slot is read only after a
//! signal, as the C driver does. With a vector of its own (MSI-X), the response interrupt is on
//! only while a command runs ([`CmdChannel::switch_vector`]): turned on before the request is written,
//! off again when the response is in; interrupts the device raises between commands are not
//! taken. A single vector shared by every cause (MSI, INTx) stays on.
//!
//! The response is read in two steps, its header and then the whole of it after a read barrier:
//! the header's sequence number says the response is this command's, and only after that may the
//! rest be read. The channel's lock is a mutex because a command sleeps for its response; it is
//! held for the whole round trip, one command at a time as the device requires.
//!
//! A slow device is not a dead one. A host that stalls (its own contention, a migration's
//! stun, the host adapter resetting) may answer a command many seconds late, and the answer
//! then comes. A command therefore waits for its answer, saying so in the log after
//! [`CMD_SLOW_MS`] (where the C driver gives up, fails the command and leaves the device to
//! answer into a slot that the next command reuses), for as long as [`CMD_DEAD_MS`]. While it
//! waits, it keeps what the device may still use: the request and response slots, and the
//! memory the request names (rings, page directories, the object a destroy names), which its
//! caller frees only after the command returns. Later commands wait for the channel meanwhile,
//! and run once the answer came. Only a device that stays silent for [`CMD_DEAD_MS`], or that is
//! gone (its registers read as all ones, or it was unbound under the command), is declared dead
//! and reset (`crate::dead`): it then stops using the memory of the command and of every object
//! it holds, and every later command fails at once instead of waiting its own time under the
//! channel's mutex.
//!
//! Layer: device.

use crate::{
    abi::{
        CmdHdr, RespHdr, CMD_REQ_SIZE, CMD_RESP_SIZE, REGS_SIZE, REG_ERR, REG_REQUEST, REG_VERSION,
    },
    mem::{alloc_page, DmaPage, SharedBytes},
};
use core::{
    mem::size_of,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    device::{Bound, Device},
    io::Io,
    irq, new_mutex,
    pci::{DevresBar, ExclusiveIrqHandler},
    prelude::*,
    sync::{
        barrier::{dma_mb, mb, Full, Read},
        Arc, Completion, Mutex,
    },
    time::{msecs_to_jiffies, Instant, Monotonic},
};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// How long a command waits before the driver says in the log that the device is slow (the C
/// driver's timeout: it fails the command then).
const CMD_SLOW_MS: i64 = 10_000;

/// How long a command waits for its answer before the device is declared dead: ten times the C
/// driver's timeout, and below the hung-task detector's default of 120 s for the tasks that wait
/// for the channel meanwhile.
const CMD_DEAD_MS: i64 = 100_000;

/// How often a waiting command checks that the device is still there.
const CMD_CHECK_MS: u32 = 1_000;

/// The most left-over signals a command takes before it starts: each command leaves at most one
/// (its own, if it found its answer without waiting); more come only from a device raising
/// interrupts for nothing, which the wait for a response absorbs anyway.
const MAX_STALE_SIGNALS: usize = 4;

/// The error a command the device refused with `errno` fails with.
///
/// The device names the reason with an errno. Two tell the caller what to change, and pass
/// through: `EINVAL` (an argument the device cannot honour, such as a ring larger than it takes)
/// and `ENOMEM` (its tables are full). Any other value, errno or not, says only that the device
/// failed: `EIO`. (The C driver returns `EFAULT` for every refusal, which user space reads as a
/// bad address of its own.)
fn refusal(errno: u32) -> Error {
    match errno {
        e if e == EINVAL.to_errno().unsigned_abs() => EINVAL,
        e if e == ENOMEM.to_errno().unsigned_abs() => ENOMEM,
        _ => EIO,
    }
}

/// The device's register window.
pub(crate) type Regs = DevresBar<REGS_SIZE>;

/// What the response interrupt signals, shared with its handler (`crate::intr`, which this
/// layer does not name).
///
/// The handler holds this, not the device: the channel, which the device holds, may hold the
/// handler ([`CmdChannel::switch_vector`]).
#[pin_data]
pub(crate) struct ResponseSignal {
    /// Signalled once per response interrupt.
    #[pin]
    done: Completion,
}

impl ResponseSignal {
    /// A signal nobody has given yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                done <- Completion::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Called by the response interrupt.
    pub(crate) fn response_ready(&self) {
        self.done.complete();
    }
}

/// The response interrupt's handler on a vector of its own, which the channel turns on only while
/// a command runs.
///
/// The handler is the interrupt layer's, above this one: the channel knows it only as a vector
/// it switches.
trait ResponseVector: Send {
    /// See [`ExclusiveIrqHandler::enable`].
    fn enable(&mut self);
    /// See [`ExclusiveIrqHandler::disable_nosync`].
    fn disable_nosync(&mut self);
}

impl<T: irq::Handler + Send + 'static> ResponseVector for ExclusiveIrqHandler<T>
where
    ExclusiveIrqHandler<T>: Send,
{
    fn enable(&mut self) {
        ExclusiveIrqHandler::enable(self);
    }

    fn disable_nosync(&mut self) {
        ExclusiveIrqHandler::disable_nosync(self);
    }
}

/// What one command at a time uses.
struct Turn {
    /// The last sequence number used.
    seq: u64,
    /// The response interrupt's handler, when the vector is the responses' alone: off but while
    /// a command runs.
    irq: Option<KBox<dyn ResponseVector>>,
}

/// The command and response slots and what serialises their use.
#[pin_data]
pub(crate) struct CmdChannel {
    req: DmaPage,
    resp: DmaPage,
    /// Held for a whole round trip.
    #[pin]
    turn: Mutex<Turn>,
    /// Signalled by the response interrupt.
    signal: Arc<ResponseSignal>,
    /// Set when a command timed out and the device was reset: no command runs any more.
    dead: AtomicBool,
}

impl CmdChannel {
    /// Allocates a command or response slot (a page) for `dev`.
    pub(crate) fn alloc_slot(dev: &Device<Bound>) -> Result<DmaPage> {
        alloc_page(dev)
    }

    /// A channel over the slots `req` and `resp` (from [`CmdChannel::alloc_slot`]), whose
    /// response interrupt signals `signal`.
    pub(crate) fn new(
        req: DmaPage,
        resp: DmaPage,
        signal: Arc<ResponseSignal>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            req,
            resp,
            turn <- new_mutex!(Turn { seq: 0, irq: None }, "pvrdma::CmdChannel::turn"),
            signal,
            dead: AtomicBool::new(false),
        })
    }

    /// What the response interrupt signals.
    pub(crate) fn signal(&self) -> &Arc<ResponseSignal> {
        &self.signal
    }

    /// Hands the channel the handler of the response interrupt's own vector, requested off
    /// ([`kernel::irq::Flags::NO_AUTOEN`]): from now on a command turns it on only while it runs.
    /// Fails (dropping, so freeing, the handler) only if the channel cannot allocate its hold
    /// on it.
    pub(crate) fn switch_vector<T: irq::Handler + Send + 'static>(
        &self,
        irq: ExclusiveIrqHandler<T>,
    ) -> Result
    where
        ExclusiveIrqHandler<T>: Send,
    {
        let irq: KBox<dyn ResponseVector> = KBox::new(irq, GFP_KERNEL)?;
        self.turn.lock().irq = Some(irq);
        Ok(())
    }

    /// Stops the channel for good (the device was declared dead): later commands fail at once,
    /// and one waiting for its response fails now.
    pub(crate) fn stop(&self) {
        self.dead.store(true, Ordering::Relaxed);
        self.signal.done.complete();
    }

    /// Runs command `code` with the request `body` (whose `hdr` is filled in here) and returns
    /// the response, after checking that it answers this request with `resp_code` and no error.
    pub(crate) fn run<C, R>(
        &self,
        dev: &Device,
        regs: &Regs,
        (code, resp_code): (u32, u32),
        body: &C,
    ) -> Result<R>
    where
        C: IntoBytes + Immutable,
        R: FromBytes + IntoBytes,
    {
        const {
            assert!(size_of::<C>() >= size_of::<CmdHdr>() && size_of::<C>() <= CMD_REQ_SIZE);
            assert!(size_of::<R>() >= size_of::<RespHdr>() && size_of::<R>() <= CMD_RESP_SIZE);
        };
        let mut turn = self.turn.lock();
        if self.dead.load(Ordering::Relaxed) {
            return Err(ENODEV);
        }
        for _ in 0..MAX_STALE_SIGNALS {
            if !self.signal.done.try_wait_for_completion() {
                break;
            }
        }
        turn.seq = turn.seq.wrapping_add(1);
        let seq = turn.seq;
        let hdr = CmdHdr {
            response: seq,
            cmd: code,
            reserved: 0,
        };
        // The request goes to the slot in one copy: the body with its header filled in, zeros
        // after it (no bytes of a longer earlier request left for the device to read).
        let mut req = [0u8; CMD_REQ_SIZE];
        req[..size_of::<C>()].copy_from_slice(body.as_bytes());
        req[..size_of::<CmdHdr>()].copy_from_slice(hdr.as_bytes());
        self.req.write_at(0, &req)?;

        if let Some(irq) = &mut turn.irq {
            // On before the request is written: its interrupt is the response's only proof.
            irq.enable();
        }
        let answer = self
            .request(dev, regs, code)
            .and_then(|()| self.wait_response(dev, regs, seq, code));
        if let Some(irq) = &mut turn.irq {
            // Off again whatever happened: interrupts between commands are not taken.
            irq.disable_nosync();
        }
        let rhdr = answer.inspect_err(|e| {
            if *e == ETIMEDOUT || *e == ENODEV {
                // Stopped under the channel's mutex, so that no command starts before the
                // caller declares the device dead and resets it (`Hw::command`).
                self.dead.store(true, Ordering::Relaxed);
            }
        })?;
        if rhdr.ack != resp_code {
            dev_warn!(
                dev,
                "command {}: unexpected response {:#x} (expected {:#x})\n",
                code,
                rhdr.ack,
                resp_code
            );
            return Err(EIO);
        }
        if rhdr.err != 0 {
            dev_warn!(
                dev,
                "command {} failed in the device (error {})\n",
                code,
                rhdr.err
            );
            return Err(refusal(rhdr.err.into()));
        }
        self.resp.read_at(0)
    }

    /// Tells the device to run the request in the command slot, and returns its verdict (`ERR`).
    fn request(&self, dev: &Device, regs: &Regs, code: u32) -> Result {
        // The register access runs under the BAR's RCU read lock: no sleeping until it ends.
        let err = {
            let bar = regs.try_access().ok_or(ENXIO)?;
            bar.write32(0, REG_REQUEST);
            // The request must reach the device before its verdict is read.
            mb(Full);
            bar.read32(REG_ERR)
        };
        if err == 0 {
            return Ok(());
        }
        if !Self::present(regs) {
            dev_err!(dev, "command {}: the device is gone\n", code);
            return Err(ENODEV);
        }
        // ERR holds the negated errno (or 0xffff for a request it could not parse).
        let errno = (err as i32).unsigned_abs();
        dev_warn!(
            dev,
            "command {} refused by the device (error {})\n",
            code,
            errno
        );
        Err(refusal(errno))
    }

    /// Whether the device is still there: bound, and its version register not all ones (what a
    /// read of a function that is gone from the bus returns).
    fn present(regs: &Regs) -> bool {
        regs.try_access()
            .is_some_and(|bar| bar.read32(REG_VERSION) != u32::MAX)
    }

    /// Waits until a response interrupt comes with the answer to sequence number `seq` in the
    /// response slot, and returns the answer's header. Fails with `ETIMEDOUT` if none came within
    /// [`CMD_DEAD_MS`], with `ENODEV` if the device went away or the channel was stopped. Signals
    /// that come with another command's answer in the slot (a device raising interrupts for
    /// nothing, or a signal left over from an earlier command) are consumed on the way.
    fn wait_response(&self, dev: &Device, regs: &Regs, seq: u64, code: u32) -> Result<RespHdr> {
        let started = Instant::<Monotonic>::now();
        let mut slow = false;
        loop {
            match self
                .signal
                .done
                .wait_for_completion_timeout(msecs_to_jiffies(CMD_CHECK_MS))
            {
                Ok(_) => {
                    // A response is complete; its header says whose it is, and the rest is read
                    // after it.
                    dma_mb(Read);
                    let rhdr: RespHdr = self.resp.read_at(0)?;
                    if rhdr.response == seq {
                        dma_mb(Read);
                        if slow {
                            dev_info!(
                                dev,
                                "command {}: answered after {} ms\n",
                                code,
                                started.elapsed().as_millis()
                            );
                        }
                        return Ok(rhdr);
                    }
                    pr_debug!(
                        "command {}: stale response (seq {}, waiting for {})\n",
                        code,
                        rhdr.response,
                        seq
                    );
                }
                Err(_) => {
                    if !Self::present(regs) {
                        dev_err!(dev, "command {}: the device is gone\n", code);
                        return Err(ENODEV);
                    }
                    let waited = started.elapsed().as_millis();
                    if waited >= CMD_DEAD_MS {
                        dev_err!(
                            dev,
                            "command {}: no response from the device in {} s\n",
                            code,
                            waited / 1000
                        );
                        return Err(ETIMEDOUT);
                    }
                    if !slow && waited >= CMD_SLOW_MS {
                        slow = true;
                        dev_warn!(
                            dev,
                            "command {}: no response yet after {} s; waiting up to {} s\n",
                            code,
                            waited / 1000,
                            CMD_DEAD_MS / 1000
                        );
                    }
                }
            }
            if self.dead.load(Ordering::Relaxed) {
                // Stopped by `stop`: the device will not answer.
                return Err(ENODEV);
            }
        }
    }
}
