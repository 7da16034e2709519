// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_ops: the work-request semantics the lab's pvrdma patches give the
 * device, checked from user space in one process: two RC QPs of one device
 * connected to each other (same GID), then
 *   SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ (data, opcodes,
 *   immediate data, byte counts), an unsignaled WR (no CQE), completion
 *   events (ARM: next completion; ARM_SOL: not for an RDMA WRITE, yes for a
 *   solicited SEND), unaligned MRs spanning pages, a bad rkey
 *   (IBV_WC_REM_ACCESS_ERR) and a QP moved to ERR (its receives flushed with
 *   IBV_WC_WR_FLUSH_ERR).
 *
 *   verbs_ops DEVICE GID_INDEX
 *
 * Prints "ok: ..." per check; on the first failure "FAIL: ..." and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUF = 8192, CQ_DEPTH = 64, POLL_MS = 10000 };

static void fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(1);
}

static void ok(const char *what)
{
    printf("ok: %s\n", what);
    fflush(stdout);
}

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *channel;
static struct ibv_cq *cq_a, *cq_b;
static struct ibv_qp *qp_a, *qp_b;
static struct ibv_mr *mr_a, *mr_b;
static char *buf_a, *buf_b;
static union ibv_gid gid;
static int gid_index;

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* One completion from @cq within POLL_MS, or fail. */
static struct ibv_wc poll_one(struct ibv_cq *cq, const char *what)
{
    struct ibv_wc wc;
    long deadline = now_ms() + POLL_MS;

    for (;;) {
        int n = ibv_poll_cq(cq, 1, &wc);

        if (n < 0) {
            fail("%s: ibv_poll_cq returned %d", what, n);
        }
        if (n == 1) {
            return wc;
        }
        if (now_ms() > deadline) {
            fail("%s: no completion within %d ms", what, POLL_MS);
        }
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
}

/* No completion on @cq for @ms milliseconds, or fail. */
static void expect_none(struct ibv_cq *cq, int ms, const char *what)
{
    struct ibv_wc wc;
    long deadline = now_ms() + ms;

    while (now_ms() < deadline) {
        if (ibv_poll_cq(cq, 1, &wc) != 0) {
            fail("%s: unexpected completion wr_id %llu status %s opcode %d", what,
                 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
        }
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
}

static void expect_wc(struct ibv_wc wc, uint64_t wr_id, enum ibv_wc_status status,
                      int opcode, const char *what)
{
    if (wc.wr_id != wr_id || wc.status != status) {
        fail("%s: wr_id %llu status %s (%d), wanted wr_id %llu status %s", what,
             (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
             (unsigned long long)wr_id, ibv_wc_status_str(status));
    }
    if (opcode >= 0 && (int)wc.opcode != opcode) {
        fail("%s: opcode %d, wanted %d", what, wc.opcode, opcode);
    }
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, uint32_t len,
                      uint64_t wr_id)
{
    struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

    if (ibv_post_recv(qp, &wr, &bad)) {
        fail("ibv_post_recv wr_id %llu: %s", (unsigned long long)wr_id, strerror(errno));
    }
}

/* Posts one WR from A's buffer at @off; remote fields name B's buffer. */
static void post_send_a(enum ibv_wr_opcode opcode, unsigned int flags, uint32_t off,
                        uint32_t len, uint64_t remote_off, uint32_t rkey, uint32_t imm,
                        uint64_t wr_id)
{
    struct ibv_sge sge = { .addr = (uintptr_t)buf_a + off, .length = len,
                           .lkey = mr_a->lkey };
    struct ibv_send_wr wr = {
        .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = opcode,
        .send_flags = flags, .imm_data = htonl(imm),
    }, *bad;

    wr.wr.rdma.remote_addr = (uintptr_t)buf_b + remote_off;
    wr.wr.rdma.rkey = rkey;
    if (ibv_post_send(qp_a, &wr, &bad)) {
        fail("ibv_post_send opcode %d wr_id %llu: %s", opcode,
             (unsigned long long)wr_id, strerror(errno));
    }
}

static void fill(char *p, uint32_t len, unsigned seed)
{
    for (uint32_t i = 0; i < len; i++) {
        p[i] = (char)(seed + i * 7);
    }
}

static struct ibv_qp *create_qp(struct ibv_cq *cq)
{
    struct ibv_qp_init_attr attr = {
        .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
                 .max_recv_sge = 1 },
    };
    struct ibv_qp *qp = ibv_create_qp(pd, &attr);

    if (!qp) {
        fail("ibv_create_qp: %s", strerror(errno));
    }
    return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                        IBV_ACCESS_REMOTE_READ;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                      IBV_QP_ACCESS_FLAGS)) {
        fail("modify_qp INIT: %s", strerror(errno));
    }

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
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        fail("modify_qp RTR: %s", strerror(errno));
    }

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
        fail("modify_qp RTS: %s", strerror(errno));
    }
}

/*
 * The capabilities ibv_query_qp() reports for @qp, in RTS, are at least what
 * create_qp() asked for and within the device's limits: consumers size their
 * rings by them (SMC-R does, after RTR).
 */
static void check_caps(struct ibv_qp *qp, const char *name)
{
    struct ibv_device_attr dev;
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;

    if (ibv_query_device(ctx, &dev)) {
        fail("ibv_query_device: %s", strerror(errno));
    }
    memset(&a, 0, sizeof(a));
    if (ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_CAP, &init)) {
        fail("ibv_query_qp %s: %s", name, strerror(errno));
    }
    if (a.qp_state != IBV_QPS_RTS || a.cap.max_send_wr < 16 || a.cap.max_recv_wr < 16 ||
        a.cap.max_send_sge < 1 || a.cap.max_recv_sge < 1 ||
        a.cap.max_send_wr > (uint32_t)dev.max_qp_wr ||
        a.cap.max_recv_wr > (uint32_t)dev.max_qp_wr ||
        a.cap.max_send_sge > (uint32_t)dev.max_sge ||
        a.cap.max_recv_sge > (uint32_t)dev.max_sge) {
        fail("ibv_query_qp %s: state %d, capabilities send %u x %u, receive %u x %u, inline %u "
             "(created with 16 x 1 each; the device's maxima %d WRs, %d SGEs)",
             name, a.qp_state, a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_recv_wr,
             a.cap.max_recv_sge, a.cap.max_inline_data, dev.max_qp_wr, dev.max_sge);
    }
    printf("ibv_query_qp %s in RTS: send %u x %u, receive %u x %u, inline %u\n", name,
           a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_recv_wr, a.cap.max_recv_sge,
           a.cap.max_inline_data);
}

/* Whether a completion event for cq_b arrives within @ms; acks it. */
static int event_within(int ms)
{
    struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
    struct ibv_cq *ev_cq;
    void *ev_ctx;

    if (poll(&pfd, 1, ms) <= 0) {
        return 0;
    }
    if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx)) {
        fail("ibv_get_cq_event: %s", strerror(errno));
    }
    if (ev_cq != cq_b) {
        fail("event for an unknown CQ");
    }
    ibv_ack_cq_events(ev_cq, 1);
    return 1;
}

static void setup(const char *dev_name)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                 IBV_ACCESS_REMOTE_READ;

    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), dev_name)) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (!ctx) {
        fail("cannot open device %s", dev_name);
    }
    ibv_free_device_list(list);
    if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
        fail("ibv_query_gid %d: %s", gid_index, strerror(errno));
    }
    pd = ibv_alloc_pd(ctx);
    channel = ibv_create_comp_channel(ctx);
    cq_a = ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0);
    cq_b = ibv_create_cq(ctx, CQ_DEPTH, NULL, channel, 0);
    if (!pd || !channel || !cq_a || !cq_b) {
        fail("PD/channel/CQ: %s", strerror(errno));
    }
    qp_a = create_qp(cq_a);
    qp_b = create_qp(cq_b);
    connect_qp(qp_a, qp_b->qp_num);
    connect_qp(qp_b, qp_a->qp_num);
    check_caps(qp_a, "A");
    check_caps(qp_b, "B");
    /* Unaligned buffers spanning pages: MRs that do not start on a page */
    buf_a = (char *)malloc(BUF + 64) + 24;
    buf_b = (char *)malloc(BUF + 64) + 40;
    mr_a = ibv_reg_mr(pd, buf_a, BUF, access);
    mr_b = ibv_reg_mr(pd, buf_b, BUF, access);
    if (!mr_a || !mr_b) {
        fail("ibv_reg_mr: %s", strerror(errno));
    }
    printf("device %s, GID index %d, QPs %u <-> %u, rkey of B 0x%x\n", dev_name,
           gid_index, qp_a->qp_num, qp_b->qp_num, mr_b->rkey);
}

int main(int argc, char **argv)
{
    struct ibv_wc wc;
    uint32_t len = 3000;

    if (argc != 3) {
        fprintf(stderr, "usage: %s DEVICE GID_INDEX\n", argv[0]);
        return 2;
    }
    gid_index = atoi(argv[2]);
    setup(argv[1]);

    /* SEND WITH IMMEDIATE */
    fill(buf_a, len, 1);
    memset(buf_b, 0, BUF);
    post_recv(qp_b, mr_b, buf_b, BUF, 100);
    post_send_a(IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED, 0, len, 0, 0, 0x12345678, 1);
    expect_wc(poll_one(cq_a, "send_with_imm (sender)"), 1, IBV_WC_SUCCESS, IBV_WC_SEND,
              "send_with_imm (sender)");
    wc = poll_one(cq_b, "send_with_imm (receiver)");
    expect_wc(wc, 100, IBV_WC_SUCCESS, IBV_WC_RECV, "send_with_imm (receiver)");
    if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != 0x12345678 ||
        wc.byte_len != len || memcmp(buf_a, buf_b, len)) {
        fail("send_with_imm: flags 0x%x imm 0x%x byte_len %u data %s", wc.wc_flags,
             ntohl(wc.imm_data), wc.byte_len, memcmp(buf_a, buf_b, len) ? "differ" : "same");
    }
    ok("SEND_WITH_IMM: data, byte_len and immediate data arrive");

    /* RDMA WRITE: lands in B's memory, consumes no receive */
    fill(buf_a, len, 2);
    post_recv(qp_b, mr_b, buf_b + 4096, 1024, 101);
    post_send_a(IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 0, len, 0, mr_b->rkey, 0, 2);
    expect_wc(poll_one(cq_a, "rdma_write"), 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
              "rdma_write");
    if (memcmp(buf_a, buf_b, len)) {
        fail("rdma_write: B's memory does not hold the data");
    }
    expect_none(cq_b, 300, "rdma_write (receiver)");
    ok("RDMA_WRITE: data written at the remote address, no receive consumed");

    /* RDMA WRITE WITH IMMEDIATE: written, and consumes receive 101 */
    fill(buf_a + 4096, 512, 3);
    post_send_a(IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SIGNALED, 4096, 512, 6000,
                mr_b->rkey, 0xcafe0001, 3);
    expect_wc(poll_one(cq_a, "write_with_imm (sender)"), 3, IBV_WC_SUCCESS,
              IBV_WC_RDMA_WRITE, "write_with_imm (sender)");
    wc = poll_one(cq_b, "write_with_imm (receiver)");
    expect_wc(wc, 101, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
              "write_with_imm (receiver)");
    if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != 0xcafe0001 ||
        memcmp(buf_a + 4096, buf_b + 6000, 512)) {
        fail("write_with_imm: flags 0x%x imm 0x%x data %s", wc.wc_flags,
             ntohl(wc.imm_data), memcmp(buf_a + 4096, buf_b + 6000, 512) ? "differ" : "same");
    }
    ok("RDMA_WRITE_WITH_IMM: data written, receive completes as RECV_RDMA_WITH_IMM with the immediate");

    /* RDMA READ: A reads B */
    fill(buf_b + 100, 2000, 4);
    memset(buf_a + 5000, 0, 2000);
    post_send_a(IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 5000, 2000, 100, mr_b->rkey, 0, 4);
    wc = poll_one(cq_a, "rdma_read");
    expect_wc(wc, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "rdma_read");
    if (memcmp(buf_a + 5000, buf_b + 100, 2000)) {
        fail("rdma_read: the data read differs");
    }
    ok("RDMA_READ: remote data read into local memory");

    /* Unsignaled WR: no CQE; the signaled one after it completes alone */
    post_send_a(IBV_WR_RDMA_WRITE, 0, 0, 64, 0, mr_b->rkey, 0, 5);
    post_send_a(IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 0, 64, 64, mr_b->rkey, 0, 6);
    expect_wc(poll_one(cq_a, "unsignaled"), 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
              "unsignaled + signaled");
    expect_none(cq_a, 300, "after the signaled WR");
    ok("unsignaled RDMA_WRITE makes no CQE");

    /* Events: ARM fires for the next completion */
    if (ibv_req_notify_cq(cq_b, 0)) {
        fail("ibv_req_notify_cq(0): %s", strerror(errno));
    }
    post_recv(qp_b, mr_b, buf_b, BUF, 102);
    post_send_a(IBV_WR_SEND, IBV_SEND_SIGNALED, 0, 16, 0, 0, 0, 7);
    if (!event_within(POLL_MS)) {
        fail("ARM: no completion event for the next completion");
    }
    expect_wc(poll_one(cq_b, "armed receive"), 102, IBV_WC_SUCCESS, IBV_WC_RECV,
              "armed receive");
    expect_wc(poll_one(cq_a, "armed send"), 7, IBV_WC_SUCCESS, IBV_WC_SEND, "armed send");
    ok("ARM (ibv_req_notify_cq 0): event for the next completion");

    /* ARM_SOL: an RDMA WRITE (no completion at B) raises none; a solicited SEND does */
    if (ibv_req_notify_cq(cq_b, 1)) {
        fail("ibv_req_notify_cq(1): %s", strerror(errno));
    }
    post_send_a(IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 0, 16, 0, mr_b->rkey, 0, 8);
    expect_wc(poll_one(cq_a, "write under ARM_SOL"), 8, IBV_WC_SUCCESS,
              IBV_WC_RDMA_WRITE, "write under ARM_SOL");
    if (event_within(500)) {
        fail("ARM_SOL: an event without a completion on the CQ");
    }
    post_recv(qp_b, mr_b, buf_b, BUF, 103);
    post_send_a(IBV_WR_SEND, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 0, 16, 0, 0, 0, 9);
    if (!event_within(POLL_MS)) {
        fail("ARM_SOL: no event for a solicited receive");
    }
    expect_wc(poll_one(cq_b, "solicited receive"), 103, IBV_WC_SUCCESS, IBV_WC_RECV,
              "solicited receive");
    expect_wc(poll_one(cq_a, "solicited send"), 9, IBV_WC_SUCCESS, IBV_WC_SEND,
              "solicited send");
    ok("ARM_SOL (ibv_req_notify_cq 1): event for a solicited receive");

    /* Bad rkey: remote access error at the requester */
    post_send_a(IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 0, 16, 0, mr_b->rkey ^ 0x5a5a00,
                0, 10);
    expect_wc(poll_one(cq_a, "bad rkey"), 10, IBV_WC_REM_ACCESS_ERR, -1, "bad rkey");
    ok("RDMA_WRITE with a bad rkey completes with REM_ACCESS_ERR");

    /* Flush: B to ERR with two receives posted */
    post_recv(qp_b, mr_b, buf_b, 1024, 104);
    post_recv(qp_b, mr_b, buf_b + 1024, 1024, 105);
    {
        struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

        if (ibv_modify_qp(qp_b, &a, IBV_QP_STATE)) {
            fail("modify_qp ERR: %s", strerror(errno));
        }
    }
    expect_wc(poll_one(cq_b, "flush 1"), 104, IBV_WC_WR_FLUSH_ERR, -1, "flush 1");
    expect_wc(poll_one(cq_b, "flush 2"), 105, IBV_WC_WR_FLUSH_ERR, -1, "flush 2");
    ok("QP moved to ERR: outstanding receives complete with WR_FLUSH_ERR");

    printf("all checks passed\n");
    return 0;
}
