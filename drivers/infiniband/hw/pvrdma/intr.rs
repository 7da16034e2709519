// SPDX-License-Identifier: GPL-2.0

//! Interrupt handlers: command responses, async events, CQ notifications.

use crate::{
    abi::{event, Eqe, INTR_CAUSE_RESPONSE, PORT, REG_ICR},
    hw::Hw,
};
use kernel::{
    irq::{self, IrqReturn},
    prelude::*,
    rdma::{DeviceHandle, PortEvent},
    sync::Arc,
};

/// Vector 0: a command response is ready.
pub(crate) struct ResponseIrq {
    pub(crate) hw: Arc<Hw>,
    /// Whether the vector is a single one shared by all causes (MSI or INTx), so that `ICR`
    /// says what happened.
    pub(crate) shared: bool,
}

impl irq::Handler for ResponseIrq {
    fn handle(&self) -> IrqReturn {
        if self.shared {
            let icr = self.hw.regs.read32::<REG_ICR>();
            if icr == 0 {
                return IrqReturn::None;
            }
            if icr & INTR_CAUSE_RESPONSE == 0 {
                return IrqReturn::Handled;
            }
        }
        self.hw.cmd.response_ready();
        IrqReturn::Handled
    }
}

/// Vector 1: async events. Threaded, because reporting an event goes through the
/// [`DeviceHandle`]'s mutex.
pub(crate) struct AsyncEventIrq {
    pub(crate) hw: Arc<Hw>,
    pub(crate) events: Arc<DeviceHandle>,
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

    fn handle_event(&self, eqe: Eqe) {
        let Some(ev) = Self::port_event(eqe.kind) else {
            // QP, CQ and SRQ events: this driver creates none of those objects.
            pr_debug!("ignoring async event {} ({})\n", eqe.kind, eqe.info);
            return;
        };
        // A device-wide event names no port; port events name theirs, which must exist.
        let port = if ev == PortEvent::DeviceFatal {
            PORT
        } else {
            eqe.info
        };
        if port != PORT {
            pr_warn!("{}: event on port {}\n", self.hw.pdev.name(), port);
            return;
        }
        self.events.dispatch_port_event(port, ev);
    }
}

impl irq::ThreadedHandler for AsyncEventIrq {
    fn handle_threaded(&self) -> IrqReturn {
        self.hw.drain_async_events(|eqe| self.handle_event(eqe));
        IrqReturn::Handled
    }
}

/// Vector 2: CQ notifications.
pub(crate) struct CqNotifyIrq {
    pub(crate) hw: Arc<Hw>,
}

impl irq::Handler for CqNotifyIrq {
    fn handle(&self) -> IrqReturn {
        // This driver creates no CQs (user-space CQs are polled by the provider library), so
        // a notification names nothing of ours: consume it.
        self.hw
            .drain_cq_notifications(|cq| pr_debug!("notification for CQ {}\n", cq));
        IrqReturn::Handled
    }
}
