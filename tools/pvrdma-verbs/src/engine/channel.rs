// SPDX-License-Identifier: GPL-2.0-only
//! Completion channels: a queue of CQ events plus an eventfd that is
//! readable exactly while the queue is non-empty.
//!
//! The eventfd is a semaphore (`EFD_SEMAPHORE`) whose counter always equals
//! the queue length: both change together, under the engine lock. The
//! caller only polls the fd; `ibv_get_cq_event` pops the queue and takes one
//! unit off the counter.

use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A completion channel.
pub struct Channel {
    /// The `struct ibv_comp_channel` handed out.
    pub obj: CObj<ffi::ibv_comp_channel>,
    /// Owning context.
    pub ctx: Key,
    fd: OwnedFd,
    events: VecDeque<Key>,
    /// CQs attached (destroying the channel is refused while > 0).
    pub cqs: u32,
}

impl Channel {
    /// The pollable fd.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Queues an event for `cq` and makes the fd readable.
    pub fn signal(&mut self, cq: Key) {
        self.events.push_back(cq);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd. It
        // cannot fail short of the counter reaching u64::MAX - 1.
        unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
    }

    /// Pops the oldest event.
    pub fn take(&mut self) -> Option<Key> {
        let cq = self.events.pop_front()?;
        self.consume_one();
        Some(cq)
    }

    /// Drops `cq`'s queued events (the CQ is being destroyed).
    pub fn discard(&mut self, cq: Key) {
        let before = self.events.len();
        self.events.retain(|&k| k != cq);
        for _ in self.events.len()..before {
            self.consume_one();
        }
    }

    /// Takes one unit off the counter, never blocking (the fd may be in
    /// blocking mode, and a caller that read it itself may have emptied it).
    fn consume_one(&self) {
        let mut pfd = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
        if ready == 1 && pfd.revents & libc::POLLIN != 0 {
            let mut value: u64 = 0;
            // SAFETY: reads 8 bytes into a live u64 from our own eventfd,
            // which is readable, so this does not block.
            unsafe { libc::read(self.fd(), (&mut value as *mut u64).cast(), 8) };
        }
    }
}

impl Engine {
    /// `ibv_create_comp_channel`.
    pub fn create_channel(&mut self, ctx: Key) -> Result<*mut ffi::ibv_comp_channel, i32> {
        let context = self.context(ctx)?.obj.as_ptr();
        // SAFETY: plain syscall; a valid fd is owned below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_SEMAPHORE) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EMFILE));
        }
        // SAFETY: `raw` is a fresh fd nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let obj = CObj::new(ffi::ibv_comp_channel {
            context,
            fd: raw,
            refcnt: 0,
        });
        let ptr = obj.as_ptr();
        self.channels.insert(
            obj.key(),
            Channel {
                obj,
                ctx,
                fd,
                events: VecDeque::new(),
                cqs: 0,
            },
        );
        Ok(ptr)
    }

    /// `ibv_destroy_comp_channel`: EBUSY while CQs use it.
    pub fn destroy_channel(&mut self, ch: Key) -> Result<(), i32> {
        match self.channels.get(&ch) {
            None => Err(libc::EINVAL),
            Some(c) if c.cqs > 0 => Err(libc::EBUSY),
            Some(_) => {
                self.channels.remove(&ch);
                Ok(())
            }
        }
    }

    /// Pops the next event of channel `ch`: `Ok(None)` if there is none.
    /// Counts it as reported on its CQ (to be acknowledged).
    pub fn take_event(
        &mut self,
        ch: Key,
    ) -> Result<Option<(*mut ffi::ibv_cq, *mut libc::c_void)>, i32> {
        let channel = self.channels.get_mut(&ch).ok_or(libc::EINVAL)?;
        let Some(cq) = channel.take() else {
            return Ok(None);
        };
        match self.cqs.get_mut(&cq) {
            Some(c) => {
                c.events_reported = c.events_reported.wrapping_add(1);
                Ok(Some((c.obj.as_ptr(), c.obj.get().cq_context)))
            }
            // Unreachable: a CQ's events are discarded when it is destroyed.
            None => Err(libc::EIO),
        }
    }

    /// The fd of channel `ch`.
    pub fn channel_fd(&self, ch: Key) -> Result<RawFd, i32> {
        self.channels.get(&ch).map(Channel::fd).ok_or(libc::EINVAL)
    }
}
