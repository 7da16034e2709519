// SPDX-License-Identifier: GPL-2.0

//! A spinlock that also disables local interrupts while held.
//!
//! C header: [`include/linux/spinlock.h`](srctree/include/linux/spinlock.h)
//!
//! Data shared with an interrupt handler (or with code that may run in one, such as the RDMA
//! core's completion callbacks) must be locked with interrupts off, or the handler could spin
//! forever on a lock held by the code it interrupted.

use crate::bindings;
use crate::ffi::c_ulong;

/// Creates a [`SpinLockIrq`] initialiser with the given name and a newly-created lock class.
#[macro_export]
macro_rules! new_spinlock_irq {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::sync::SpinLockIrq::new(
            $inner, $crate::optional_name!($($name)?), $crate::static_lock_class!())
    };
}
pub use new_spinlock_irq;

/// A spinlock taken with `spin_lock_irqsave()` and released with `spin_unlock_irqrestore()`.
///
/// It may be used from any context, interrupt handlers included.
///
/// # Examples
///
/// ```
/// use kernel::sync::{new_spinlock_irq, SpinLockIrq};
///
/// let lock = KBox::pin_init(new_spinlock_irq!(5u32), GFP_KERNEL)?;
/// *lock.lock() += 1;
/// assert_eq!(*lock.lock(), 6);
/// # Ok::<(), Error>(())
/// ```
pub type SpinLockIrq<T> = super::lock::Lock<T, SpinLockIrqBackend>;

/// The backend of [`SpinLockIrq`]: the guard keeps the saved interrupt flags.
pub struct SpinLockIrqBackend;

// SAFETY: `spin_lock_irqsave` and `spin_unlock_irqrestore` give mutual exclusion, and `unlock`
// restores the flags the matching `lock` saved.
unsafe impl super::lock::Backend for SpinLockIrqBackend {
    type State = bindings::spinlock_t;
    type GuardState = c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The caller guarantees `ptr` is valid for writes and `name`/`key` live forever.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller guarantees `ptr` is an initialised lock.
        unsafe { bindings::spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock, which `lock` took, saving `guard_state`.
        unsafe { bindings::spin_unlock_irqrestore(ptr, *guard_state) }
    }
}
