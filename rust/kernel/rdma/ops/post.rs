// SPDX-License-Identifier: GPL-2.0

//! Trampolines of the kernel data path: posting send and receive work requests.

use super::super::{
    qp::Qp,
    wr::{PostProgress, RecvWrs, SendWrs},
};
use super::{Adapter, Operations};
use crate::{bindings, ffi::c_int, prelude::*};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn post_send(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: The core passes a live QP of one of `T`'s devices and a valid chain.
        let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
        let driver_post = |progress: &PostProgress<bindings::ib_send_wr>| {
            // SAFETY: `wr` is a valid chain posted to `qp` (embedded as the verbs API requires)
            // for the post's duration, and `post` gives the new progress of this chain.
            let wrs = unsafe { SendWrs::new(wr, qp, progress) };
            T::post_send(dev, qp, wrs)
        };
        // SAFETY: `wr` is the valid chain of this post, for its duration, and `bad_wr` is NULL or
        // valid for writes.
        unsafe { post(wr, bad_wr, driver_post) }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn post_recv(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: The core passes a live QP of one of `T`'s devices and a valid chain.
        let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
        let driver_post = |progress: &PostProgress<bindings::ib_recv_wr>| {
            // SAFETY: `wr` is a valid chain posted to `qp` for the post's duration, and `post`
            // gives the new progress of this chain.
            let wrs = unsafe { RecvWrs::new(wr, *qp.serial(), progress) };
            T::post_recv(dev, qp, wrs)
        };
        // SAFETY: As in `post_send`.
        unsafe { post(wr, bad_wr, driver_post) }
    }
}

/// Runs the driver's post of the chain of work requests starting at `first` (`post`, given the
/// chain's progress), and tells the consumer what was posted from the IDs the driver took, not
/// from what it returns: the requests before the first whose ID was not taken were posted, the
/// rest were not (`*bad_wr` points at the first of them on failure).
///
/// A driver that fails after taking every ID contradicts itself: the requests are posted (the
/// driver holds their IDs and will report their completions), so the post succeeds, with a
/// warning, rather than let the consumer free what will still complete. A driver that succeeds
/// without taking every ID fails the post with `EINVAL` at the first request not taken, with a
/// warning. An empty chain posts nothing, and the driver's result stands.
///
/// # Safety
///
/// `bad_wr` must be NULL or valid for writes.
unsafe fn post<W>(
    first: *const W,
    bad_wr: *mut *const W,
    driver_post: impl FnOnce(&PostProgress<W>) -> Result,
) -> c_int {
    let progress = PostProgress::new(first);
    let result = driver_post(&progress);
    let untaken = progress.first_untaken();
    let errno = match (result, untaken.is_null()) {
        (Ok(()), true) => return 0,
        (Err(e), true) if first.is_null() => return e.to_errno(),
        (Err(_), true) => {
            crate::pr_warn_once!("rdma: a driver failed a post after taking every ID: posted\n");
            return 0;
        }
        (Err(e), false) => e.to_errno(),
        (Ok(()), false) => {
            crate::pr_warn_once!("rdma: a driver left IDs of a post it reported done: failed\n");
            EINVAL.to_errno()
        }
    };
    if !bad_wr.is_null() {
        // SAFETY: Guaranteed by the caller.
        unsafe { *bad_wr = untaken };
    }
    errno
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_wr_id)]
mod tests {
    use super::super::super::{
        device::{Device, DeviceStorage},
        qp::QpStorage,
        wc::{WcOpcode, WcSink, WcStatus, WorkCompletion},
        DriverId, TableIndex, WrId,
    };
    use super::*;
    use crate::alloc::flags::__GFP_ZERO;
    use core::{mem::MaybeUninit, ptr};

    /// A driver with no callbacks: the tests call the abstractions' code directly.
    struct FakeDriver;
    struct FakeObject;
    impl TableIndex for FakeObject {
        fn table_index(&self) -> u32 {
            0
        }
    }
    #[vtable]
    impl Operations for FakeDriver {
        const DRIVER_ID: DriverId = DriverId::UNKNOWN;
        const UVERBS_ABI_VERSION: u32 = 0;
        type UserContext = ();
        type Pd = ();
        type Cq = FakeObject;
        type Qp = FakeObject;
        type Srq = FakeObject;
        type Ah = ();
        type Mr = ();
    }

    type FakeQpMemory = KBox<MaybeUninit<QpStorage<FakeDriver>>>;

    /// The CQs of the fake QPs: their addresses only are used (compared by the sink, never
    /// dereferenced).
    struct FakeCqs {
        send: KBox<u8>,
        recv: KBox<u8>,
    }

    impl FakeCqs {
        fn new() -> Result<Self> {
            Ok(Self {
                send: KBox::new(0, GFP_KERNEL)?,
                recv: KBox::new(0, GFP_KERNEL)?,
            })
        }

        fn send(&self) -> *mut bindings::ib_cq {
            core::ptr::from_ref::<u8>(&self.send).cast_mut().cast()
        }

        fn recv(&self) -> *mut bindings::ib_cq {
            core::ptr::from_ref::<u8>(&self.recv).cast_mut().cast()
        }
    }

    /// The memory of a QP of `dev` whose queues complete on `cqs`, as the core allocates it
    /// (zeroed, the size the operations table gives, the CQs set before `create_qp`), and its C
    /// object.
    fn qp_memory(
        dev: &Device<FakeDriver>,
        cqs: &FakeCqs,
    ) -> Result<(FakeQpMemory, *mut bindings::ib_qp)> {
        let mut mem = KBox::<QpStorage<FakeDriver>>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        // The C object is the storage's first field.
        let raw = mem.as_mut_ptr().cast::<bindings::ib_qp>();
        // SAFETY: `raw` is the zeroed `ib_qp` at the head of the allocation, valid for writes.
        unsafe {
            (*raw).device = dev.as_raw();
            (*raw).send_cq = cqs.send();
            (*raw).recv_cq = cqs.recv();
        }
        Ok((mem, raw))
    }

    /// Creates a QP in `raw` (as `create_qp` does once the driver succeeded) and returns it.
    ///
    /// # Safety
    ///
    /// `raw` must come from [`qp_memory`] and hold no QP (never created, or destroyed), and the
    /// QP must not be used after its memory is freed or it is destroyed.
    unsafe fn create<'a>(raw: *mut bindings::ib_qp) -> &'a Qp<FakeDriver> {
        // SAFETY: `raw` has the size and layout of a QP of `FakeDriver` and no initialised data
        // (guaranteed by the caller).
        unsafe { QpStorage::<FakeDriver>::init(raw, FakeObject) };
        // SAFETY: Initialised just above; live as long as the caller uses it.
        unsafe { Qp::from_raw(raw) }
    }

    /// Destroys the QP in `raw`, as `destroy_qp` does (its memory stays, as if the core reused
    /// it for the next QP).
    ///
    /// # Safety
    ///
    /// `raw` must hold a QP made by [`create`], no longer used.
    unsafe fn destroy(raw: *mut bindings::ib_qp) {
        // SAFETY: Guaranteed by the caller.
        unsafe { QpStorage::<FakeDriver>::drop_data(raw) };
    }

    /// The buffer length of each request of a [`Chain`].
    const POSTED_LEN: u32 = 256;

    /// A chain of `N` receive work requests whose `wr_id`s are 1 to `N`, each with one
    /// scatter/gather entry of [`POSTED_LEN`] bytes.
    struct Chain<const N: usize>(KBox<[bindings::ib_recv_wr; N]>, KBox<[bindings::ib_sge; N]>);

    impl<const N: usize> Chain<N> {
        fn new() -> Result<Self> {
            // SAFETY: Zeroed bytes are a valid `ib_recv_wr` and `ib_sge`: pointers, integers
            // and a union of an integer and a pointer.
            let (wrs, sges) = unsafe {
                (
                    core::mem::zeroed::<[bindings::ib_recv_wr; N]>(),
                    core::mem::zeroed::<[bindings::ib_sge; N]>(),
                )
            };
            let mut chain = Self(KBox::new(wrs, GFP_KERNEL)?, KBox::new(sges, GFP_KERNEL)?);
            let first = chain.0.as_mut_ptr();
            let first_sge = chain.1.as_mut_ptr();
            for i in 0..N {
                let wr = first.wrapping_add(i);
                let sge = first_sge.wrapping_add(i);
                // SAFETY: `wr` and `sge` are element `i` of their arrays, valid for writes; so
                // is the next request if `i + 1 < N`.
                unsafe {
                    (*wr).__bindgen_anon_1.wr_id = i as u64 + 1;
                    (*sge).length = POSTED_LEN;
                    (*wr).sg_list = sge;
                    (*wr).num_sge = 1;
                    if i + 1 < N {
                        (*wr).next = first.wrapping_add(i + 1);
                    }
                }
            }
            Ok(chain)
        }

        /// Request `i` of the chain.
        fn at(&self, i: usize) -> *const bindings::ib_recv_wr {
            self.0.as_ptr().wrapping_add(i)
        }

        /// Posts the chain to `qp` with `driver` as the driver's post: returns what the consumer
        /// gets, the errno and `bad_wr` (NULL if the post did not set it).
        fn post(
            &self,
            qp: &Qp<FakeDriver>,
            driver: impl FnOnce(RecvWrs<'_>) -> Result,
        ) -> (c_int, *const bindings::ib_recv_wr) {
            let first = self.at(0);
            let mut bad_wr = ptr::null();
            let driver_post = |progress: &PostProgress<bindings::ib_recv_wr>| {
                // SAFETY: The chain is valid while `self` is borrowed, `progress` is new.
                driver(unsafe { RecvWrs::new(first, *qp.serial(), progress) })
            };
            // SAFETY: `bad_wr` is valid for writes.
            let errno = unsafe { post(first, &mut bad_wr, driver_post) };
            (errno, bad_wr)
        }
    }

    /// What a post told the consumer is what the driver took, whatever the driver returns: a
    /// driver failing after taking every ID has posted everything (the consumer must not free
    /// what will complete), one failing after taking the first ID has posted that one only.
    #[test]
    fn bad_wr_follows_the_ids_taken() -> Result {
        let dev_storage = DeviceStorage::new_for_test(FakeDriver)?;
        let dev = dev_storage.test_device();
        let cqs = FakeCqs::new()?;
        let (_mem, raw) = qp_memory(dev, &cqs)?;
        // SAFETY: Fresh memory; the QP is used while `_mem` lives.
        let qp = unsafe { create(raw) };
        let chain = Chain::<3>::new()?;
        let mut held = KVec::<WrId>::new();

        // Every ID taken, then an error (before, `PostError { index: 0 }` made `bad_wr` the first
        // request and the post fail): posted, all three.
        let (errno, bad) = chain.post(qp, |wrs| {
            for wr in wrs {
                held.push(wr.into_wr_id(), GFP_ATOMIC)?;
            }
            Err(ENOMEM)
        });
        assert_eq!((errno, bad), (0, ptr::null()));
        assert_eq!(held.len(), 3);

        // The first ID taken, then an error: the second request failed.
        let (errno, bad) = chain.post(qp, |mut wrs| {
            let wr = wrs.next().ok_or(EINVAL)?;
            held.push(wr.into_wr_id(), GFP_ATOMIC)?;
            Err(ENOMEM)
        });
        assert_eq!((errno, bad), (ENOMEM.to_errno(), chain.at(1)));

        // A request dropped without its ID taken ends the iteration: the third cannot be taken
        // past the second, which is the one that failed.
        let (errno, bad) = chain.post(qp, |mut wrs| {
            let first = wrs.next().ok_or(EINVAL)?;
            held.push(first.into_wr_id(), GFP_ATOMIC)?;
            // The second, dropped without its ID taken.
            if wrs.next().is_none() {
                return Err(EINVAL);
            }
            if let Some(third) = wrs.next() {
                held.push(third.into_wr_id(), GFP_ATOMIC)?;
            }
            Err(EAGAIN)
        });
        assert_eq!((errno, bad), (EAGAIN.to_errno(), chain.at(1)));

        // Success with the third ID left: the third failed.
        let (errno, bad) = chain.post(qp, |wrs| {
            for wr in wrs.take(2) {
                held.push(wr.into_wr_id(), GFP_ATOMIC)?;
            }
            Ok(())
        });
        assert_eq!((errno, bad), (EINVAL.to_errno(), chain.at(2)));
        assert_eq!(held.len(), 3 + 1 + 1 + 2);

        drop(held);
        // SAFETY: Created above, no longer used.
        unsafe { destroy(raw) };
        Ok(())
    }

    /// Takes the first ID of a post of `chain` to `qp`.
    fn take_id(chain: &Chain<3>, qp: &Qp<FakeDriver>) -> Result<WrId> {
        let mut id = None;
        chain.post(qp, |mut wrs| {
            id = wrs.next().map(|wr| wr.into_wr_id());
            Err(EAGAIN)
        });
        id.ok_or(EINVAL)
    }

    fn completion(wr_id: WrId) -> WorkCompletion {
        WorkCompletion::new(wr_id, WcStatus::Success, WcOpcode::Recv)
    }

    /// Entry `i` of the completions a sink wrote.
    ///
    /// # Safety
    ///
    /// The sink must have written at least `i + 1` entries to `wcs`.
    unsafe fn written(wcs: &[MaybeUninit<bindings::ib_wc>; 2], i: usize) -> (u32, u32, u32) {
        // SAFETY: Entry `i` was written (guaranteed by the caller).
        let wc = unsafe { wcs[i].assume_init_ref() };
        (wc.status, wc.opcode, wc.byte_len)
    }

    /// A completion counting more bytes than the request's buffers hold fails with
    /// `LOC_LEN_ERR` and no count (the consumer would read past its buffer); one within them is
    /// written as it is. Before, any count was written.
    #[test]
    fn byte_len_beyond_the_buffers_fails() -> Result {
        let dev_storage = DeviceStorage::new_for_test(FakeDriver)?;
        let dev = dev_storage.test_device();
        let cqs = FakeCqs::new()?;
        let (_mem, raw) = qp_memory(dev, &cqs)?;
        // SAFETY: Fresh memory; the QP is used while `_mem` lives.
        let qp = unsafe { create(raw) };
        let chain = Chain::<3>::new()?;
        let mut wcs = KBox::new(
            [const { MaybeUninit::<bindings::ib_wc>::uninit() }; 2],
            GFP_KERNEL,
        )?;
        // SAFETY: `wcs` holds two entries, valid for writes while the sink lives.
        let mut sink = unsafe { WcSink::new(dev, cqs.recv(), wcs.as_mut_ptr().cast(), 2) };
        let fits = WorkCompletion {
            byte_len: POSTED_LEN,
            ..completion(take_id(&chain, qp)?)
        };
        let too_long = WorkCompletion {
            byte_len: POSTED_LEN + 1,
            ..completion(take_id(&chain, qp)?)
        };
        assert!(sink.push_for(qp, fits));
        assert!(sink.push_for(qp, too_long));
        assert_eq!(sink.len(), 2);

        let (success, recv) = (WcStatus::Success.as_raw(), WcOpcode::Recv.as_raw());
        // SAFETY: The sink wrote two entries.
        let (first, second) = unsafe { (written(&wcs, 0), written(&wcs, 1)) };
        assert_eq!(first, (success, recv, POSTED_LEN));
        assert_eq!(second, (WcStatus::LocLenErr.as_raw(), recv, 0));

        // SAFETY: Created above, no longer used.
        unsafe { destroy(raw) };
        Ok(())
    }

    /// A successful completion of a receive with a send's opcode fails (consumers tell receives
    /// from sends by it); a failed one is given its queue's opcode. Before, both were written as
    /// they came.
    #[test]
    fn opcode_of_the_other_queue_fails() -> Result {
        let dev_storage = DeviceStorage::new_for_test(FakeDriver)?;
        let dev = dev_storage.test_device();
        let cqs = FakeCqs::new()?;
        let (_mem, raw) = qp_memory(dev, &cqs)?;
        // SAFETY: Fresh memory; the QP is used while `_mem` lives.
        let qp = unsafe { create(raw) };
        let chain = Chain::<3>::new()?;
        let mut wcs = KBox::new(
            [const { MaybeUninit::<bindings::ib_wc>::uninit() }; 2],
            GFP_KERNEL,
        )?;
        // SAFETY: `wcs` holds two entries, valid for writes while the sink lives.
        let mut sink = unsafe { WcSink::new(dev, cqs.recv(), wcs.as_mut_ptr().cast(), 2) };
        let id = take_id(&chain, qp)?;
        assert!(sink.push_for(
            qp,
            WorkCompletion::new(id, WcStatus::Success, WcOpcode::Send)
        ));
        let id = take_id(&chain, qp)?;
        let flushed = WorkCompletion::new(id, WcStatus::WrFlushErr, WcOpcode::RdmaRead);
        assert!(sink.push_for(qp, flushed));

        let recv = WcOpcode::Recv.as_raw();
        // SAFETY: The sink wrote two entries.
        let (first, second) = unsafe { (written(&wcs, 0), written(&wcs, 1)) };
        assert_eq!(first, (WcStatus::GeneralErr.as_raw(), recv, 0));
        assert_eq!(second, (WcStatus::WrFlushErr.as_raw(), recv, 0));

        // SAFETY: Created above, no longer used.
        unsafe { destroy(raw) };
        Ok(())
    }

    /// An ID posted to QP A is refused as a completion of QP B (whose consumer would take it
    /// for one of its own pointers), and accepted for A. Before, it was written for B.
    #[test]
    fn id_of_another_qp_refused() -> Result {
        let dev_storage = DeviceStorage::new_for_test(FakeDriver)?;
        let dev = dev_storage.test_device();
        let cqs = FakeCqs::new()?;
        let (_mem_a, raw_a) = qp_memory(dev, &cqs)?;
        let (_mem_b, raw_b) = qp_memory(dev, &cqs)?;
        // SAFETY: Fresh memory; the QPs are used while their memory lives.
        let (qp_a, qp_b) = unsafe { (create(raw_a), create(raw_b)) };
        let chain = Chain::<3>::new()?;
        let mut wcs = KBox::<[bindings::ib_wc; 2]>::new_uninit(GFP_KERNEL)?;
        // SAFETY: `wcs` holds two entries, valid for writes while the sink lives.
        let mut sink = unsafe { WcSink::new(dev, cqs.recv(), wcs.as_mut_ptr().cast(), 2) };

        assert!(!sink.push_for(qp_b, completion(take_id(&chain, qp_a)?)));
        assert!(sink.is_empty());
        assert!(sink.push_for(qp_a, completion(take_id(&chain, qp_a)?)));
        assert!(sink.push_for(qp_b, completion(take_id(&chain, qp_b)?)));
        assert_eq!(sink.len(), 2);

        // SAFETY: Created above, no longer used.
        unsafe {
            destroy(raw_a);
            destroy(raw_b);
        }
        Ok(())
    }

    /// An ID kept past the destruction of its QP is refused for the QP created next in the same
    /// memory (same address, same handle), which gets a serial of its own. Before, it was
    /// written for the new QP.
    #[test]
    fn id_of_a_destroyed_qp_refused() -> Result {
        let dev_storage = DeviceStorage::new_for_test(FakeDriver)?;
        let dev = dev_storage.test_device();
        let cqs = FakeCqs::new()?;
        let (_mem, raw) = qp_memory(dev, &cqs)?;
        let chain = Chain::<3>::new()?;
        // SAFETY: Fresh memory; the QP is used until destroyed below.
        let old = unsafe { create(raw) };
        let kept = take_id(&chain, old)?;
        // SAFETY: Created above, no longer used.
        unsafe { destroy(raw) };
        // SAFETY: The memory holds no QP any more; the new one is used while `_mem` lives.
        let new = unsafe { create(raw) };
        let mut wcs = KBox::<[bindings::ib_wc; 2]>::new_uninit(GFP_KERNEL)?;
        // SAFETY: `wcs` holds two entries, valid for writes while the sink lives.
        let mut sink = unsafe { WcSink::new(dev, cqs.recv(), wcs.as_mut_ptr().cast(), 2) };

        assert!(!sink.push_for(new, completion(kept)));
        assert!(sink.is_empty());
        assert!(sink.push_for(new, completion(take_id(&chain, new)?)));

        // SAFETY: Created above, no longer used.
        unsafe { destroy(raw) };
        Ok(())
    }

    /// A receive's ID is refused on the CQ of its QP's send queue (the consumer's handler would
    /// take that CQ's context for its own), and accepted on its receive CQ. Before, a completion
    /// was written on whatever CQ was polled.
    #[test]
    fn id_on_another_cq_refused() -> Result {
        let dev_storage = DeviceStorage::new_for_test(FakeDriver)?;
        let dev = dev_storage.test_device();
        let cqs = FakeCqs::new()?;
        let (_mem, raw) = qp_memory(dev, &cqs)?;
        // SAFETY: Fresh memory; the QP is used while `_mem` lives.
        let qp = unsafe { create(raw) };
        let chain = Chain::<3>::new()?;
        let mut wcs = KBox::<[bindings::ib_wc; 2]>::new_uninit(GFP_KERNEL)?;
        // SAFETY: `wcs` holds two entries, valid for writes while the sink lives.
        let mut on_send_cq = unsafe { WcSink::new(dev, cqs.send(), wcs.as_mut_ptr().cast(), 2) };
        assert!(!on_send_cq.push_for(qp, completion(take_id(&chain, qp)?)));
        assert!(on_send_cq.is_empty());
        // SAFETY: As above; the first sink is no longer used.
        let mut on_recv_cq = unsafe { WcSink::new(dev, cqs.recv(), wcs.as_mut_ptr().cast(), 2) };
        assert!(on_recv_cq.push_for(qp, completion(take_id(&chain, qp)?)));

        // SAFETY: Created above, no longer used.
        unsafe { destroy(raw) };
        Ok(())
    }
}
