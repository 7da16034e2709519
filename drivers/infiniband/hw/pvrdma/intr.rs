// SPDX-License-Identifier: GPL-2.0

//! Interrupt handlers: command responses, async events, CQ notifications.
//!
//! Layer: interrupts, which wire the device (`hw`, `cmd`) to the RDMA device (`device`); only
//! the crate root imports this.

use crate::{
    abi::event_verbs,
    abi::{event, Eqe, INTR_CAUSE_RESPONSE, PORT, REG_ICR},
    cmd::ResponseSignal,
    device::IbDev,
    hw::Hw,
    stats::Stats,
};
use kernel::{
    io::Io,
    irq::{self, IrqReturn},
    prelude::*,
    rdma::{CqEvent, DeviceHandle, PortEvent, QpEvent, SrqEvent},
    sync::Arc,
};

// The device numbers the events about objects as the RDMA core does.
const _: () = {
    use event_verbs::*;
    assert!(CQ_ERR == CqEvent::Err as u32);
    assert!(QP_FATAL == QpEvent::Fatal as u32);
    assert!(QP_REQ_ERR == QpEvent::ReqErr as u32);
    assert!(QP_ACCESS_ERR == QpEvent::AccessErr as u32);
    assert!(COMM_EST == QpEvent::CommEst as u32);
    assert!(SQ_DRAINED == QpEvent::SqDrained as u32);
    assert!(PATH_MIG == QpEvent::PathMig as u32);
    assert!(PATH_MIG_ERR == QpEvent::PathMigErr as u32);
    assert!(QP_LAST_WQE_REACHED == QpEvent::LastWqeReached as u32);
    assert!(SRQ_ERR == SrqEvent::Err as u32);
    assert!(SRQ_LIMIT_REACHED == SrqEvent::LimitReached as u32);
};

/// Vector 0: a command response is ready.
///
/// It holds what it signals and counts, not the device: with a vector of its own the command
/// channel, which the device holds, owns the handler (`CmdChannel::switch_vector`).
pub(crate) struct ResponseIrq {
    pub(crate) signal: Arc<ResponseSignal>,
    pub(crate) stats: Arc<Stats>,
    /// With a single vector shared by all causes (MSI or INTx), the device, whose `ICR` says
    /// what happened; such a handler stays with the driver's data, not the channel.
    pub(crate) shared: Option<Arc<Hw>>,
}

impl irq::Handler for ResponseIrq {
    fn handle(&self) -> IrqReturn {
        if let Some(hw) = &self.shared {
            let Some(regs) = hw.regs.try_access() else {
                return IrqReturn::None;
            };
            let icr = regs.read32(REG_ICR);
            if icr == 0 {
                return IrqReturn::None;
            }
            if icr & INTR_CAUSE_RESPONSE == 0 {
                return IrqReturn::Handled;
            }
        }
        self.stats.interrupts.inc();
        self.signal.response_ready();
        IrqReturn::Handled
    }
}

/// Vector 1: async events, reported to the objects' consumers and the core from the hard
/// interrupt handler, as the C driver does (both may be called there).
pub(crate) struct AsyncEventIrq {
    pub(crate) hw: Arc<Hw>,
    pub(crate) events: Arc<DeviceHandle<IbDev>>,
}

impl AsyncEventIrq {
    fn port_event(kind: u32) -> Option<PortEvent> {
        Some(match kind {
            event::PORT_ACTIVE => PortEvent::Active,
            event::PORT_ERR => PortEvent::Error,
            event::LID_CHANGE => PortEvent::LidChange,
            event::PKEY_CHANGE => PortEvent::PkeyChange,
            event::SM_CHANGE => PortEvent::SmChange,
            event::CLIENT_REREGISTER => PortEvent::ClientReregister,
            event::GID_CHANGE => PortEvent::GidChange,
            event::DEVICE_FATAL => PortEvent::DeviceFatal,
            _ => return None,
        })
    }

    /// Reports an event about a QP, CQ or SRQ to its consumer. The device's event numbers are
    /// the RDMA core's. Returns false if `eqe` is not about such an object.
    fn object_event(&self, eqe: &Eqe) -> bool {
        let (kind, handle) = (eqe.kind, eqe.info);
        // The device's event numbers are the core's.
        let delivered = if let Some(event) = QpEvent::from_raw(kind) {
            self.events
                .with_device(|dev| dev.with_qp(handle, |qp| qp.dispatch_event(event)))
        } else if let Some(event) = CqEvent::from_raw(kind) {
            self.events
                .with_device(|dev| dev.with_cq(handle, |cq| cq.dispatch_event(event)))
        } else if let Some(event) = SrqEvent::from_raw(kind) {
            self.events
                .with_device(|dev| dev.with_srq(handle, |srq| srq.dispatch_event(event)))
        } else {
            return false;
        };
        if delivered.flatten().is_none() {
            self.hw.stats.stale_events.inc();
            pr_debug!("async event {} for unknown object {}\n", kind, handle);
        }
        true
    }

    fn handle_event(&self, eqe: Eqe) {
        self.hw.stats.async_events.inc();
        if self.object_event(&eqe) {
            return;
        }
        let Some(ev) = Self::port_event(eqe.kind) else {
            pr_debug!("ignoring async event {} ({})\n", eqe.kind, eqe.info);
            return;
        };
        // A device-wide event names no port (the core wants one of the device's all the same);
        // port events name theirs. The core refuses a port the device does not have, and
        // subnet management events on this RoCE port.
        let port = if ev == PortEvent::DeviceFatal {
            PORT
        } else {
            eqe.info
        };
        match self.events.dispatch_port_event(port, ev) {
            Err(e) if e == EINVAL => {
                dev_warn!(self.hw.dev(), "event {:?} on port {} refused\n", ev, port);
            }
            // `ENODEV`: not registered yet, or not any more; nobody to tell.
            _ => {}
        }
    }
}

impl irq::Handler for AsyncEventIrq {
    fn handle(&self) -> IrqReturn {
        self.hw.stats.interrupts.inc();
        if self
            .hw
            .drain_async_events(|eqe| self.handle_event(eqe))
            .is_err()
        {
            self.hw
                .declare_dead("the async event ring's indexes are out of range");
        }
        IrqReturn::Handled
    }
}

/// Vector 2: CQ notifications, passed to the CQs' completion handlers from the hard interrupt
/// handler, as the C driver does (the RDMA core requires completion handlers to allow it).
pub(crate) struct CqNotifyIrq {
    pub(crate) hw: Arc<Hw>,
    pub(crate) events: Arc<DeviceHandle<IbDev>>,
}

impl irq::Handler for CqNotifyIrq {
    fn handle(&self) -> IrqReturn {
        let stats = &self.hw.stats;
        stats.interrupts.inc();
        let drained = self.events.with_device(|dev| {
            self.hw.drain_cq_notifications(|handle| {
                stats.cq_notifications.inc();
                // A notification for a CQ destroyed meanwhile names nothing; one for a kernel CQ
                // the core is still setting up reaches nobody (a lie: nothing can have
                // completed on it yet).
                match dev.with_cq(handle, |cq| cq.complete()) {
                    Some(true) => {}
                    Some(false) => {
                        stats.stale_events.inc();
                        pr_debug!("notification for CQ {} before it was set up\n", handle);
                    }
                    None => {
                        stats.stale_events.inc();
                        pr_debug!("notification for unknown CQ {}\n", handle);
                    }
                }
            })
        });
        if matches!(drained, Some(Err(_))) {
            self.hw
                .declare_dead("the CQ notification ring's indexes are out of range");
        }
        IrqReturn::Handled
    }
}
