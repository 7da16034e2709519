// SPDX-License-Identifier: GPL-2.0

//! A dead device, and what the driver still owes the device's consumers.
//!
//! A device that stops answering commands, breaks the indexes of one of its rings or reports a
//! completion of work the driver never gave it cannot be trusted with anything any more: it is
//! declared dead ([`Hw::declare_dead`](crate::hw::Hw::declare_dead)). It is reset, so that it
//! stops using the driver's memory, and no command runs any more. The RDMA core's clients get
//! `IB_EVENT_DEVICE_FATAL` (rdma_cm and uverbs pass it on to their users), and tearing down
//! succeeds without the device: a QP moves to ERR or RESET, objects are destroyed.
//!
//! Kernel consumers also wait for the completion of every work request they posted: the MAD layer
//! frees a send only then (rdma_cm's destroy waits for that), and `ib_drain_qp` waits for the
//! completion of its marker. So every work request of a kernel QP, outstanding or posted after
//! the device died, completes with `WR_FLUSH_ERR` when its CQ is polled (`Cq::poll`). A dead
//! device raises no interrupt that would make anyone poll, so the [`Flusher`] calls the kernel
//! CQs' completion handlers while kernel QPs have unflushed work (mlx5 does the same when its
//! device fails).
//!
//! Layer: RDMA device. The device layer starts the flusher without naming it: [`FlushOnDeath`]
//! is the [`OnDeath`] that [`Hw`](crate::hw::Hw) owns.

use crate::{abi::PORT, device::IbDev, hw::OnDeath};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    impl_has_hr_timer, new_spinlock_irq,
    prelude::*,
    rdma::{DeviceHandle, PortEvent},
    sync::{Arc, ArcBorrow, SpinLockIrq},
    time::{
        hrtimer::{
            ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerPointer,
            HrTimerRestart, RelativeMode,
        },
        Delta, Monotonic,
    },
};

/// How often the [`Flusher`] looks for unflushed work.
const FLUSH_PERIOD_MS: i64 = 10;

/// The [`Flusher`] of a device, started when the device is declared dead
/// ([`OnDeath::declared_dead`]); dropped with the device's [`Hw`](crate::hw::Hw), which stops
/// it.
#[pin_data]
pub(crate) struct FlushOnDeath {
    /// The flusher, while it runs: dropping the handle stops the timer.
    #[pin]
    running: SpinLockIrq<Option<ArcHrTimerHandle<Flusher>>>,
    flusher: Arc<Flusher>,
}

impl FlushOnDeath {
    /// What starts the flusher for the RDMA device `events` attaches to.
    pub(crate) fn new(events: Arc<DeviceHandle<IbDev>>) -> Result<Arc<Self>> {
        let flusher = Flusher::new(events)?;
        Arc::pin_init(
            pin_init!(Self {
                running <- new_spinlock_irq!(None, "pvrdma::FlushOnDeath::running"),
                flusher,
            }),
            GFP_KERNEL,
        )
    }
}

impl OnDeath for FlushOnDeath {
    fn declared_dead(&self) {
        let handle = self.flusher.clone().start(Flusher::first_delay());
        *self.running.lock() = Some(handle);
    }
}

/// A timer, started when the device is declared dead and stopped when the driver lets the
/// device go, that reports the fatal event and calls the completion handlers of the kernel CQs
/// while kernel QPs have unflushed work.
///
/// It runs in interrupt context, where the completion handlers may be called, and apart from the
/// paths that found the device dead: those may hold the locks it takes (a consumer may poll a CQ
/// from its completion handler, which the flusher calls).
#[pin_data]
pub(crate) struct Flusher {
    #[pin]
    timer: HrTimer<Self>,
    events: Arc<DeviceHandle<IbDev>>,
    /// Whether the RDMA core was told (the device may not be registered yet when it dies).
    reported: AtomicBool,
}

impl Flusher {
    /// A flusher for the RDMA device `events` attaches to; not started.
    fn new(events: Arc<DeviceHandle<IbDev>>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                timer <- HrTimer::new(),
                events,
                reported: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )
    }

    /// The delay before the first run.
    fn first_delay() -> Delta {
        Delta::from_millis(0)
    }
}

impl HrTimerCallback for Flusher {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, mut ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        this.events.with_device(|dev| {
            if !this.reported.swap(true, Ordering::Relaxed) {
                // Never refused: `PORT` is the device's port, and the event is for every
                // protocol.
                let _ = dev.dispatch_port_event(PORT, PortEvent::DeviceFatal);
            }
            let mut unfinished = false;
            dev.for_each_qp(|qp| unfinished |= qp.has_unfinished(None));
            if unfinished {
                dev.for_each_cq(|cq| {
                    if cq.is_kernel() {
                        cq.complete_unsolicited();
                    }
                });
            }
        });
        ctx.forward_now(Delta::from_millis(FLUSH_PERIOD_MS));
        HrTimerRestart::Restart
    }
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Flusher {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}
