// SPDX-License-Identifier: GPL-2.0
/*
 * async_object_events: the affiliated async events a device raises about its
 * QPs, CQs and SRQs, triggered from user space and read with
 * ibv_get_async_event() the way an application reads them:
 *
 *   srq-limit       an SRQ with 8 receives and its limit armed at 6
 *                   (ibv_modify_srq; ibv_query_srq reads 0, then 6): two
 *                   messages leave 6 (no event), the third leaves 5, below
 *                   the limit: exactly one IBV_EVENT_SRQ_LIMIT_REACHED
 *                   naming the SRQ; the limit then reads 0 (disarmed) and a
 *                   fourth message raises none
 *   last-wqe        the QP attached to that SRQ moved to ERR:
 *                   IBV_EVENT_QP_LAST_WQE_REACHED naming it
 *   cq-overrun      an RC QP whose send CQ is the smallest one the device
 *                   grants, sent to one message more than the CQ holds
 *                   without polling it: IBV_EVENT_CQ_ERR naming the CQ and
 *                   IBV_EVENT_QP_FATAL naming the QP whose completion was
 *                   lost; the CQ still holds the completions it had room for
 *                   (successful, in order) and the QP reads ERR
 *
 * No other event may arrive, and every event names an object of this process.
 *
 *   async_object_events DEVICE GID_INDEX
 *
 * Prints "ok: ..." per check; on the first failure "FAIL: ..." and exits 1.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUF = 4096, MSG = 64, EVENT_MS = 10000, QUIET_MS = 1000, POLL_MS = 10000 };
enum { SRQ_RECVS = 8, SRQ_LIMIT = 6, QP_DEPTH = 32 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char *buf;
static union ibv_gid gid;
static int gid_index;

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

/*
 * The next async event within @ms milliseconds, acknowledged; returns 0 if
 * none came.
 */
static int next_event(int ms, struct ibv_async_event *ev)
{
    struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
    int n = poll(&pfd, 1, ms);

    if (n < 0) {
        fail("poll on the async fd: %s", strerror(errno));
    }
    if (n == 0) {
        return 0;
    }
    if (ibv_get_async_event(ctx, ev)) {
        fail("ibv_get_async_event: %s", strerror(errno));
    }
    ibv_ack_async_event(ev);
    return 1;
}

static void expect_event(enum ibv_event_type type, void *element, const char *what)
{
    struct ibv_async_event ev;

    if (!next_event(EVENT_MS, &ev)) {
        fail("%s: no %s within %d ms", what, ibv_event_type_str(type), EVENT_MS);
    }
    if (ev.event_type != type) {
        fail("%s: %s (%d), wanted %s", what, ibv_event_type_str(ev.event_type),
             ev.event_type, ibv_event_type_str(type));
    }
    /* The union's members are all pointers: compare the one the type names. */
    if ((void *)ev.element.qp != element) {
        fail("%s: %s names %p, wanted %p", what, ibv_event_type_str(type),
             (void *)ev.element.qp, element);
    }
}

static void expect_no_event(int ms, const char *what)
{
    struct ibv_async_event ev;

    if (next_event(ms, &ev)) {
        fail("%s: unexpected %s (%d)", what, ibv_event_type_str(ev.event_type),
             ev.event_type);
    }
}

/* One completion from @cq within POLL_MS, or fail. */
static struct ibv_wc poll_one(struct ibv_cq *cq, const char *what)
{
    long deadline = now_ms() + POLL_MS;
    struct ibv_wc wc;

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

static void expect_wc(struct ibv_wc wc, uint64_t wr_id, enum ibv_wc_status status,
                      const char *what)
{
    if (wc.wr_id != wr_id || wc.status != status) {
        fail("%s: wr_id %llu status %s, wanted wr_id %llu status %s", what,
             (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
             (unsigned long long)wr_id, ibv_wc_status_str(status));
    }
}

static struct ibv_cq *create_cq(int cqe)
{
    struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);

    if (!cq) {
        fail("ibv_create_cq %d: %s", cqe, strerror(errno));
    }
    return cq;
}

static struct ibv_qp *create_qp(struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
                                struct ibv_srq *srq)
{
    struct ibv_qp_init_attr attr = {
        .send_cq = send_cq, .recv_cq = recv_cq, .srq = srq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = srq ? 0 : QP_DEPTH,
                 .max_send_sge = 1, .max_recv_sge = 1 },
    };
    struct ibv_qp *qp = ibv_create_qp(pd, &attr);

    if (!qp) {
        fail("ibv_create_qp: %s", strerror(errno));
    }
    return qp;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *state)
{
    if (ibv_modify_qp(qp, a, mask)) {
        fail("modify_qp %u to %s: %s", qp->qp_num, state, strerror(errno));
    }
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn)
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

static void post_send(struct ibv_qp *qp, uint64_t wr_id)
{
    struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG, .lkey = mr->lkey };
    struct ibv_send_wr wr = {
        .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
        .send_flags = IBV_SEND_SIGNALED,
    }, *bad;

    if (ibv_post_send(qp, &wr, &bad)) {
        fail("ibv_post_send wr_id %llu: %s", (unsigned long long)wr_id, strerror(errno));
    }
}

/* Receive buffers: slot @i of the second half of buf. */
static struct ibv_sge recv_sge(unsigned int i)
{
    struct ibv_sge sge = { .addr = (uintptr_t)buf + BUF / 2 + (i % 16) * MSG,
                           .length = MSG, .lkey = mr->lkey };
    return sge;
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id)
{
    struct ibv_sge sge = recv_sge(wr_id);
    struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

    if (ibv_post_recv(qp, &wr, &bad)) {
        fail("ibv_post_recv wr_id %llu: %s", (unsigned long long)wr_id, strerror(errno));
    }
}

static void post_srq_recv(struct ibv_srq *srq, uint64_t wr_id)
{
    struct ibv_sge sge = recv_sge(wr_id);
    struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

    if (ibv_post_srq_recv(srq, &wr, &bad)) {
        fail("ibv_post_srq_recv wr_id %llu: %s", (unsigned long long)wr_id,
             strerror(errno));
    }
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;

    if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init)) {
        fail("ibv_query_qp %u: %s", qp->qp_num, strerror(errno));
    }
    return a.qp_state;
}

/* ibv_query_srq() works and reads @limit. */
static void expect_srq_limit(struct ibv_srq *srq, uint32_t limit, const char *what)
{
    struct ibv_srq_attr sa;

    if (ibv_query_srq(srq, &sa)) {
        fail("%s: ibv_query_srq: %s", what, strerror(errno));
    }
    if (sa.srq_limit != limit || sa.max_wr < 16) {
        fail("%s: ibv_query_srq reads limit %u max_wr %u, wanted limit %u max_wr >= 16", what,
             sa.srq_limit, sa.max_wr, limit);
    }
}

/* srq-limit and last-wqe. */
static void srq_events(void)
{
    struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16, .max_sge = 1 } };
    struct ibv_cq *send_cq = create_cq(QP_DEPTH), *recv_cq = create_cq(QP_DEPTH);
    struct ibv_srq *srq = ibv_create_srq(pd, &sattr);
    struct ibv_srq_attr sa = { .srq_limit = SRQ_LIMIT };
    struct ibv_qp *sender, *receiver;
    struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

    if (!srq) {
        fail("ibv_create_srq: %s", strerror(errno));
    }
    sender = create_qp(send_cq, send_cq, NULL);
    receiver = create_qp(send_cq, recv_cq, srq);
    connect_qp(sender, receiver->qp_num);
    connect_qp(receiver, sender->qp_num);
    for (unsigned int i = 0; i < SRQ_RECVS; i++) {
        post_srq_recv(srq, i);
    }
    /* QEMU 7.2 ran QUERY_SRQ and MODIFY_SRQ as each other (patch 14) */
    expect_srq_limit(srq, 0, "srq-limit: before arming");
    if (ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT)) {
        fail("ibv_modify_srq limit %d: %s", SRQ_LIMIT, strerror(errno));
    }
    expect_srq_limit(srq, SRQ_LIMIT, "srq-limit: armed");
    expect_no_event(QUIET_MS, "srq-limit: after arming it with 8 receives posted");
    for (unsigned int i = 0; i < SRQ_RECVS - SRQ_LIMIT + 2; i++) {
        post_send(sender, 1000 + i);
        expect_wc(poll_one(send_cq, "srq-limit: send"), 1000 + i, IBV_WC_SUCCESS,
                  "srq-limit: send");
        expect_wc(poll_one(recv_cq, "srq-limit: receive"), i, IBV_WC_SUCCESS,
                  "srq-limit: receive");
        unsigned int left = SRQ_RECVS - 1 - i;

        if (left == SRQ_LIMIT - 1) {
            expect_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq, "srq-limit");
            expect_no_event(QUIET_MS, "srq-limit: after the limit event");
            expect_srq_limit(srq, 0, "srq-limit: after its event (disarmed)");
        } else {
            expect_no_event(QUIET_MS / 2, "srq-limit: with receives at or above the limit");
        }
    }
    ok("srq-limit: one IBV_EVENT_SRQ_LIMIT_REACHED naming the SRQ when %d of %d receives "
       "were left (limit %d), none before, none after (the limit reads 0)",
       SRQ_LIMIT - 1, SRQ_RECVS, SRQ_LIMIT);

    modify(receiver, &err, IBV_QP_STATE, "ERR");
    expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, receiver, "last-wqe");
    ok("last-wqe: IBV_EVENT_QP_LAST_WQE_REACHED naming the SRQ's QP moved to ERR");

    if (ibv_destroy_qp(receiver) || ibv_destroy_qp(sender) || ibv_destroy_srq(srq) ||
        ibv_destroy_cq(recv_cq) || ibv_destroy_cq(send_cq)) {
        fail("destroying the SRQ case's objects: %s", strerror(errno));
    }
}

/*
 * Whether the CQ_ERR and QP_FATAL of cq-overrun have both come; fails on any
 * other event. Waits up to @ms for the next one.
 */
static int overrun_events(int ms, struct ibv_cq *cq, struct ibv_qp *qp, int *seen_cq,
                          int *seen_qp)
{
    struct ibv_async_event ev;

    while (!*seen_cq || !*seen_qp) {
        if (!next_event(ms, &ev)) {
            break;
        }
        if (ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq && !*seen_cq) {
            *seen_cq = 1;
        } else if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == qp && !*seen_qp) {
            *seen_qp = 1;
        } else {
            fail("cq-overrun: unexpected %s (%d) naming %p", ibv_event_type_str(ev.event_type),
                 ev.event_type, (void *)ev.element.qp);
        }
    }
    return *seen_cq && *seen_qp;
}

/*
 * cq-overrun. The sends go one at a time, each received before the next: the
 * device's own copy of the CQ is then drained into the guest's ring at once,
 * and the ring is what overruns.
 */
static void cq_overrun(void)
{
    struct ibv_cq *small = create_cq(1), *other = create_cq(QP_DEPTH);
    struct ibv_qp *sender = create_qp(small, other, NULL);
    struct ibv_qp *receiver = create_qp(other, other, NULL);
    int sends = small->cqe + 1, sent = 0, seen_cq = 0, seen_qp = 0; /* at most */

    if (sends > QP_DEPTH) {
        fail("cq-overrun: the smallest CQ holds %d CQEs, more than the QP's %d sends",
             small->cqe, QP_DEPTH);
    }
    connect_qp(sender, receiver->qp_num);
    connect_qp(receiver, sender->qp_num);
    for (int i = 0; i < sends; i++) {
        post_recv(receiver, 2000 + i);
    }
    for (;;) {
        /*
         * None is due while the CQ has room (a short look); once a send
         * found it full, the events are, and no further send is posted
         * (it would be flushed, not received).
         */
        overrun_events(sent > small->cqe ? EVENT_MS : QUIET_MS / 5, small, sender, &seen_cq,
                       &seen_qp);
        if (seen_cq || seen_qp) {
            break;
        }
        if (sent > small->cqe) {
            fail("cq-overrun: %d sends to a CQ of %d: no event within %d ms", sent, small->cqe,
                 EVENT_MS);
        }
        post_send(sender, 3000 + sent);
        expect_wc(poll_one(other, "cq-overrun: receive"), 2000 + sent, IBV_WC_SUCCESS,
                  "cq-overrun: receive");
        sent++;
    }
    if (!overrun_events(EVENT_MS, small, sender, &seen_cq, &seen_qp)) {
        fail("cq-overrun: %d sends to a CQ of %d: no %s within %d ms", sent, small->cqe,
             seen_cq ? "IBV_EVENT_QP_FATAL" : "IBV_EVENT_CQ_ERR", EVENT_MS);
    }
    if (sent != small->cqe + 1) {
        fail("cq-overrun: the events came after send %d to a CQ of %d, wanted after send %d",
             sent, small->cqe, small->cqe + 1);
    }
    expect_no_event(QUIET_MS, "cq-overrun: after CQ_ERR and QP_FATAL");
    for (int i = 0; i < small->cqe; i++) {
        expect_wc(poll_one(small, "cq-overrun: a completion the CQ held"), 3000 + i,
                  IBV_WC_SUCCESS, "cq-overrun: a completion the CQ held");
    }
    if (qp_state(sender) != IBV_QPS_ERR) {
        fail("cq-overrun: the QP reads state %d after IBV_EVENT_QP_FATAL, wanted ERR",
             qp_state(sender));
    }
    ok("cq-overrun: send %d to a CQ of %d: IBV_EVENT_CQ_ERR naming the CQ and "
       "IBV_EVENT_QP_FATAL naming the QP, which reads ERR; the CQ holds the %d "
       "completions it had room for, successful and in order", sent, small->cqe,
       small->cqe);

    if (ibv_destroy_qp(receiver) || ibv_destroy_qp(sender) || ibv_destroy_cq(other) ||
        ibv_destroy_cq(small)) {
        fail("destroying the CQ case's objects: %s", strerror(errno));
    }
}

int main(int argc, char **argv)
{
    struct ibv_device **list;

    if (argc != 3) {
        fprintf(stderr, "usage: %s DEVICE GID_INDEX\n", argv[0]);
        return 2;
    }
    gid_index = atoi(argv[2]);
    list = ibv_get_device_list(NULL);
    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), argv[1])) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (!ctx) {
        fail("cannot open device %s", argv[1]);
    }
    ibv_free_device_list(list);
    if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
        fail("ibv_query_gid %d: %s", gid_index, strerror(errno));
    }
    buf = aligned_alloc(BUF, BUF);
    pd = ibv_alloc_pd(ctx);
    if (!buf || !pd) {
        fail("buffer or PD: %s", strerror(errno));
    }
    memset(buf, 0x5a, BUF);
    mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) {
        fail("ibv_reg_mr: %s", strerror(errno));
    }
    expect_no_event(QUIET_MS, "before the first case");

    srq_events();
    cq_overrun();

    if (ibv_dereg_mr(mr) || ibv_dealloc_pd(pd) || ibv_close_device(ctx)) {
        fail("teardown: %s", strerror(errno));
    }
    printf("all checks passed\n");
    return 0;
}
