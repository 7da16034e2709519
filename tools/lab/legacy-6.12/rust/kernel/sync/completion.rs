// SPDX-License-Identifier: GPL-2.0

//! Completions: one side waits, with a timeout, until the other side says "done".
//!
//! C header: [`include/linux/completion.h`](srctree/include/linux/completion.h)

use crate::{
    bindings, error::Error, prelude::*, str::CStr, sync::LockClassKey, time::Jiffies, types::Opaque,
};

/// Creates a [`Completion`] initialiser with a lock class key and a name derived from the call
/// site.
#[macro_export]
macro_rules! new_completion {
    ($($name:literal)?) => {
        $crate::sync::Completion::new(
            $crate::optional_name!($($name)?),
            $crate::static_lock_class!(),
        )
    };
}
pub use new_completion;

/// A C `struct completion`.
///
/// A waiter blocks in [`Completion::wait_timeout`] until another context (often an interrupt
/// handler) calls [`Completion::complete`], or until the timeout expires.
///
/// # Invariants
///
/// `inner` is an initialised `struct completion` (its wait queue head is initialised), and it is
/// pinned: it never moves while waiters may be queued on it.
///
/// # Examples
///
/// ```
/// use kernel::{new_completion, prelude::*};
///
/// let done = KBox::pin_init(new_completion!(), GFP_KERNEL)?;
/// // Nobody said "done" yet: a wait of one jiffy times out.
/// assert_eq!(done.wait_timeout(1), Err(ETIMEDOUT));
/// done.complete();
/// assert!(done.wait_timeout(1).is_ok());
/// // Consumed by the wait; and `reinit` starts a new round anyway.
/// done.complete();
/// done.reinit();
/// assert_eq!(done.wait_timeout(1), Err(ETIMEDOUT));
/// # Ok::<(), Error>(())
/// ```
#[pin_data]
pub struct Completion {
    #[pin]
    inner: Opaque<bindings::completion>,
}

// SAFETY: A `struct completion` is designed to be completed and waited on from any thread; all of
// its state is protected by its wait queue's spinlock.
unsafe impl Send for Completion {}
// SAFETY: See `Send`: every operation goes through the C functions, which lock internally.
unsafe impl Sync for Completion {}

impl Completion {
    /// Returns an initialiser of a completion that is not done.
    ///
    /// Use [`new_completion!`] to get a name and lock class key for free.
    pub fn new(name: &'static CStr, key: &'static LockClassKey) -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- Opaque::ffi_init(|slot: *mut bindings::completion| {
                // SAFETY: `slot` is valid for writes, pinned, and `name`/`key` are `'static`, as
                // `__init_swait_queue_head` requires.
                unsafe {
                    core::ptr::addr_of_mut!((*slot).done).write(0);
                    bindings::__init_swait_queue_head(
                        core::ptr::addr_of_mut!((*slot).wait),
                        name.as_char_ptr(),
                        key.as_ptr(),
                    );
                }
            }),
        })
    }

    fn as_ptr(&self) -> *mut bindings::completion {
        self.inner.get()
    }

    /// Marks the completion done, waking one waiter. May be called from interrupt context.
    pub fn complete(&self) {
        // SAFETY: By the type invariant `self.inner` is an initialised completion.
        unsafe { bindings::complete(self.as_ptr()) };
    }

    /// Marks the completion not done, before starting a new request/response round trip.
    ///
    /// The caller must ensure, as with C's `reinit_completion()`, that nobody completes the
    /// previous round concurrently; a late `complete()` is harmless for memory safety (the next
    /// wait just returns early), but it is a logic error the caller must detect.
    pub fn reinit(&self) {
        // SAFETY: By the type invariant `self.inner` is an initialised completion.
        unsafe { bindings::reinit_completion(self.as_ptr()) };
    }

    /// Waits until the completion is done or `timeout` jiffies passed, uninterruptibly.
    ///
    /// Returns the jiffies left on success, or `ETIMEDOUT`.
    pub fn wait_timeout(&self, timeout: Jiffies) -> Result<Jiffies> {
        // SAFETY: By the type invariant `self.inner` is an initialised completion. Sleeping is
        // allowed here: the function may only be called from process context, which
        // `might_sleep()` inside the C function checks.
        let left = unsafe { bindings::wait_for_completion_timeout(self.as_ptr(), timeout) };
        if left == 0 {
            return Err(crate::error::code::ETIMEDOUT);
        }
        Ok(left)
    }

    /// Waits until the completion is done, `timeout` jiffies passed, or a signal arrives.
    ///
    /// Returns the jiffies left on success, `ETIMEDOUT`, or `ERESTARTSYS`.
    pub fn wait_interruptible_timeout(&self, timeout: Jiffies) -> Result<Jiffies> {
        // SAFETY: As in `wait_timeout`.
        let left =
            unsafe { bindings::wait_for_completion_interruptible_timeout(self.as_ptr(), timeout) };
        match left {
            0 => Err(crate::error::code::ETIMEDOUT),
            n if n < 0 => Err(Error::from_errno(n as crate::ffi::c_int)),
            n => Ok(n as Jiffies),
        }
    }
}
