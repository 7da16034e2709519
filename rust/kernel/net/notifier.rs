// SPDX-License-Identifier: GPL-2.0

//! Network device notifiers: being told when network devices come, go, and change state.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use super::device::{Device, RtnlUnlocked};
use crate::{
    bindings,
    error::{to_result, Result},
    prelude::*,
    types::Opaque,
};
use core::marker::PhantomPinned;

/// A network device event (C's `enum netdev_cmd`), the ones drivers usually care about.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Event {
    /// The interface was brought up (`NETDEV_UP`).
    Up,
    /// The interface was brought down (`NETDEV_DOWN`).
    Down,
    /// The system is rebooting (`NETDEV_REBOOT`).
    Reboot,
    /// The link state changed (`NETDEV_CHANGE`).
    Change,
    /// The device was registered (`NETDEV_REGISTER`).
    Register,
    /// The device is being unregistered (`NETDEV_UNREGISTER`): drop references to it now.
    Unregister,
    /// The MTU changed (`NETDEV_CHANGEMTU`).
    ChangeMtu,
    /// The hardware address changed (`NETDEV_CHANGEADDR`).
    ChangeAddr,
    /// The interface was renamed (`NETDEV_CHANGENAME`).
    ChangeName,
    /// Any other event, by its C value.
    Other(u64),
}

impl Event {
    /// The event of the C notifier command `cmd` (a `NETDEV_*` value).
    pub(crate) fn from_raw(cmd: u64) -> Self {
        match cmd as u32 {
            bindings::netdev_cmd_NETDEV_UP => Self::Up,
            bindings::netdev_cmd_NETDEV_DOWN => Self::Down,
            bindings::netdev_cmd_NETDEV_REBOOT => Self::Reboot,
            bindings::netdev_cmd_NETDEV_CHANGE => Self::Change,
            bindings::netdev_cmd_NETDEV_REGISTER => Self::Register,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Self::ChangeMtu,
            bindings::netdev_cmd_NETDEV_CHANGEADDR => Self::ChangeAddr,
            bindings::netdev_cmd_NETDEV_CHANGENAME => Self::ChangeName,
            _ => Self::Other(cmd),
        }
    }
}

/// Receives network device events.
///
/// Called with the RTNL lock held, in process context: it may sleep, but must not take the RTNL
/// lock itself. The functions that take it require an [`RtnlUnlocked`], which `notify` cannot
/// have: they cannot be called from it.
pub trait Notifier: Send + Sync + 'static {
    /// `event` happened to `dev`.
    fn notify(&self, event: Event, dev: &Device);
}

/// A registered network device notifier (C's `register_netdevice_notifier()`).
///
/// On registration the notifier is told `Register` (and `Up` if running) for every existing
/// device. Dropping the registration unregisters it; once `drop` returns, `notify` is not running
/// and will not be called again. Dropping it takes the RTNL lock: a notifier must not own its
/// own registration, or any other (see [`RtnlUnlocked`]).
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use kernel::{
///     net::{
///         device::{Device, RtnlUnlocked},
///         notifier::{Event, Notifier, Registration},
///     },
///     prelude::*,
/// };
///
/// struct Counter(AtomicU32);
///
/// impl Notifier for Counter {
///     fn notify(&self, event: Event, _dev: &Device) {
///         if event == Event::Register {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// // SAFETY: Doctests run in a KUnit thread, which holds no lock. (A driver's probe makes its
/// // witness from its device: `RtnlUnlocked::new(pdev.as_ref())`.)
/// let rtnl = unsafe { RtnlUnlocked::assume() };
/// let reg = Registration::register(Counter(AtomicU32::new(0)), &rtnl)?;
/// // Registration replays `Register` for every existing device, the loopback one at least.
/// assert!(reg.data().0.load(Ordering::Relaxed) >= 1);
/// drop(reg);
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// `block.nb` is registered, with its `notifier_call` set to `Block::callback`, from the end of
/// `register` until `drop`: a registration that failed leaves no `Registration`, only a block
/// that is freed without being unregistered.
pub struct Registration<T: Notifier> {
    block: Pin<KBox<Block<T>>>,
}

/// The notifier block and the notifier's data, pinned in one allocation: the callback finds the
/// data from the block.
#[pin_data]
struct Block<T: Notifier> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    data: T,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: `data` is `Send`; the notifier block is only touched by the C notifier chain, which
// has its own locking.
unsafe impl<T: Notifier> Send for Registration<T> {}
// SAFETY: `&self` only gives access to `data`, which is `Sync`.
unsafe impl<T: Notifier> Sync for Registration<T> {}

impl<T: Notifier> Registration<T> {
    /// Registers `data` to be told about network device events.
    ///
    /// It takes the RTNL lock, hence the witness that the caller does not hold it
    /// ([`RtnlUnlocked`]).
    pub fn register(data: T, _rtnl: &RtnlUnlocked<'_>) -> Result<Self> {
        let block = KBox::pin_init(
            pin_init!(Block {
                nb <- Opaque::ffi_init(|nb: *mut bindings::notifier_block| {
                    // SAFETY: `nb` is valid for writes; all-zeroes is a valid notifier block.
                    unsafe {
                        nb.write(core::mem::zeroed());
                        (*nb).notifier_call = Some(Block::<T>::callback);
                    }
                }),
                data,
                _pin: PhantomPinned,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `nb` is initialised and pinned in a box that lives until `drop` unregisters it,
        // with the data initialised beside it. On failure the block is not registered (the core
        // unregisters it itself if it fails after adding it to the chain): `block` is freed
        // without unregistration below.
        to_result(unsafe { bindings::register_netdevice_notifier(block.nb.get()) })?;
        // INVARIANT: Registered just above with `Block::callback`.
        Ok(Self { block })
    }

    /// The notifier's data.
    pub fn data(&self) -> &T {
        &self.block.data
    }
}

impl<T: Notifier> Block<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn callback(
        nb: *mut bindings::notifier_block,
        event: crate::ffi::c_ulong,
        ptr: *mut crate::ffi::c_void,
    ) -> crate::ffi::c_int {
        // SAFETY: `nb` is the `nb` field of a `Block<T>` that a `Registration<T>` registered, or
        // is registering (its data is initialised before); it stays alive until unregistration,
        // which waits for running callbacks.
        let this = unsafe { &*crate::container_of!(Opaque::cast_from(nb), Self, nb) };
        // SAFETY: Netdevice notifier chains pass a `struct netdev_notifier_info` whose `dev` is
        // valid for the duration of the call.
        let dev = unsafe {
            let info = ptr.cast::<bindings::netdev_notifier_info>();
            Device::from_raw((*info).dev)
        };
        this.data.notify(Event::from_raw(event as u64), dev);
        bindings::NOTIFY_DONE as crate::ffi::c_int
    }
}

impl<T: Notifier> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `nb` is registered.
        unsafe { bindings::unregister_netdevice_notifier(self.block.nb.get()) };
    }
}
