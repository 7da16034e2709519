// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_resources: many verbs objects at once, used, destroyed, twice over.
 *
 *   verbs_resources DEVICE GID_INDEX [ROUNDS [CHURN]]
 *
 * Each round opens DEVICE and creates, in one PD:
 *   - NUM_CQ (256) CQs;
 *   - NUM_QP (256) QPs, QP i with CQ i as its send and receive CQ: the first
 *     NUM_RC (224) RC, the last NUM_UD (32) UD;
 *   - MRs of 4 KiB, 8 KiB, ... doubling up to the largest size the device
 *     (max_mr_size) and the guest's free memory allow, each on its own
 *     page-aligned buffer, plus one 2 MiB MR for the QPs' messages.
 * It then uses them: every QP moves to RTS, QPs 2k and 2k+1 connected to
 * each other over the GID at GID_INDEX (loopback); each QP SENDs one message
 * to its partner and receives one from it (RC: up to 4000 bytes; UD: a
 * datagram after the 40-byte GRH); every received byte is checked, and the
 * bytes after it in the buffer are checked untouched. Through the RC pair
 * 0/1, every ladder MR carries one message from its first half into its
 * second half (SEND/RECV with both SGEs in that MR), and the largest also
 * carries 64 KiB messages at several offsets (page and page-table
 * boundaries, unaligned) and one message of half its size.
 * Then everything is destroyed, checking that every destroy returns 0, and
 * the device closed. ROUNDS (default 2) repeats the round from a fresh
 * open. Last, a churn phase creates and destroys PDs, CQs and MRs in
 * batches (a fresh context each) until more of each were made than the
 * device can hold at once, so a leaked device handle or driver counter
 * makes a create fail; QPs join the batches only while their numbers stay
 * below max_qp (see qpn_room(): both rdma-core's provider and the C driver
 * index max_qp-entry tables by QPN; the lab's device model gives each new QP
 * the lowest free number, so this holds unless a device numbers QPs up).
 *
 * Only SEND and RECV are used: the stock QEMU 7.2 device model turns every
 * work request into a SEND (see /work/shared/reference/qemu-pvrdma-7.2.md),
 * so this runs on both the stock and the lab's patched device model.
 * MR buffers are page aligned: the stock model refuses MRs that are not.
 *
 * Prints "ok: ..." per phase and "largest MR: ..." with the reason the
 * ladder stops; on the first failure "FAIL: ..." and exits 1; at the end
 * "all checks passed".
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum {
    NUM_CQ = 256,
    NUM_QP = 256,
    NUM_UD = 32,
    NUM_RC = NUM_QP - NUM_UD,
    CQ_DEPTH = 8,
    QP_DEPTH = 4,
    /* Per QP: a send slot and a receive slot of this size in the message MR. */
    SLOT = 4096,
    RC_MAX_MSG = 4000,
    UD_MAX_MSG = 1000,
    GRH_BYTES = 40,
    UD_QKEY = 0x11111111,
    POLL_MS = 30000,
    BIG_POLL_MS = 120000,
    LADDER_MAX = 48,
};

#define MIN_MR ((uint64_t)4096)
#define CANARY 0xee

static const char *dev_name;
static int gid_index;
static long page_size;

/* One round's objects. */
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cqs[NUM_CQ];
static struct ibv_qp *qps[NUM_QP];
static struct ibv_ah *ah;
static union ibv_gid gid;
static struct ibv_device_attr dev_attr;
static uint8_t *msg_buf;
static struct ibv_mr *msg_mr;
static size_t msg_len;
static int ladder_count;
static uint64_t ladder_size[LADDER_MAX];
static uint8_t *ladder_buf[LADDER_MAX];
static struct ibv_mr *ladder_mr[LADDER_MAX];
/* The highest QPN the device handed out so far (see qpn_room()). */
static uint32_t qpn_high;

static void fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    exit(1);
}

static void ok(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("ok: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* errno's name, for messages ("ENOMEM"), or its number. */
static const char *errno_name(int e)
{
    static char other[32];

    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ENOSPC: return "ENOSPC";
    case ERANGE: return "ERANGE";
    case ENOSYS: return "ENOSYS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ETIMEDOUT: return "ETIMEDOUT";
    default:
        snprintf(other, sizeof(other), "errno %d", e);
        return other;
    }
}

/*
 * Whether @n more QPs may be created. rdma-core's vmw_pvrdma provider keeps
 * its QPs in a table of qp_tab_size (= max_qp) entries indexed by QPN & 0xffff,
 * and the C driver clears dev->qp_tbl[QPN] (no modulo) when a QP is
 * destroyed: a QPN >= max_qp writes past both tables. The lab's device model
 * hands out QPNs in increasing order (its software verbs library numbers
 * QPs from 0x11 up, never reusing a number until 2^24), so the number of QPs
 * one guest can create is bounded by max_qp, not by how many exist at once.
 */
static int qpn_room(int n)
{
    return (uint64_t)qpn_high + (uint64_t)n < (uint64_t)dev_attr.max_qp;
}

/* Records a new QP's number; fails if it is past the provider's QP table. */
static void note_qpn(struct ibv_qp *qp, const char *what)
{
    if (qp->qp_num >= (uint32_t)dev_attr.max_qp) {
        fail("%s: QPN %u is not below max_qp %d: rdma-core's provider and the C driver index "
             "tables of max_qp entries by QPN", what, qp->qp_num, dev_attr.max_qp);
    }
    if (qp->qp_num > qpn_high) {
        qpn_high = qp->qp_num;
    }
}

/* The byte at @i of message @seed: varies with both, never CANARY's period. */
static uint8_t pattern(uint32_t seed, uint64_t i)
{
    return (uint8_t)(seed * 131u + i * 7u + (i >> 9) * 13u + 1u);
}

static void fill(uint8_t *p, uint64_t len, uint32_t seed)
{
    for (uint64_t i = 0; i < len; i++) {
        p[i] = pattern(seed, i);
    }
}

/* Checks every byte of a received message; fails naming the first bad one. */
static void check_bytes(const uint8_t *p, uint64_t len, uint32_t seed, const char *what)
{
    for (uint64_t i = 0; i < len; i++) {
        if (p[i] != pattern(seed, i)) {
            fail("%s: byte %llu of %llu is 0x%02x, sent 0x%02x", what,
                 (unsigned long long)i, (unsigned long long)len, p[i], pattern(seed, i));
        }
    }
}

/* Checks that nothing was written after a message (bytes still CANARY). */
static void check_canary(const uint8_t *p, uint64_t len, const char *what)
{
    for (uint64_t i = 0; i < len; i++) {
        if (p[i] != CANARY) {
            fail("%s: byte %llu past the message was overwritten (0x%02x)", what,
                 (unsigned long long)i, p[i]);
        }
    }
}

/* Page-aligned anonymous memory, or fail. */
static uint8_t *map_pages(uint64_t len, const char *what)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        fail("mmap %llu bytes for %s: %s", (unsigned long long)len, what, strerror(errno));
    }
    return p;
}

/* Polls @cq until @n completions arrived or @ms passed; returns how many. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms, const char *what)
{
    long deadline = now_ms() + ms;
    int got = 0;

    while (got < n) {
        int r = ibv_poll_cq(cq, n - got, wc + got);

        if (r < 0) {
            fail("%s: ibv_poll_cq returned %d", what, r);
        }
        got += r;
        if (got < n) {
            if (now_ms() > deadline) {
                fail("%s: %d of %d completions within %d ms", what, got, n, ms);
            }
            if (r == 0) {
                struct timespec pause = { 0, 200000 };

                nanosleep(&pause, NULL);
            }
        }
    }
    return got;
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *addr, uint32_t len,
                      uint64_t wr_id)
{
    struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
    int r = ibv_post_recv(qp, &wr, &bad);

    if (r) {
        fail("ibv_post_recv on QP %u, wr_id %llu: %s", qp->qp_num,
             (unsigned long long)wr_id, errno_name(r));
    }
}

/* Posts a signaled SEND; for a UD QP @dest_qpn names the destination QP. */
static void post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *addr, uint32_t len,
                      uint64_t wr_id, uint32_t dest_qpn)
{
    struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
    struct ibv_send_wr wr = {
        .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
        .send_flags = IBV_SEND_SIGNALED,
    }, *bad;
    int r;

    if (qp->qp_type == IBV_QPT_UD) {
        wr.wr.ud.ah = ah;
        wr.wr.ud.remote_qpn = dest_qpn;
        wr.wr.ud.remote_qkey = UD_QKEY;
    }
    r = ibv_post_send(qp, &wr, &bad);
    if (r) {
        fail("ibv_post_send on QP %u, wr_id %llu: %s", qp->qp_num,
             (unsigned long long)wr_id, errno_name(r));
    }
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *state)
{
    int r = ibv_modify_qp(qp, a, mask);

    if (r) {
        fail("modify QP %u (%s) to %s: %s", qp->qp_num,
             qp->qp_type == IBV_QPT_RC ? "RC" : "UD", state, errno_name(r));
    }
}

static void connect_rc(struct ibv_qp *qp, uint32_t dest_qpn)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
           "INIT");

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = gid_index;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR");

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

static void ready_ud(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = UD_QKEY;
    modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "INIT");
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    modify(qp, &a, IBV_QP_STATE, "RTR");
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
}

/* MemAvailable from /proc/meminfo, in bytes (0 if unknown). */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kib = 0;

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
            break;
        }
    }
    fclose(f);
    return (uint64_t)kib * 1024;
}

static void open_device(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_port_attr port;

    ctx = NULL;
    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), dev_name)) {
            ctx = ibv_open_device(list[i]);
            if (!ctx) {
                fail("ibv_open_device %s: %s", dev_name, strerror(errno));
            }
        }
    }
    if (list) {
        ibv_free_device_list(list);
    }
    if (!ctx) {
        fail("no device %s", dev_name);
    }
    if (ibv_query_device(ctx, &dev_attr)) {
        fail("ibv_query_device: %s", strerror(errno));
    }
    if (ibv_query_port(ctx, 1, &port)) {
        fail("ibv_query_port: %s", strerror(errno));
    }
    if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
        fail("ibv_query_gid %d: %s", gid_index, strerror(errno));
    }
}

/* The sizes of the MR ladder: 4 KiB doubling while the device and RAM allow. */
static void plan_ladder(int round)
{
    uint64_t avail = mem_available();
    /* The ladder's buffers all exist at once (about twice the largest) and
     * are pinned; leave a quarter of the free memory to everything else. */
    uint64_t ram_cap = avail / 4 * 3 / 2;
    uint64_t dev_cap = dev_attr.max_mr_size;
    uint64_t s = MIN_MR;
    const char *why;

    ladder_count = 0;
    while (s <= dev_cap && s <= ram_cap && ladder_count < LADDER_MAX) {
        ladder_size[ladder_count++] = s;
        s *= 2;
    }
    if (ladder_count == 0) {
        fail("no MR size fits: max_mr_size %llu, MemAvailable %llu",
             (unsigned long long)dev_cap, (unsigned long long)avail);
    }
    if (s > dev_cap) {
        why = "the next size exceeds the device's max_mr_size";
    } else if (s > ram_cap) {
        why = "the ladder's buffers (twice the next size) would not fit in the guest's free memory";
    } else {
        why = "the ladder's step limit";
    }
    if (round == 1) {
        printf("largest MR: %llu bytes (%llu MiB), %d sizes from 4 KiB; next size %llu bytes "
               "not tried: %s (device max_mr_size %llu bytes, MemAvailable %llu MiB, "
               "RAM cap for the largest MR %llu MiB)\n",
               (unsigned long long)ladder_size[ladder_count - 1],
               (unsigned long long)(ladder_size[ladder_count - 1] >> 20), ladder_count,
               (unsigned long long)s, why, (unsigned long long)dev_cap,
               (unsigned long long)(avail >> 20), (unsigned long long)(ram_cap >> 20));
        fflush(stdout);
    }
}

static void create_all(int round)
{
    long t0 = now_ms();
    struct ibv_ah_attr ah_attr;

    if (dev_attr.max_cq < NUM_CQ || dev_attr.max_qp < NUM_QP) {
        fail("the device offers max_cq %d, max_qp %d: fewer than the %d CQs and %d QPs "
             "this test needs", dev_attr.max_cq, dev_attr.max_qp, NUM_CQ, NUM_QP);
    }
    pd = ibv_alloc_pd(ctx);
    if (!pd) {
        fail("ibv_alloc_pd: %s", strerror(errno));
    }
    for (int i = 0; i < NUM_CQ; i++) {
        cqs[i] = ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0);
        if (!cqs[i]) {
            fail("round %d: ibv_create_cq %d of %d: %s (device max_cq %d)", round, i + 1,
                 NUM_CQ, errno_name(errno), dev_attr.max_cq);
        }
    }
    ok("round %d: %d CQs of %d entries created (%ld ms)", round, NUM_CQ, CQ_DEPTH,
       now_ms() - t0);

    t0 = now_ms();
    if (!qpn_room(NUM_QP)) {
        fail("round %d: %d more QPs would get QPNs up to %u, past max_qp %d (the highest QPN so "
             "far is %u; see qpn_room() in %s): use fewer rounds", round, NUM_QP,
             qpn_high + NUM_QP, dev_attr.max_qp, qpn_high, __FILE__);
    }
    for (int i = 0; i < NUM_QP; i++) {
        struct ibv_qp_init_attr attr = {
            .send_cq = cqs[i], .recv_cq = cqs[i],
            .qp_type = i < NUM_RC ? IBV_QPT_RC : IBV_QPT_UD,
            .cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = QP_DEPTH,
                     .max_send_sge = 1, .max_recv_sge = 1 },
        };

        qps[i] = ibv_create_qp(pd, &attr);
        if (!qps[i]) {
            fail("round %d: ibv_create_qp %d of %d (%s): %s (device max_qp %d)", round,
                 i + 1, NUM_QP, i < NUM_RC ? "RC" : "UD", errno_name(errno),
                 dev_attr.max_qp);
        }
        note_qpn(qps[i], "ibv_create_qp");
    }
    ok("round %d: %d QPs created (%d RC, %d UD), each on its own CQ (%ld ms)", round,
       NUM_QP, NUM_RC, NUM_UD, now_ms() - t0);

    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.is_global = 1;
    ah_attr.grh.dgid = gid;
    ah_attr.grh.sgid_index = gid_index;
    ah_attr.grh.hop_limit = 1;
    ah_attr.port_num = 1;
    ah = ibv_create_ah(pd, &ah_attr);
    if (!ah) {
        fail("ibv_create_ah for the GID at index %d: %s", gid_index, strerror(errno));
    }

    t0 = now_ms();
    msg_len = 2 * NUM_QP * SLOT;
    msg_buf = map_pages(msg_len, "messages");
    msg_mr = ibv_reg_mr(pd, msg_buf, msg_len, IBV_ACCESS_LOCAL_WRITE);
    if (!msg_mr) {
        fail("ibv_reg_mr of the %zu-byte message buffer: %s", msg_len, errno_name(errno));
    }
    plan_ladder(round);
    for (int k = 0; k < ladder_count; k++) {
        ladder_buf[k] = map_pages(ladder_size[k], "an MR");
        ladder_mr[k] = ibv_reg_mr(pd, ladder_buf[k], ladder_size[k], IBV_ACCESS_LOCAL_WRITE);
        if (!ladder_mr[k]) {
            fail("round %d: ibv_reg_mr of %llu bytes: %s (device max_mr_size %llu)", round,
                 (unsigned long long)ladder_size[k], errno_name(errno),
                 (unsigned long long)dev_attr.max_mr_size);
        }
    }
    ok("round %d: %d MRs registered, 4 KiB to %llu KiB, and a %zu KiB message MR (%ld ms)",
       round, ladder_count, (unsigned long long)(ladder_size[ladder_count - 1] >> 10),
       msg_len >> 10, now_ms() - t0);

    t0 = now_ms();
    for (int i = 0; i < NUM_RC; i++) {
        connect_rc(qps[i], qps[i ^ 1]->qp_num);
    }
    for (int i = NUM_RC; i < NUM_QP; i++) {
        ready_ud(qps[i]);
    }
    ok("round %d: %d RC QPs connected pairwise over GID index %d, %d UD QPs ready, all in "
       "RTS (%ld ms)", round, NUM_RC, gid_index, NUM_UD, now_ms() - t0);
}

static uint8_t *send_slot(int i)
{
    return msg_buf + (size_t)i * SLOT;
}

static uint8_t *recv_slot(int i)
{
    return msg_buf + (size_t)(NUM_QP + i) * SLOT;
}

static uint32_t msg_bytes(int i)
{
    return i < NUM_RC ? 1 + (uint32_t)(i * 251 + 17) % RC_MAX_MSG
                      : 1 + (uint32_t)(i * 97 + 5) % UD_MAX_MSG;
}

/* Every QP sends one message to its partner and receives one from it. */
static void pairs_exchange(int round)
{
    long t0 = now_ms();

    memset(msg_buf, CANARY, msg_len);
    for (int i = 0; i < NUM_QP; i++) {
        fill(send_slot(i), msg_bytes(i), (uint32_t)(round * 1000 + i));
        post_recv(qps[i], msg_mr, recv_slot(i), SLOT, 0x10000u + (unsigned)i);
    }
    for (int i = 0; i < NUM_QP; i++) {
        post_send(qps[i], msg_mr, send_slot(i), msg_bytes(i), 0x20000u + (unsigned)i,
                  qps[i ^ 1]->qp_num);
    }
    for (int i = 0; i < NUM_QP; i++) {
        struct ibv_wc wc[2];
        int partner = i ^ 1;
        uint32_t len = msg_bytes(partner);
        uint32_t grh = i < NUM_RC ? 0 : GRH_BYTES;
        char what[64];
        int seen_send = 0, seen_recv = 0;

        snprintf(what, sizeof(what), "round %d QP %d (%s)", round, i, i < NUM_RC ? "RC" : "UD");
        poll_n(cqs[i], wc, 2, POLL_MS, what);
        for (int w = 0; w < 2; w++) {
            if (wc[w].status != IBV_WC_SUCCESS) {
                fail("%s: wr_id 0x%llx completed with %s (vendor_err 0x%x)", what,
                     (unsigned long long)wc[w].wr_id, ibv_wc_status_str(wc[w].status),
                     wc[w].vendor_err);
            }
            if (wc[w].wr_id == 0x20000u + (unsigned)i && wc[w].opcode == IBV_WC_SEND) {
                seen_send++;
            } else if (wc[w].wr_id == 0x10000u + (unsigned)i && wc[w].opcode == IBV_WC_RECV) {
                seen_recv++;
                if (wc[w].byte_len != grh + len) {
                    fail("%s: received byte_len %u, partner sent %u (+%u GRH)", what,
                         wc[w].byte_len, len, grh);
                }
                if (i >= NUM_RC && wc[w].src_qp != qps[partner]->qp_num) {
                    fail("%s: datagram from QP %u, sent by %u", what, wc[w].src_qp,
                         qps[partner]->qp_num);
                }
            } else {
                fail("%s: unexpected completion wr_id 0x%llx opcode %d", what,
                     (unsigned long long)wc[w].wr_id, wc[w].opcode);
            }
        }
        if (seen_send != 1 || seen_recv != 1) {
            fail("%s: %d send and %d receive completions, wanted 1 and 1", what, seen_send,
                 seen_recv);
        }
        check_bytes(recv_slot(i) + grh, len, (uint32_t)(round * 1000 + partner), what);
        check_canary(recv_slot(i) + grh + len, SLOT - grh - len, what);
    }
    /* Nothing more may arrive. */
    for (int i = 0; i < NUM_QP; i++) {
        struct ibv_wc wc;

        if (ibv_poll_cq(cqs[i], 1, &wc) != 0) {
            fail("round %d: extra completion on CQ %d (wr_id 0x%llx)", round, i,
                 (unsigned long long)wc.wr_id);
        }
    }
    ok("round %d: %d RC and %d UD QPs each sent and received one message, every byte checked "
       "(%ld ms)", round, NUM_RC, NUM_UD, now_ms() - t0);
}

/* One SEND over RC pair 0 -> 1, from @src to @dst of MR @mr; checks it. */
static void transfer(struct ibv_mr *mr, uint8_t *src, uint8_t *dst, uint64_t len,
                     uint32_t seed, uint64_t guard, int ms, const char *what)
{
    struct ibv_wc wc[1];

    fill(src, len, seed);
    memset(dst, CANARY, len + guard);
    post_recv(qps[1], mr, dst, (uint32_t)len, 0x30000u + seed);
    post_send(qps[0], mr, src, (uint32_t)len, 0x40000u + seed, 0);
    poll_n(cqs[0], wc, 1, ms, what);
    if (wc[0].status != IBV_WC_SUCCESS || wc[0].wr_id != 0x40000u + seed) {
        fail("%s: send wr_id 0x%llx status %s", what, (unsigned long long)wc[0].wr_id,
             ibv_wc_status_str(wc[0].status));
    }
    poll_n(cqs[1], wc, 1, ms, what);
    if (wc[0].status != IBV_WC_SUCCESS || wc[0].wr_id != 0x30000u + seed ||
        wc[0].byte_len != len) {
        fail("%s: receive wr_id 0x%llx status %s byte_len %u (sent %llu)", what,
             (unsigned long long)wc[0].wr_id, ibv_wc_status_str(wc[0].status),
             wc[0].byte_len, (unsigned long long)len);
    }
    check_bytes(dst, len, seed, what);
    check_canary(dst + len, guard, what);
}

static void ladder_transfers(int round)
{
    long t0 = now_ms();
    int big = ladder_count - 1;
    uint64_t size = ladder_size[big];
    uint8_t *b = ladder_buf[big];
    char what[96];
    uint32_t seed = (uint32_t)round * 100;

    /* Every MR: its first half into its second half. */
    for (int k = 0; k < ladder_count; k++) {
        uint64_t half = ladder_size[k] / 2;
        uint64_t len = half - 64 < 65536 ? half - 64 : 65536;

        snprintf(what, sizeof(what), "round %d MR of %llu bytes", round,
                 (unsigned long long)ladder_size[k]);
        transfer(ladder_mr[k], ladder_buf[k], ladder_buf[k] + half, len, ++seed, 64,
                 POLL_MS, what);
    }
    ok("round %d: each of the %d MRs carried a message from its first half into its second "
       "(%ld ms)", round, ladder_count, now_ms() - t0);

    /* The largest MR at several offsets: 64 KiB messages starting unaligned,
     * across page and page-table (2 MiB) boundaries, and at its very end. */
    t0 = now_ms();
    if (size >= 8 * 65536) {
        const uint64_t len = 65536, table = 512 * 4096;
        const struct {
            uint64_t src, dst;
        } at[] = {
            { 0, size / 2 },
            { 4096 - 100, size / 2 + 4096 + 3 },
            { table - 1000, 2 * table - 7 },
            { size / 2 - len - 1, size - len - 1 },
            { size / 4 + 12345, size - len },
        };
        int n = 0;

        for (size_t j = 0; j < sizeof(at) / sizeof(at[0]); j++) {
            uint64_t src = at[j].src, dst = at[j].dst, guard = 64;

            /* Offsets that do not fit this MR (a small largest MR) are skipped. */
            if (src + len > size || dst + len > size || !(src + len <= dst || dst + len <= src)) {
                continue;
            }
            if (size - (dst + len) < guard) {
                guard = size - (dst + len);
            }
            snprintf(what, sizeof(what), "round %d largest MR, 64 KiB from offset %llu to %llu",
                     round, (unsigned long long)src, (unsigned long long)dst);
            transfer(ladder_mr[big], b + src, b + dst, len, ++seed, guard, POLL_MS, what);
            n++;
        }
        ok("round %d: the %llu-byte MR carried 64 KiB messages at %d offsets (unaligned, "
           "across page and page-table boundaries, at its end) (%ld ms)", round,
           (unsigned long long)size, n, now_ms() - t0);

        /* Half the largest MR in one message. */
        t0 = now_ms();
        snprintf(what, sizeof(what), "round %d largest MR, one %llu-byte message", round,
                 (unsigned long long)(size / 2));
        transfer(ladder_mr[big], b, b + size / 2, size / 2, ++seed, 0, BIG_POLL_MS, what);
        ok("round %d: one %llu-byte message through the %llu-byte MR, every byte checked "
           "(%ld ms)", round, (unsigned long long)(size / 2), (unsigned long long)size,
           now_ms() - t0);
    }
}

static void destroy_all(int round)
{
    long t0 = now_ms();
    int r;

    for (int i = 0; i < NUM_QP; i++) {
        r = ibv_destroy_qp(qps[i]);
        if (r) {
            fail("round %d: ibv_destroy_qp %d: %s", round, i, errno_name(r));
        }
    }
    r = ibv_destroy_ah(ah);
    if (r) {
        fail("round %d: ibv_destroy_ah: %s", round, errno_name(r));
    }
    for (int k = 0; k < ladder_count; k++) {
        r = ibv_dereg_mr(ladder_mr[k]);
        if (r) {
            fail("round %d: ibv_dereg_mr of %llu bytes: %s", round,
                 (unsigned long long)ladder_size[k], errno_name(r));
        }
        munmap(ladder_buf[k], ladder_size[k]);
    }
    r = ibv_dereg_mr(msg_mr);
    if (r) {
        fail("round %d: ibv_dereg_mr (messages): %s", round, errno_name(r));
    }
    munmap(msg_buf, msg_len);
    for (int i = 0; i < NUM_CQ; i++) {
        r = ibv_destroy_cq(cqs[i]);
        if (r) {
            fail("round %d: ibv_destroy_cq %d: %s", round, i, errno_name(r));
        }
    }
    r = ibv_dealloc_pd(pd);
    if (r) {
        fail("round %d: ibv_dealloc_pd: %s", round, errno_name(r));
    }
    r = ibv_close_device(ctx);
    if (r) {
        fail("round %d: ibv_close_device: %s", round, errno_name(errno));
    }
    ok("round %d: %d QPs, the AH, %d MRs, %d CQs, the PD destroyed (each returned 0), device "
       "closed (%ld ms)", round, NUM_QP, ladder_count + 1, NUM_CQ, now_ms() - t0);
}

/*
 * Handle churn: batches of CHURN_PD PDs, NUM_CQ CQs and CHURN_MR MRs, each
 * created and destroyed in a fresh context, until more of each were created
 * in total than the device can hold at once (max_pd, max_cq, max_mr). A
 * destroy that leaves a device handle or a driver counter behind makes a
 * later create fail. Batches also create NUM_QP QPs while the QPNs allow
 * (qpn_room()): with the lab's device model that is before max_qp QPs were
 * created in all, so QP handles are not churned past max_qp.
 */
static void churn(void)
{
    enum { CHURN_PD = 128, CHURN_MR = 128, MAX_BATCHES = 32 };
    static struct ibv_pd *pds[CHURN_PD];
    static struct ibv_mr *mrs[CHURN_MR];
    long t0 = now_ms();
    int batches = 0, qp_batches = 0, r;
    uint8_t *buf = map_pages(4096, "churn MRs");

    open_device();
    {
        int need[] = {
            dev_attr.max_pd / CHURN_PD + 1, dev_attr.max_cq / NUM_CQ + 1,
            dev_attr.max_mr / CHURN_MR + 1,
        };

        for (size_t j = 0; j < sizeof(need) / sizeof(need[0]); j++) {
            if (need[j] > batches) {
                batches = need[j];
            }
        }
        if (batches > MAX_BATCHES) {
            batches = MAX_BATCHES;
        }
    }
    ibv_close_device(ctx);

    for (int b = 1; b <= batches; b++) {
        open_device();
        for (int j = 0; j < CHURN_PD; j++) {
            pds[j] = ibv_alloc_pd(ctx);
            if (!pds[j]) {
                fail("churn batch %d: ibv_alloc_pd %d: %s (%d PDs allocated before, device "
                     "max_pd %d)", b, j + 1, errno_name(errno), (b - 1) * CHURN_PD,
                     dev_attr.max_pd);
            }
        }
        for (int i = 0; i < NUM_CQ; i++) {
            cqs[i] = ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0);
            if (!cqs[i]) {
                fail("churn batch %d: ibv_create_cq %d: %s (%d CQs created before, device "
                     "max_cq %d)", b, i + 1, errno_name(errno), (b - 1) * NUM_CQ,
                     dev_attr.max_cq);
            }
        }
        int with_qps = qpn_room(NUM_QP);

        qp_batches += with_qps;
        for (int i = 0; with_qps && i < NUM_QP; i++) {
            struct ibv_qp_init_attr attr = {
                .send_cq = cqs[i], .recv_cq = cqs[i], .qp_type = IBV_QPT_RC,
                .cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = QP_DEPTH,
                         .max_send_sge = 1, .max_recv_sge = 1 },
            };

            qps[i] = ibv_create_qp(pds[i % CHURN_PD], &attr);
            if (!qps[i]) {
                fail("churn batch %d: ibv_create_qp %d: %s (%d QPs created before, device "
                     "max_qp %d)", b, i + 1, errno_name(errno), (qp_batches - 1) * NUM_QP,
                     dev_attr.max_qp);
            }
            note_qpn(qps[i], "churn: ibv_create_qp");
        }
        for (int j = 0; j < CHURN_MR; j++) {
            mrs[j] = ibv_reg_mr(pds[j], buf, 4096, IBV_ACCESS_LOCAL_WRITE);
            if (!mrs[j]) {
                fail("churn batch %d: ibv_reg_mr %d: %s (%d MRs registered before, device "
                     "max_mr %d)", b, j + 1, errno_name(errno), (b - 1) * CHURN_MR,
                     dev_attr.max_mr);
            }
        }
        for (int i = 0; with_qps && i < NUM_QP; i++) {
            if ((r = ibv_destroy_qp(qps[i]))) {
                fail("churn batch %d: ibv_destroy_qp %d: %s", b, i, errno_name(r));
            }
        }
        for (int j = 0; j < CHURN_MR; j++) {
            if ((r = ibv_dereg_mr(mrs[j]))) {
                fail("churn batch %d: ibv_dereg_mr %d: %s", b, j, errno_name(r));
            }
        }
        for (int i = 0; i < NUM_CQ; i++) {
            if ((r = ibv_destroy_cq(cqs[i]))) {
                fail("churn batch %d: ibv_destroy_cq %d: %s", b, i, errno_name(r));
            }
        }
        for (int j = 0; j < CHURN_PD; j++) {
            if ((r = ibv_dealloc_pd(pds[j]))) {
                fail("churn batch %d: ibv_dealloc_pd %d: %s", b, j, errno_name(r));
            }
        }
        ibv_close_device(ctx);
    }
    munmap(buf, 4096);
    ok("churn: %d batches of %d PDs, %d CQs, %d MRs created and destroyed (%d, %d, %d in all; "
       "device max_pd %d, max_cq %d, max_mr %d): no handle leaked (%ld ms)", batches, CHURN_PD,
       NUM_CQ, CHURN_MR, batches * CHURN_PD, batches * NUM_CQ, batches * CHURN_MR,
       dev_attr.max_pd, dev_attr.max_cq, dev_attr.max_mr, now_ms() - t0);
    printf("churn: %d of the batches also created and destroyed %d QPs; QPs created in all: "
           "highest QPN %u of max_qp %d (QPNs must stay below max_qp, see qpn_room())\n",
           qp_batches, NUM_QP, qpn_high, dev_attr.max_qp);
}

int main(int argc, char **argv)
{
    int rounds = 2, with_churn = 1;
    long start = now_ms();

    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s DEVICE GID_INDEX [ROUNDS [CHURN (1 or 0)]]\n", argv[0]);
        return 2;
    }
    dev_name = argv[1];
    gid_index = atoi(argv[2]);
    if (argc >= 4) {
        rounds = atoi(argv[3]);
    }
    if (argc == 5) {
        with_churn = atoi(argv[4]);
    }
    if (rounds < 1) {
        fprintf(stderr, "ROUNDS must be at least 1\n");
        return 2;
    }
    page_size = sysconf(_SC_PAGESIZE);
    setvbuf(stdout, NULL, _IOLBF, 0);

    for (int round = 1; round <= rounds; round++) {
        long t0 = now_ms();

        open_device();
        if (round == 1) {
            printf("device %s: max_qp %d, max_cq %d, max_mr %d, max_mr_size %llu, "
                   "max_qp_wr %d, max_cqe %d, max_sge %d, page size %ld\n", dev_name,
                   dev_attr.max_qp, dev_attr.max_cq, dev_attr.max_mr,
                   (unsigned long long)dev_attr.max_mr_size, dev_attr.max_qp_wr,
                   dev_attr.max_cqe, dev_attr.max_sge, page_size);
        }
        create_all(round);
        pairs_exchange(round);
        ladder_transfers(round);
        destroy_all(round);
        ok("round %d of %d done in %ld ms", round, rounds, now_ms() - t0);
    }
    if (with_churn) {
        churn();
    } else {
        printf("churn: not run (CHURN 0)\n");
    }
    printf("all checks passed (%d rounds, %ld ms)\n", rounds, now_ms() - start);
    return 0;
}
