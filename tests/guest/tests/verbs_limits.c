// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_limits: the device's reported maxima, asked for through libibverbs
 * the way an application would.
 *
 *   verbs_limits DEVICE DRIVER
 *
 * A depth up to the maximum ibv_query_device() reports must be granted (at
 * least what was asked) and usable; one past it must be refused with EINVAL,
 * never another errno (EFAULT reads as a bad address of the caller's own).
 * Cases:
 *   cq-max, cq-half-max     CQs of max_cqe and max_cqe / 2 entries
 *   cq-over-max             max_cqe + 1 entries: EINVAL
 *   qp-rc-max, qp-ud-max    QPs of max_qp_wr send and receive WRs with max_sge
 *                           SGEs each; the receive queue is then filled: every
 *                           one of the granted receives is accepted and none
 *                           completes (the device keeps them all)
 *   qp-rc-half-max          the same at max_qp_wr / 2
 *   qp-over-max             max_qp_wr + 1 send WRs: EINVAL
 *   srq-max                 an SRQ of max_srq_wr WRs with max_srq_sge SGEs,
 *                           filled the same way
 *   srq-over-max            max_srq_wr + 1 WRs: EINVAL
 *   ud-qp-ex-wr-all-ones    a UD QP through ibv_create_qp_ex() with
 *                           max_send_wr 0xffffffff: must be refused. rdma-core's
 *                           vmw_pvrdma provider rounds the depth with
 *                           align_next_power2(int), which turns 0xffffffff (-1
 *                           as an int) into 1 before the kernel sees it; an
 *                           acceptance granting less than asked is reported as
 *                           "provider-defect" (the driver never sees the value:
 *                           verbs_badinput's qp-recv-wr-all-ones sends it to
 *                           the kernel directly), any other acceptance fails.
 *
 * Prints one line per case: "ok <case>: ...", "provider-defect <case>: ...",
 * "C-driver-errno <case>: ..." (a depth over the maximum that the C driver
 * passes to the device, refused there and returned as EFAULT) or
 * "FAIL <case> [kind]: ...", where kind is refused-within-max (a depth up to
 * the reported maximum was refused with EINVAL, or by the C driver with
 * EFAULT, the errno its command channel gives whatever the device refuses),
 * beyond-ring-pages (such a refusal of a depth whose largest ring needs more
 * pages than QEMU 7.2's pvrdma takes in one ring, STOCK_MAX_RING_PAGES, which
 * its reported maxima do not respect) or wrong (anything else); then "summary: N cases, N ok, N provider-defect,
 * N C-driver-errno, N FAIL". Exits 1 if any case failed.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *driver;
static struct ibv_context *ctx;
static struct ibv_device_attr attr;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
/* Page aligned: the stock device model refuses MRs that are not. */
static char buf[4096] __attribute__((aligned(4096)));

static int n_cases, n_ok, n_defect, n_c_errno, n_fail;

/*
 * QEMU 7.2's pvrdma refuses a ring of more pages than this
 * (PVRDMA_MAX_FAST_REG_PAGES, hw/rdma/vmw/pvrdma_cmd.c): a CQ's, each of a
 * QP's two, an SRQ's. Its stock model reports maxima from a 512-page table, so
 * depths within them can need more (the patched model reports what 128 pages
 * hold: tools/qemu patch 13).
 */
#define STOCK_MAX_RING_PAGES 128

static uint64_t pow2(uint64_t n)
{
    uint64_t p = 1;

    while (p < n) {
        p <<= 1;
    }
    return p;
}

static uint64_t pages(uint64_t bytes)
{
    return (bytes + 4095) / 4096;
}

/*
 * The pages of the rings of a CQ, QP or SRQ, laid out as rdma-core 44's
 * provider lays them out (the device ABI's sizes): depths rounded up to a power
 * of two; a CQ is a page of ring state then 64-byte CQEs; a QP's send WQE is an
 * 80-byte header and 16 bytes a SGE, its receive WQE 16 bytes and 16 a SGE,
 * each rounded up to a power of two; an SRQ is a page of ring state then WQEs
 * of a send WQE's size (seen on the stock model: 2048 WRs of 4 SGEs took 129
 * pages, QEMU's "Got invalid page count for SRQ ring: 129"). Where unsure, a
 * page more: a depth judged to fit does.
 */
/* @sge unused: the signature is the QP's and SRQ's, for ring_fit(). */
static uint64_t cq_pages(uint32_t cqe, uint32_t sge)
{
    (void)sge;
    return 1 + pages(pow2(cqe) * 64);
}

static uint64_t qp_pages(uint32_t wr, uint32_t sge)
{
    uint64_t send = pages(pow2(wr) * pow2(80 + 16 * (uint64_t)sge));
    uint64_t recv = pages(pow2(wr) * pow2(16 + 16 * (uint64_t)sge));

    return send > recv ? send : recv;
}

static uint64_t srq_pages(uint32_t wr, uint32_t sge)
{
    return 1 + pages(pow2(wr) * pow2(80 + 16 * (uint64_t)sge));
}

/*
 * The largest depth up to @max whose rings fit in STOCK_MAX_RING_PAGES
 * (@ring_pages of a depth), a power of two unless @max is smaller; 0 if none.
 */
static uint32_t ring_fit(uint32_t max, uint64_t (*ring_pages)(uint32_t, uint32_t), uint32_t sge)
{
    uint64_t depth = 1;

    if (ring_pages(1, sge) > STOCK_MAX_RING_PAGES) {
        return 0;
    }
    while (depth * 2 <= max && ring_pages((uint32_t)(depth * 2), sge) <= STOCK_MAX_RING_PAGES) {
        depth *= 2;
    }
    /* A depth between the power of two and the maximum rounds up past it. */
    return (uint32_t)depth;
}

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("FAIL setup [wrong]: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(1);
}

static void report(const char *tag, const char *name, const char *fmt, ...)
{
    va_list ap;

    printf("%s %s: ", tag, name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* A failed case: "FAIL <case> [<kind>]: ..." */
static void fail(const char *name, const char *kind, const char *fmt, ...)
{
    va_list ap;

    n_fail++;
    printf("FAIL %s [%s]: ", name, kind);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

#define OK(name, ...) (n_ok++, report("ok", name, __VA_ARGS__))
#define FAIL(name, kind, ...) fail(name, kind, __VA_ARGS__)

/*
 * A depth within the maximum was refused with @err. EINVAL (or, from the C
 * driver, EFAULT: its command channel's errno for anything the device
 * refuses) is a refusal by the device; any other errno is wrong in itself.
 */
static void refused_within_max(const char *name, const char *what, int err, uint64_t ring_pages)
{
    int c_driver = strcmp(driver, "c") == 0;

    if ((err == EINVAL || (err == EFAULT && c_driver)) && ring_pages > STOCK_MAX_RING_PAGES) {
        FAIL(name, "beyond-ring-pages", "%s, within the device's reported maximum, refused: "
             "%s%s; its largest ring needs %llu pages, more than the %d of QEMU 7.2's pvrdma",
             what, strerror(err),
             err == EFAULT ? " (the C driver's errno for any refusal of the device)" : "",
             (unsigned long long)ring_pages, STOCK_MAX_RING_PAGES);
    } else if (err == EINVAL || (err == EFAULT && c_driver)) {
        FAIL(name, "refused-within-max", "%s, within the device's reported maximum, refused: "
             "%s%s (its largest ring needs %llu pages)", what, strerror(err),
             err == EFAULT ? " (the C driver's errno for any refusal of the device)" : "",
             (unsigned long long)ring_pages);
    } else {
        FAIL(name, "wrong", "%s, within the device's reported maximum, refused with %s (a "
             "refusal is EINVAL)", what, strerror(err));
    }
}

/*
 * A create of @what (within the maximum or not) was refused with @err. Over the
 * maximum, EINVAL is right; the C driver's EFAULT there is that driver's (it
 * does not compare user QP depths with max_qp_wr, so the device refuses them,
 * and its command channel turns every refusal into EFAULT): reported as
 * C-driver-errno, not failed.
 */
static void judge_refusal(const char *name, const char *what, int err, int within,
                          uint64_t ring_pages)
{
    if (within) {
        refused_within_max(name, what, err, ring_pages);
    } else if (err == EINVAL) {
        OK(name, "%s refused with EINVAL", what);
    } else if (err == EFAULT && strcmp(driver, "c") == 0) {
        n_c_errno++;
        report("C-driver-errno", name, "%s refused with EFAULT, not EINVAL (the C driver's "
               "errno for any refusal of the device)", what);
    } else {
        FAIL(name, "wrong", "%s refused with %s, not EINVAL", what, strerror(err));
    }
}

/*
 * Posts @granted receives, one at a time: every one must be accepted. Then
 * none may have completed on @recv_cq (in error): the device kept them all
 * (an SRQ without a QP has no CQ to complete on). (The device
 * hands each receive to its backend when its doorbell rings, so the ring
 * itself never fills and one more would be accepted too.)
 */
static int check_fill(const char *name, struct ibv_qp *qp, struct ibv_srq *srq, uint32_t granted,
                      struct ibv_cq *recv_cq)
{
    struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
    struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
    struct ibv_wc wc[16];
    int err = 0, polled;
    uint32_t n;

    for (n = 0; n < granted; n++) {
        wr.wr_id = n;
        err = qp ? ibv_post_recv(qp, &wr, &bad) : ibv_post_srq_recv(srq, &wr, &bad);
        if (err) {
            break;
        }
    }
    if (n != granted) {
        FAIL(name, "wrong", "%u receives granted, receive %u refused: %s", granted, n + 1,
             strerror(err));
        return -1;
    }
    usleep(200 * 1000);
    polled = recv_cq ? ibv_poll_cq(recv_cq, 16, wc) : 0;
    if (polled != 0) {
        FAIL(name, "wrong", "%d of the %u receives completed without a message (first status: "
             "%s)", polled, granted, polled > 0 ? ibv_wc_status_str(wc[0].status) : "poll failed");
        return -1;
    }
    return 0;
}

static void cq_case(const char *name, uint32_t cqe, int within)
{
    struct ibv_cq *c;
    char what[64];

    n_cases++;
    snprintf(what, sizeof(what), "a CQ of %u entries (max_cqe %d)", cqe, attr.max_cqe);
    errno = 0;
    c = ibv_create_cq(ctx, (int)cqe, NULL, NULL, 0);
    if (!c) {
        judge_refusal(name, what, errno, within, cq_pages(cqe, 0));
        return;
    }
    if (!within) {
        FAIL(name, "wrong", "%s accepted (%d entries)", what, c->cqe);
    } else if (c->cqe < (int)cqe) {
        FAIL(name, "wrong", "%s granted only %d", what, c->cqe);
    } else {
        OK(name, "%s granted %d", what, c->cqe);
    }
    if (ibv_destroy_cq(c)) {
        FAIL(name, "wrong", "destroying %s failed: %s", what, strerror(errno));
    }
}

/* Moves @qp to INIT (the provider refuses receives in RESET). */
static int to_init(struct ibv_qp *qp)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

    mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
    return ibv_modify_qp(qp, &a, mask);
}

static void qp_case(const char *name, enum ibv_qp_type type, uint32_t wr, int within)
{
    /* A CQ of its own: completions of another case's QPs cannot reach it. */
    struct ibv_cq *qp_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr init = {
        .send_cq = qp_cq,
        .recv_cq = qp_cq,
        .qp_type = type,
        .cap = {
            .max_send_wr = wr,
            .max_recv_wr = wr,
            .max_send_sge = (uint32_t)attr.max_sge,
            .max_recv_sge = (uint32_t)attr.max_sge,
        },
    };
    struct ibv_qp *qp;
    char what[128];

    n_cases++;
    if (!qp_cq) {
        FAIL(name, "wrong", "ibv_create_cq(16) for the QP failed: %s", strerror(errno));
        return;
    }
    snprintf(what, sizeof(what), "a%s QP of %u send and receive WRs of %d SGEs (max_qp_wr %d)",
             type == IBV_QPT_UD ? " UD" : "n RC", wr, attr.max_sge, attr.max_qp_wr);
    errno = 0;
    qp = ibv_create_qp(pd, &init);
    if (!qp) {
        judge_refusal(name, what, errno, within, qp_pages(wr, (uint32_t)attr.max_sge));
        ibv_destroy_cq(qp_cq);
        return;
    }
    /* ibv_create_qp() wrote the granted capabilities back into init.cap. */
    if (!within) {
        FAIL(name, "wrong", "%s accepted", what);
    } else if (init.cap.max_send_wr < wr || init.cap.max_recv_wr < wr) {
        FAIL(name, "wrong", "%s granted only %u send and %u receive WRs", what,
             init.cap.max_send_wr, init.cap.max_recv_wr);
    } else if (to_init(qp)) {
        FAIL(name, "wrong", "%s: modify to INIT failed: %s", what, strerror(errno));
    } else if (check_fill(name, qp, NULL, init.cap.max_recv_wr, qp_cq) == 0) {
        OK(name, "%s granted %u/%u, its receive queue took %u receives", what,
           init.cap.max_send_wr, init.cap.max_recv_wr, init.cap.max_recv_wr);
    }
    if (ibv_destroy_qp(qp)) {
        FAIL(name, "wrong", "destroying %s failed: %s", what, strerror(errno));
    }
    if (ibv_destroy_cq(qp_cq)) {
        FAIL(name, "wrong", "destroying the CQ of %s failed: %s", what, strerror(errno));
    }
}

static void srq_case(const char *name, uint32_t wr, int within)
{
    struct ibv_srq_init_attr init = {
        .attr = { .max_wr = wr, .max_sge = (uint32_t)attr.max_srq_sge },
    };
    struct ibv_srq *srq;
    char what[96];

    n_cases++;
    snprintf(what, sizeof(what), "an SRQ of %u WRs of %d SGEs (max_srq_wr %d)", wr,
             attr.max_srq_sge, attr.max_srq_wr);
    errno = 0;
    srq = ibv_create_srq(pd, &init);
    if (!srq) {
        judge_refusal(name, what, errno, within, srq_pages(wr, (uint32_t)attr.max_srq_sge));
        return;
    }
    /* ibv_create_srq() wrote the granted attributes back into init.attr. */
    if (!within) {
        FAIL(name, "wrong", "%s accepted", what);
    } else if (init.attr.max_wr < wr) {
        FAIL(name, "wrong", "%s granted only %u WRs", what, init.attr.max_wr);
    } else if (check_fill(name, NULL, srq, init.attr.max_wr, NULL) == 0) {
        OK(name, "%s granted %u, took %u receives", what, init.attr.max_wr, init.attr.max_wr);
    }
    if (ibv_destroy_srq(srq)) {
        FAIL(name, "wrong", "destroying %s failed: %s", what, strerror(errno));
    }
}

static void ud_qp_ex_all_ones(const char *name)
{
    struct ibv_qp_init_attr_ex init = {
        .send_cq = cq,
        .recv_cq = cq,
        .qp_type = IBV_QPT_UD,
        .comp_mask = IBV_QP_INIT_ATTR_PD,
        .pd = pd,
        .cap = { .max_send_wr = 0xffffffffu, .max_recv_wr = 1, .max_send_sge = 1,
                 .max_recv_sge = 1 },
    };
    struct ibv_qp *qp;

    n_cases++;
    errno = 0;
    qp = ibv_create_qp_ex(ctx, &init);
    if (!qp) {
        OK(name, "a UD QP of 0xffffffff send WRs refused: %s", strerror(errno));
        return;
    }
    if (init.cap.max_send_wr < 0xffffffffu) {
        n_defect++;
        report("provider-defect", name, "a UD QP of 0xffffffff send WRs accepted with %u: "
               "rdma-core's vmw_pvrdma provider rounds the depth with align_next_power2(int), "
               "which turns 0xffffffff into 1 before the kernel sees it", init.cap.max_send_wr);
    } else {
        FAIL(name, "wrong", "a UD QP of 0xffffffff send WRs accepted");
    }
    if (ibv_destroy_qp(qp)) {
        FAIL(name, "wrong", "destroying the UD QP failed: %s", strerror(errno));
    }
}

static void setup(const char *dev_name)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    int i;

    if (!list) {
        die("ibv_get_device_list: %s", strerror(errno));
    }
    for (i = 0; list[i]; i++) {
        if (strcmp(ibv_get_device_name(list[i]), dev_name) == 0) {
            ctx = ibv_open_device(list[i]);
            break;
        }
    }
    ibv_free_device_list(list);
    if (!ctx) {
        die("cannot open %s", dev_name);
    }
    if (ibv_query_device(ctx, &attr)) {
        die("ibv_query_device: %s", strerror(errno));
    }
    printf("device: max_cqe %d, max_qp_wr %d, max_sge %d, max_srq_wr %d, max_srq_sge %d\n",
           attr.max_cqe, attr.max_qp_wr, attr.max_sge, attr.max_srq_wr, attr.max_srq_sge);
    if (attr.max_cqe < 2 || attr.max_qp_wr < 2 || attr.max_sge < 1 || attr.max_srq_wr < 1 ||
        attr.max_srq_sge < 1) {
        die("the device reports no room for the cases");
    }
    pd = ibv_alloc_pd(ctx);
    if (!pd) {
        die("ibv_alloc_pd: %s", strerror(errno));
    }
    cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    if (!cq) {
        die("ibv_create_cq(16): %s", strerror(errno));
    }
    mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    if (!mr) {
        die("ibv_reg_mr: %s", strerror(errno));
    }
}

int main(int argc, char **argv)
{
    uint32_t max_cqe, max_qp_wr, max_srq_wr, fit;

    if (argc != 3) {
        fprintf(stderr, "usage: %s DEVICE DRIVER\n", argv[0]);
        return 2;
    }
    driver = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    setup(argv[1]);
    max_cqe = (uint32_t)attr.max_cqe;
    max_qp_wr = (uint32_t)attr.max_qp_wr;
    max_srq_wr = (uint32_t)attr.max_srq_wr;

    cq_case("cq-max", max_cqe, 1);
    cq_case("cq-half-max", max_cqe / 2, 1);
    cq_case("cq-over-max", max_cqe + 1, 0);
    qp_case("qp-rc-max", IBV_QPT_RC, max_qp_wr, 1);
    qp_case("qp-rc-half-max", IBV_QPT_RC, max_qp_wr / 2, 1);
    qp_case("qp-ud-max", IBV_QPT_UD, max_qp_wr, 1);
    qp_case("qp-over-max", IBV_QPT_RC, max_qp_wr + 1, 0);
    srq_case("srq-max", max_srq_wr, 1);
    srq_case("srq-over-max", max_srq_wr + 1, 0);
    /*
     * The largest depths whose rings QEMU 7.2's pvrdma takes, and one less (a
     * depth each driver rounds up to a power of two): granted on both models,
     * whatever the maxima (the stock model's are not powers of two).
     */
    fit = ring_fit(max_cqe, cq_pages, 0);
    if (fit) {
        cq_case("cq-ring-fit", fit, 1);
        cq_case("cq-ring-fit-less-one", fit - 1 ? fit - 1 : 1, 1);
    }
    fit = ring_fit(max_qp_wr, qp_pages, (uint32_t)attr.max_sge);
    if (fit) {
        qp_case("qp-rc-ring-fit", IBV_QPT_RC, fit, 1);
        qp_case("qp-rc-ring-fit-less-one", IBV_QPT_RC, fit - 1 ? fit - 1 : 1, 1);
    }
    fit = ring_fit(max_srq_wr, srq_pages, (uint32_t)attr.max_srq_sge);
    if (fit) {
        srq_case("srq-ring-fit", fit, 1);
        srq_case("srq-ring-fit-less-one", fit - 1 ? fit - 1 : 1, 1);
    }
    ud_qp_ex_all_ones("ud-qp-ex-wr-all-ones");

    if (ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx)) {
        die("teardown: %s", strerror(errno));
    }
    printf("summary: %d cases, %d ok, %d provider-defect, %d C-driver-errno, %d FAIL\n", n_cases,
           n_ok, n_defect, n_c_errno, n_fail);
    return n_fail ? 1 : 0;
}
