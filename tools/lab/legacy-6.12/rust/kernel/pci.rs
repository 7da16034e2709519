// SPDX-License-Identifier: GPL-2.0

//! PCI devices and drivers.
//!
//! C header: [`include/linux/pci.h`](srctree/include/linux/pci.h)
//!
//! A driver implements [`Driver`]: an ID table and a `probe` that returns the driver's data,
//! pinned in a box. The data lives exactly as long as the device is bound: [`Adapter`] stores it
//! in the device's driver data at probe and drops it in `remove`, after calling
//! [`Driver::remove`]. Everything the driver acquired from the device ([`Bar`] mappings,
//! [`EnabledDevice`], [`IrqVectors`] and the interrupt registrations built on them, DMA
//! allocations, ...) is an owned value whose `Drop` gives it back; kept in the driver data, it is
//! released when the device is unbound, in the reverse order of the fields' declaration.

use crate::{
    bindings, device,
    error::{code::*, from_result, to_result, Error, Result},
    io::IoMem,
    irq,
    prelude::*,
    str::CStr,
    sync::Arc,
    types::{ARef, AlwaysRefCounted, ForeignOwnable, Opaque},
    ThisModule,
};
use core::{marker::PhantomData, ptr::NonNull};

/// The number of standard BARs of a PCI function.
pub const NUM_BARS: u32 = 6;

/// A PCI device ID (C's `struct pci_device_id`), matching one vendor/device pair.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct DeviceId(bindings::pci_device_id);

impl DeviceId {
    const ANY: u32 = !0;

    /// Matches `vendor:device`, any subsystem (C's `PCI_DEVICE()`).
    pub const fn new(vendor: u16, device: u16) -> Self {
        Self(bindings::pci_device_id {
            vendor: vendor as u32,
            device: device as u32,
            subvendor: Self::ANY,
            subdevice: Self::ANY,
            class: 0,
            class_mask: 0,
            driver_data: 0,
            override_only: 0,
        })
    }

    const fn zero() -> Self {
        Self(bindings::pci_device_id {
            vendor: 0,
            device: 0,
            subvendor: 0,
            subdevice: 0,
            class: 0,
            class_mask: 0,
            driver_data: 0,
            override_only: 0,
        })
    }

    /// The vendor ID this entry matches.
    pub const fn vendor(&self) -> u32 {
        self.0.vendor
    }

    /// The device ID this entry matches.
    pub const fn device(&self) -> u32 {
        self.0.device
    }
}

/// A zero-terminated table of `N` device IDs, in the layout the PCI core expects.
#[repr(C)]
pub struct IdArray<const N: usize> {
    ids: [DeviceId; N],
    sentinel: DeviceId,
}

impl<const N: usize> IdArray<N> {
    /// Builds the table; the terminating all-zero entry is added here.
    pub const fn new(ids: [DeviceId; N]) -> Self {
        Self {
            ids,
            sentinel: DeviceId::zero(),
        }
    }
}

/// Defines a `static` [`IdArray`] of PCI IDs that is also the module's device table, so that
/// `modinfo` lists `pci:` aliases and udev can load the module for a matching device (C's
/// `MODULE_DEVICE_TABLE(pci, ...)`).
///
/// ```ignore
/// kernel::pci_device_table! {
///     static PCI_IDS = [pci::DeviceId::new(0x15ad, 0x0820)];
/// }
/// ```
#[macro_export]
macro_rules! pci_device_table {
    ($(#[$m:meta])* $vis:vis static $name:ident = [$($id:expr),+ $(,)?];) => {
        $(#[$m])*
        // modpost finds the table by this symbol name (`__mod_<bus>__<name>_device_table`).
        #[export_name = ::core::concat!(
            "__mod_pci__",
            ::core::stringify!($name),
            "_device_table"
        )]
        $vis static $name: $crate::pci::IdArray<{ [$(::core::stringify!($id)),+].len() }> =
            $crate::pci::IdArray::new([$($id),+]);
    };
}

/// A device ID table the PCI core can walk (implemented by [`IdArray`]).
pub trait IdTable: Sync {
    /// A pointer to the first entry of a zero-terminated array of `struct pci_device_id`.
    fn as_ptr(&self) -> *const bindings::pci_device_id;
}

impl<const N: usize> IdTable for IdArray<N> {
    fn as_ptr(&self) -> *const bindings::pci_device_id {
        // `IdArray` is `repr(C)`: the entries are followed by the zero sentinel.
        core::ptr::from_ref(self).cast()
    }
}

/// A PCI function (C's `struct pci_dev`).
///
/// # Invariants
///
/// The wrapped `struct pci_dev` is valid: it is either borrowed for a callback's duration or kept
/// alive by a reference count ([`ARef<Device>`]).
#[repr(transparent)]
pub struct Device(Opaque<bindings::pci_dev>);

// SAFETY: `struct pci_dev` is reference counted and may be used and released from any thread.
unsafe impl Send for Device {}
// SAFETY: The methods taking `&self` only read fields that are constant while the device exists,
// or call C functions that do their own locking.
unsafe impl Sync for Device {}

// SAFETY: `pci_dev_get`/`pci_dev_put` maintain the reference count of the embedded
// `struct device`; the release function may run in any context.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: The existence of `&self` means the reference count is non-zero.
        unsafe { bindings::pci_dev_get(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives up one reference that it owned.
        unsafe { bindings::pci_dev_put(obj.cast().as_ptr()) }
    }
}

impl Device {
    /// Borrows a C `struct pci_dev`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for the lifetime `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::pci_dev) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper; validity is guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    /// The raw `struct pci_dev` pointer.
    pub fn as_raw(&self) -> *mut bindings::pci_dev {
        self.0.get()
    }

    /// The generic device embedded in this PCI function.
    pub fn as_dev(&self) -> &device::Device {
        // SAFETY: `dev` is embedded in a valid `struct pci_dev`, so it is valid for as long as
        // `self` is.
        unsafe { device::Device::as_ref(core::ptr::addr_of_mut!((*self.as_raw()).dev)) }
    }

    /// The device's name, e.g. `0000:00:04.1`.
    pub fn name(&self) -> &CStr {
        // SAFETY: A registered device always has a kobject name (`dev_name()`), a NUL-terminated
        // string that lives as long as the device.
        unsafe {
            let name = (*self.as_raw()).dev.kobj.name;
            if name.is_null() {
                return crate::c_str!("?");
            }
            CStr::from_char_ptr(name)
        }
    }

    /// The vendor ID.
    pub fn vendor_id(&self) -> u16 {
        // SAFETY: `vendor` is constant for a valid `pci_dev`.
        unsafe { (*self.as_raw()).vendor }
    }

    /// The device ID.
    pub fn device_id(&self) -> u16 {
        // SAFETY: `device` is constant for a valid `pci_dev`.
        unsafe { (*self.as_raw()).device }
    }

    /// The revision ID.
    pub fn revision_id(&self) -> u8 {
        // SAFETY: `revision` is constant for a valid `pci_dev`.
        unsafe { (*self.as_raw()).revision }
    }

    /// The device/function number on the bus.
    pub fn devfn(&self) -> u8 {
        // SAFETY: `devfn` is constant for a valid `pci_dev`.
        unsafe { (*self.as_raw()).devfn as u8 }
    }

    /// The slot number (C's `PCI_SLOT()`).
    pub fn slot(&self) -> u8 {
        self.devfn() >> 3
    }

    /// The function number (C's `PCI_FUNC()`).
    pub fn function(&self) -> u8 {
        self.devfn() & 7
    }

    fn resource(&self, bar: u32) -> Result<(u64, u64, u64)> {
        if bar >= NUM_BARS {
            return Err(EINVAL);
        }
        // SAFETY: `bar` is a valid index into the `resource` array of a valid `pci_dev`; the
        // resource is set up before drivers are bound and not changed while one is.
        let r = unsafe { &(*self.as_raw()).resource[bar as usize] };
        Ok((r.start, r.end, r.flags as u64))
    }

    /// The bus address where BAR `bar` starts.
    pub fn resource_start(&self, bar: u32) -> Result<u64> {
        Ok(self.resource(bar)?.0)
    }

    /// The length in bytes of BAR `bar` (0 if it is not implemented).
    pub fn resource_len(&self, bar: u32) -> Result<u64> {
        let (start, end, _) = self.resource(bar)?;
        Ok(if end == 0 { 0 } else { end - start + 1 })
    }

    /// Whether BAR `bar` is memory space (as opposed to I/O ports).
    pub fn resource_is_mem(&self, bar: u32) -> Result<bool> {
        Ok(self.resource(bar)?.2 & bindings::IORESOURCE_MEM as u64 != 0)
    }

    /// Enables the device's memory space; disabled again when the result is dropped.
    pub fn enable_device_mem(&self) -> Result<EnabledDevice> {
        // SAFETY: `self.as_raw()` is a valid `pci_dev`.
        to_result(unsafe { bindings::pci_enable_device_mem(self.as_raw()) })?;
        Ok(EnabledDevice(self.into()))
    }

    /// Looks up another function of the same bus by its `devfn` (C's `pci_get_slot()`).
    pub fn get_slot(&self, devfn: u8) -> Option<ARef<Device>> {
        // SAFETY: `bus` of a valid `pci_dev` is valid; `pci_get_slot` returns a new reference or
        // NULL.
        let ptr = unsafe { bindings::pci_get_slot((*self.as_raw()).bus, devfn.into()) };
        // SAFETY: A non-NULL result carries a reference we now own.
        NonNull::new(ptr).map(|p| unsafe { ARef::from_raw(p.cast()) })
    }

    /// Allocates between `min` and `max` interrupt vectors of the given kinds.
    pub fn alloc_irq_vectors(&self, min: u32, max: u32, types: IrqTypes) -> Result<IrqVectors> {
        // SAFETY: `self.as_raw()` is a valid `pci_dev`; a NULL affinity descriptor is allowed.
        let n = unsafe {
            bindings::pci_alloc_irq_vectors_affinity(
                self.as_raw(),
                min,
                max,
                types.0,
                core::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        let inner = Arc::new(
            VectorsInner {
                pdev: self.into(),
                count: n as u32,
                types,
            },
            GFP_KERNEL,
        )?;
        Ok(IrqVectors(inner))
    }
}

/// The memory space of a PCI device, enabled; disabled on drop (C's `pci_disable_device()`).
pub struct EnabledDevice(ARef<Device>);

impl EnabledDevice {
    /// Enables bus mastering, so the device can do DMA. It is turned off again when the device is
    /// disabled.
    pub fn set_master(&self) {
        // SAFETY: `self.0` is a valid, enabled `pci_dev`.
        unsafe { bindings::pci_set_master(self.0.as_raw()) };
    }
}

impl Drop for EnabledDevice {
    fn drop(&mut self) {
        // SAFETY: The device was enabled by `enable_device_mem` and is disabled once, here.
        unsafe { bindings::pci_disable_device(self.0.as_raw()) };
    }
}

/// A requested and mapped memory BAR, at least `SIZE` bytes long.
///
/// Dereferences to [`IoMem<SIZE>`] for register access. On drop the mapping is removed and the
/// region released.
///
/// # Invariants
///
/// `io` describes the live mapping `pci_iomap()` returned for BAR `bar` of `pdev`, whose region
/// was requested by this value.
pub struct Bar<const SIZE: usize> {
    pdev: ARef<Device>,
    io: IoMem<SIZE>,
    bar: u32,
}

impl<const SIZE: usize> Bar<SIZE> {
    /// Requests BAR `bar` of `pdev` under `name` and maps it.
    ///
    /// Fails with `EINVAL` if the BAR is not memory space or shorter than `SIZE` bytes.
    pub fn new(pdev: &Device, bar: u32, name: &'static CStr) -> Result<Self> {
        let len = pdev.resource_len(bar)?;
        if !pdev.resource_is_mem(bar)? || len < SIZE as u64 {
            return Err(EINVAL);
        }
        // SAFETY: `pdev` is valid, `bar` is in range and `name` lives forever.
        to_result(unsafe {
            bindings::pci_request_region(pdev.as_raw(), bar as i32, name.as_char_ptr())
        })?;
        // SAFETY: The region is ours; a `maxlen` of 0 maps the whole BAR.
        let addr = unsafe { bindings::pci_iomap(pdev.as_raw(), bar as i32, 0) };
        if addr.is_null() {
            // SAFETY: Requested just above.
            unsafe { bindings::pci_release_region(pdev.as_raw(), bar as i32) };
            return Err(ENOMEM);
        }
        // SAFETY: `addr` maps all `len >= SIZE` bytes of the BAR until `drop` unmaps it.
        let io = unsafe { IoMem::new(addr as usize, len as usize) };
        Ok(Self {
            pdev: pdev.into(),
            io,
            bar,
        })
    }

    /// The bus address where the BAR starts.
    pub fn start(&self) -> u64 {
        self.pdev.resource_start(self.bar).unwrap_or(0)
    }

    /// The BAR's length in bytes.
    pub fn len(&self) -> u64 {
        self.io.maxsize() as u64
    }

    /// Whether the BAR is empty (it never is: mapping an empty BAR fails).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<const SIZE: usize> core::ops::Deref for Bar<SIZE> {
    type Target = IoMem<SIZE>;

    fn deref(&self) -> &IoMem<SIZE> {
        &self.io
    }
}

impl<const SIZE: usize> Drop for Bar<SIZE> {
    fn drop(&mut self) {
        let addr = self.io.base();
        // SAFETY: By the type invariant `addr` is our mapping and the region is ours; both are
        // released exactly once, here, and `self.io` cannot be used afterwards.
        unsafe {
            bindings::pci_iounmap(self.pdev.as_raw(), addr as *mut _);
            bindings::pci_release_region(self.pdev.as_raw(), self.bar as i32);
        }
    }
}

/// Kinds of interrupt vectors (C's `PCI_IRQ_*` flags).
///
/// # Examples
///
/// ```
/// use kernel::pci::IrqTypes;
///
/// let fallback = IrqTypes::MSI | IrqTypes::INTX;
/// assert!(fallback.contains(IrqTypes::INTX));
/// assert!(!fallback.contains(IrqTypes::MSIX));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct IrqTypes(u32);

impl IrqTypes {
    /// Legacy INTx.
    pub const INTX: Self = Self(bindings::PCI_IRQ_INTX);
    /// MSI.
    pub const MSI: Self = Self(bindings::PCI_IRQ_MSI);
    /// MSI-X.
    pub const MSIX: Self = Self(bindings::PCI_IRQ_MSIX);

    /// Whether `other` is among these kinds.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for IrqTypes {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

struct VectorsInner {
    pdev: ARef<Device>,
    count: u32,
    types: IrqTypes,
}

impl Drop for VectorsInner {
    fn drop(&mut self) {
        // SAFETY: The vectors were allocated by `alloc_irq_vectors`; every interrupt
        // registration on them holds a reference to this value, so all were freed before this
        // runs.
        unsafe { bindings::pci_free_irq_vectors(self.pdev.as_raw()) };
    }
}

/// The interrupt vectors allocated for a device (C's `pci_alloc_irq_vectors()`).
///
/// They are freed (C's `pci_free_irq_vectors()`) when this value and every [`irq::Line`] taken
/// from it are gone, so an interrupt handler can never outlive its vector.
#[derive(Clone)]
pub struct IrqVectors(Arc<VectorsInner>);

impl IrqVectors {
    /// How many vectors were allocated.
    pub fn count(&self) -> u32 {
        self.0.count
    }

    /// Whether the allocation was restricted to MSI-X (so every vector is a distinct message).
    pub fn is_msix(&self) -> bool {
        self.0.types == IrqTypes::MSIX
    }

    /// The interrupt line of vector `index`.
    pub fn line(&self, index: u32) -> Result<irq::Line> {
        if index >= self.0.count {
            return Err(EINVAL);
        }
        // SAFETY: `index` is below the number of allocated vectors of a valid device.
        let irq = unsafe { bindings::pci_irq_vector(self.0.pdev.as_raw(), index) };
        if irq < 0 {
            return Err(Error::from_errno(irq));
        }
        let owner: Arc<dyn Send + Sync> = self.0.clone();
        // SAFETY: `irq` is the Linux interrupt number of an allocated vector, and `owner` keeps
        // the vectors allocated for as long as the line exists.
        Ok(unsafe { irq::Line::new(irq as u32, owner) })
    }
}

/// A PCI driver.
///
/// `Self` is the driver's per-device data: [`Driver::probe`] creates it when a matching device
/// is bound, and it is dropped when the device is unbound.
pub trait Driver: Send + Sync + Sized + 'static {
    /// The devices this driver handles.
    const ID_TABLE: &'static dyn IdTable;

    /// Binds the driver to `pdev`, matched by `id`.
    fn probe(pdev: &Device, id: &DeviceId) -> Result<Pin<KBox<Self>>>;

    /// Called when the device is unbound, before the driver data is dropped.
    fn remove(_pdev: &Device, _this: Pin<&Self>) {}
}

/// Connects a [`Driver`] to the C PCI core's callbacks.
pub struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn probe_callback(
        pdev: *mut bindings::pci_dev,
        id: *const bindings::pci_device_id,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The PCI core passes a valid device for the duration of the call.
            let dev = unsafe { Device::from_raw(pdev) };
            // SAFETY: `id` points into our `ID_TABLE`; `DeviceId` is a transparent wrapper.
            let id = unsafe { &*id.cast::<DeviceId>() };
            let data = T::probe(dev, id)?;
            // SAFETY: `pdev` is valid; the driver data of a device being bound is ours to set.
            unsafe { (*pdev).dev.driver_data = data.into_foreign() as *mut _ };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn remove_callback(pdev: *mut bindings::pci_dev) {
        // SAFETY: The PCI core passes a valid device for the duration of the call.
        let dev = unsafe { Device::from_raw(pdev) };
        // SAFETY: `remove` is only called after a successful `probe`, which stored a
        // `Pin<KBox<T>>` in the driver data; it is taken back exactly once, here.
        let data = unsafe {
            let ptr = (*pdev).dev.driver_data;
            (*pdev).dev.driver_data = core::ptr::null_mut();
            <Pin<KBox<T>> as ForeignOwnable>::from_foreign(ptr)
        };
        T::remove(dev, data.as_ref());
        drop(data);
    }
}

/// The registration of a PCI driver with the PCI core.
///
/// # Invariants
///
/// `drv` is registered with the PCI core from `register` until `drop`.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Driver> {
    #[pin]
    drv: Opaque<bindings::pci_driver>,
    _p: PhantomData<T>,
}

// SAFETY: The registration is only touched by `register`/`drop`, which the PCI core serialises.
unsafe impl<T: Driver> Send for Registration<T> {}
// SAFETY: No method takes `&self`.
unsafe impl<T: Driver> Sync for Registration<T> {}

impl<T: Driver> Registration<T> {
    /// Registers driver `T` as `name` for `module`.
    pub fn register(name: &'static CStr, module: &'static ThisModule) -> Result<Pin<KBox<Self>>> {
        let this = KBox::pin_init(
            pin_init!(Self {
                drv <- Opaque::ffi_init(|drv: *mut bindings::pci_driver| {
                    // SAFETY: `drv` is valid for writes; all-zeroes is a valid `pci_driver`.
                    unsafe {
                        drv.write(core::mem::zeroed());
                        (*drv).name = name.as_char_ptr();
                        (*drv).id_table = T::ID_TABLE.as_ptr();
                        (*drv).probe = Some(Adapter::<T>::probe_callback);
                        (*drv).remove = Some(Adapter::<T>::remove_callback);
                    }
                }),
                _p: PhantomData,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `drv` is pinned in a box that lives until `drop` unregisters it.
        to_result(unsafe {
            bindings::__pci_register_driver(this.drv.get(), module.as_ptr(), name.as_char_ptr())
        })?;
        Ok(this)
    }
}

#[pinned_drop]
impl<T: Driver> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant the driver is registered.
        unsafe { bindings::pci_unregister_driver(self.drv.get()) };
    }
}

/// Declares a kernel module whose only job is to register one PCI driver.
///
/// ```ignore
/// kernel::module_pci_driver! {
///     type: MyDriver,
///     name: "my_driver",
///     author: "Someone",
///     description: "Drives some device",
///     license: "GPL",
/// }
/// ```
#[macro_export]
macro_rules! module_pci_driver {
    (type: $type:ty, name: $name:tt, $($rest:tt)*) => {
        struct __PciModule(
            ::core::pin::Pin<$crate::alloc::KBox<$crate::pci::Registration<$type>>>,
        );

        impl $crate::Module for __PciModule {
            fn init(module: &'static $crate::ThisModule) -> $crate::error::Result<Self> {
                Ok(Self($crate::pci::Registration::<$type>::register(
                    $crate::c_str!($name),
                    module,
                )?))
            }
        }

        $crate::prelude::module! {
            type: __PciModule,
            name: $name,
            $($rest)*
        }
    };
}
