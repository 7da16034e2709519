// SPDX-License-Identifier: GPL-2.0

//! What the driver counts about its work with the device, shown as the port's hardware counters
//! (sysfs `ports/1/hw_counters/`, `rdma statistic`). The C driver keeps none.
//!
//! Layer: device.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::rdma::CounterDesc;

/// One event count.
pub(crate) struct Count(AtomicU64);

impl Count {
    const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Counts one more.
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Declares [`Stats`] with one [`Count`] per name, and [`COUNTERS`], their descriptions in the
/// same order, so that the names and the values cannot drift apart.
macro_rules! stats {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// The driver's counts, in the order of [`COUNTERS`].
        pub(crate) struct Stats {
            $($(#[doc = $doc])* pub(crate) $name: Count,)*
        }

        impl Stats {
            /// All at zero.
            pub(crate) const fn new() -> Self {
                Self { $($name: Count::new(),)* }
            }

            /// Writes the counts into `values`, in the order of [`COUNTERS`].
            pub(crate) fn read(&self, values: &mut [u64]) {
                for (value, count) in values.iter_mut().zip([$(self.$name.get(),)*]) {
                    *value = count;
                }
            }
        }

        /// The names of the counts, as the port's hardware counters.
        pub(crate) const COUNTERS: &[CounterDesc] =
            &[$(CounterDesc::new(kernel::c_str!(stringify!($name))),)*];
    };
}

stats! {
    /// Commands sent to the device.
    commands,
    /// Commands the device refused, failed, or did not answer in time.
    command_errors,
    /// Interrupts handled, all vectors.
    interrupts,
    /// Async events the device reported (port, QP, CQ, SRQ).
    async_events,
    /// CQ notifications the device reported.
    cq_notifications,
    /// Events and notifications about an object that no longer exists (destroyed meanwhile).
    stale_events,
}
