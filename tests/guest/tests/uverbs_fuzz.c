// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs_fuzz: a bounded, seeded fuzzer of the uverbs ABI against the RDMA driver.
 *
 *   uverbs_fuzz DEVICE GID_INDEX SEED ROUNDS OPS
 *
 * Each round forks a process that opens DEVICE (libibverbs' GET_CONTEXT, the
 * provider's udata), then runs two threads that write OPS legacy uverbs
 * commands each (<rdma/ib_user_verbs.h> with the pvrdma udata of
 * <rdma/vmw_pvrdma-abi.h>) straight to the context's command fd: PDs, CQs,
 * QPs, SRQs, MRs and AHs created, modified, queried, resized and destroyed in
 * random order, with random sizes, handles (live, destroyed, unknown), access
 * flags, QP states and attribute masks, ring buffers (good, unaligned,
 * read-only, inaccessible, kernel addresses) and truncated udata. The two threads
 * share the command fd and the handles, so one destroys what the other is
 * modifying.
 *
 * How a round ends is chosen by the seed too:
 *   clean: the threads finish, then every object still held is destroyed, QPs
 *          first, PDs last; each of these destroys must succeed (FAIL if not);
 *   exit:  the threads finish and the process exits holding its objects (the
 *          kernel tears the context down);
 *   kill:  the parent SIGKILLs the process after a random delay, usually in
 *          the middle of a command.
 * A process that dies of any signal but the parent's SIGKILL is a FAIL.
 *
 * Every thread's sequence of operations follows from SEED alone (the
 * interleaving of the two threads does not): `uverbs_fuzz DEV GID SEED 1 OPS`
 * with the seed of a failing round replays it. The kernel's verdict (no
 * report in dmesg, no leak) and the caller's checks (no object left behind,
 * the device still works) are the rest of the oracle.
 *
 * Output: one line per round, then the commands accepted and tried by kind,
 * the objects created, by kind, and
 *   accepted/tried by command: CREATE_QP N/N ...
 *   created: AH N, QP N, SRQ N, CQ N, MR N, PD N
 *   summary: N rounds, N commands, N accepted, N refused, N objects destroyed at exit, N FAIL
 * The exit status is 1 if anything failed.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/vmw_pvrdma-abi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PAGE = 4096, ARENA = 8 << 20, RO_AREA = 16 * PAGE, HOLE = 16 * PAGE, POOL = 64, EARLY = 8 };
enum { THREADS = 2, CMDS = 64 };

/* Object kinds, in the order a clean exit destroys them. */
enum kind { K_AH, K_QP, K_SRQ, K_CQ, K_MR, K_PD, KINDS };
static const char *const kind_name[KINDS] = { "AH", "QP", "SRQ", "CQ", "MR", "PD" };

/* The handles of live objects of one kind, and the last one destroyed. */
/*
 * The handles of one kind a process holds. The two threads' commands and
 * their bookkeeping are not one step: thread A can create an object, thread
 * B destroy it (it picked the handle as "one just destroyed", which the
 * kernel had handed out again at once) and try to forget it before A
 * remembers it. Such a destroy is kept in "early", and the create it
 * overtook is then not remembered: a clean exit would destroy the object a
 * second time and get ENOENT.
 */
struct pool {
    uint32_t handle[POOL];
    int n;
    uint32_t dead;
    int has_dead;
    uint32_t early[EARLY];
    int n_early;
};

/* What one process shares between its threads. */
static struct {
    pthread_mutex_t lock;
    struct pool pool[KINDS];
    int cmd_fd;
    struct ibv_device_attr attr;
    union ibv_gid gid;
    int gid_index;
    uint8_t *arena, *ro, *hole;
} proc;

/* Counters a round reports to its parent through shared memory. */
struct counts {
    long commands, accepted, refused, destroyed_at_exit, fail;
    long created[KINDS];
    long tried[CMDS], took[CMDS];
    char first_fail[200];
    uint64_t fault_addr; /* where a SIGSEGV or SIGBUS of the child hit */
    uint64_t arena;      /* the child's arena, to tell a fault there from others */
};
static struct counts *shared;

static void fail(const char *fmt, ...)
{
    va_list ap;
    char msg[200];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&proc.lock);
    if (shared->fail++ == 0) {
        snprintf(shared->first_fail, sizeof(shared->first_fail), "%s", msg);
    }
    pthread_mutex_unlock(&proc.lock);
}

/* ---- Randomness: xorshift64*, one state per thread, from the seed ----- */

struct rng {
    uint64_t s;
};

static uint64_t next(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}

/* A number in [0, n), n > 0. */
static uint32_t below(struct rng *r, uint32_t n)
{
    return (uint32_t)(next(r) % n);
}

/* True with probability pct percent. */
static int chance(struct rng *r, unsigned pct)
{
    return below(r, 100) < pct;
}

/* A count or size: mostly small and sensible (1..@sensible), sometimes an edge
 * (0, @max, @max + 1) or a wild value. */
static uint32_t some_count(struct rng *r, uint32_t sensible, uint32_t max)
{
    switch (below(r, 20)) {
    case 0:
        return 0;
    case 1:
        return max;
    case 2:
        return max + 1;
    case 3:
        return 1u << below(r, 32);
    case 4:
        return 0xffffffffu;
    case 5:
        return (uint32_t)next(r);
    default:
        return 1 + below(r, sensible);
    }
}

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 1;

    while (p < n && p < (1u << 31)) {
        p <<= 1;
    }
    return p;
}

/* ---- Handles ----------------------------------------------------------- */

static void pool_add(enum kind k, uint32_t handle)
{
    struct pool *p = &proc.pool[k];

    pthread_mutex_lock(&proc.lock);
    shared->created[k]++;
    for (int i = 0; i < p->n_early; i++) {
        if (p->early[i] == handle) {
            /* Destroyed already, before this create was remembered. */
            p->early[i] = p->early[--p->n_early];
            pthread_mutex_unlock(&proc.lock);
            return;
        }
    }
    if (p->n < POOL) {
        p->handle[p->n++] = handle;
    }
    pthread_mutex_unlock(&proc.lock);
}

static void pool_remove(enum kind k, uint32_t handle)
{
    struct pool *p = &proc.pool[k];

    pthread_mutex_lock(&proc.lock);
    p->dead = handle;
    p->has_dead = 1;
    for (int i = 0; i < p->n; i++) {
        if (p->handle[i] == handle) {
            p->handle[i] = p->handle[--p->n];
            pthread_mutex_unlock(&proc.lock);
            return;
        }
    }
    /*
     * Not remembered: its create has not been (or the pool was full, and
     * then a later object with this handle goes unremembered and is left to
     * the context's close).
     */
    if (p->n_early == EARLY) {
        memmove(p->early, p->early + 1, sizeof(p->early[0]) * (EARLY - 1));
        p->n_early--;
    }
    p->early[p->n_early++] = handle;
    pthread_mutex_unlock(&proc.lock);
}

/* A handle of kind @k: mostly a live one, sometimes one just destroyed, one of
 * another kind's, or a number no object has. */
static uint32_t some_handle(struct rng *r, enum kind k)
{
    struct pool *p = &proc.pool[k];
    uint32_t h;
    unsigned roll = below(r, 100);

    pthread_mutex_lock(&proc.lock);
    if (roll < 85 && p->n > 0) {
        h = p->handle[below(r, (uint32_t)p->n)];
    } else if (roll < 90 && p->has_dead) {
        h = p->dead;
    } else if (roll < 94 && proc.pool[(k + 1) % KINDS].n > 0) {
        h = proc.pool[(k + 1) % KINDS].handle[0];
    } else {
        static const uint32_t odd[] = { 0, 1, 63, 0x7fffffff, 0xffffffff };

        h = chance(r, 50) ? odd[below(r, 5)] : (uint32_t)next(r);
    }
    pthread_mutex_unlock(&proc.lock);
    return h;
}

/* ---- Buffers ----------------------------------------------------------- */

/* A user buffer for a ring or an MR of @len bytes: mostly page-aligned memory
 * of the arena, sometimes unaligned, read-only, inaccessible, a kernel address or
 * NULL. */
static uint64_t some_buffer(struct rng *r, uint64_t len)
{
    uint64_t pages = ARENA / PAGE;
    uint64_t need = (len + PAGE - 1) / PAGE;
    uint64_t at = need < pages ? below(r, (uint32_t)(pages - need + 1)) : 0;
    uint64_t addr = (uintptr_t)proc.arena + at * PAGE;

    switch (below(r, 25)) {
    case 0:
        return addr + 8;
    case 1:
        return (uintptr_t)proc.ro;
    case 2:
        return (uintptr_t)proc.hole;
    case 3:
        return 0xffff888000000000ull + at * PAGE;
    case 4:
        return 0;
    default:
        return addr;
    }
}

/* ---- Commands ------------------------------------------------------------ */

/*
 * Writes @command with @body (core struct then udata, @full bytes): only
 * @in_len bytes of it are announced in the header; the response buffer is
 * announced as @out_len bytes. Returns 0 or the errno.
 */
static int cmd(uint32_t command, void *body, size_t full, size_t in_len, size_t out_len)
{
    uint8_t buf[512];
    struct ib_uverbs_cmd_hdr hdr = {
        .command = command,
        .in_words = (uint16_t)((sizeof(hdr) + in_len) / 4),
        .out_words = (uint16_t)(out_len / 4),
    };
    size_t count = sizeof(hdr) + in_len;
    ssize_t n;
    int r;

    memset(buf, 0, sizeof(buf));
    memcpy(buf, &hdr, sizeof(hdr));
    memcpy(buf + sizeof(hdr), body, full < sizeof(buf) - sizeof(hdr) ? full : 0);
    n = write(proc.cmd_fd, buf, count);
    r = n == (ssize_t)count ? 0 : n < 0 ? errno : EIO;
    pthread_mutex_lock(&proc.lock);
    shared->commands++;
    shared->tried[command % CMDS]++;
    if (r == 0) {
        shared->accepted++;
        shared->took[command % CMDS]++;
    } else {
        shared->refused++;
    }
    pthread_mutex_unlock(&proc.lock);
    if (n >= 0 && n != (ssize_t)count) {
        fail("command %u: write returned %zd of %zu bytes", command, n, count);
    }
    return r;
}

static const char *cmd_name(int command)
{
    static char other[16];

    switch (command) {
    case IB_USER_VERBS_CMD_QUERY_DEVICE: return "QUERY_DEVICE";
    case IB_USER_VERBS_CMD_QUERY_PORT: return "QUERY_PORT";
    case IB_USER_VERBS_CMD_ALLOC_PD: return "ALLOC_PD";
    case IB_USER_VERBS_CMD_DEALLOC_PD: return "DEALLOC_PD";
    case IB_USER_VERBS_CMD_CREATE_AH: return "CREATE_AH";
    case IB_USER_VERBS_CMD_DESTROY_AH: return "DESTROY_AH";
    case IB_USER_VERBS_CMD_REG_MR: return "REG_MR";
    case IB_USER_VERBS_CMD_DEREG_MR: return "DEREG_MR";
    case IB_USER_VERBS_CMD_CREATE_CQ: return "CREATE_CQ";
    case IB_USER_VERBS_CMD_RESIZE_CQ: return "RESIZE_CQ";
    case IB_USER_VERBS_CMD_DESTROY_CQ: return "DESTROY_CQ";
    case IB_USER_VERBS_CMD_POLL_CQ: return "POLL_CQ";
    case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: return "REQ_NOTIFY_CQ";
    case IB_USER_VERBS_CMD_CREATE_QP: return "CREATE_QP";
    case IB_USER_VERBS_CMD_QUERY_QP: return "QUERY_QP";
    case IB_USER_VERBS_CMD_MODIFY_QP: return "MODIFY_QP";
    case IB_USER_VERBS_CMD_DESTROY_QP: return "DESTROY_QP";
    case IB_USER_VERBS_CMD_CREATE_SRQ: return "CREATE_SRQ";
    case IB_USER_VERBS_CMD_MODIFY_SRQ: return "MODIFY_SRQ";
    case IB_USER_VERBS_CMD_QUERY_SRQ: return "QUERY_SRQ";
    case IB_USER_VERBS_CMD_DESTROY_SRQ: return "DESTROY_SRQ";
    default:
        snprintf(other, sizeof(other), "cmd%d", command);
        return other;
    }
}

/* The lengths a command announces: mostly all of it, sometimes the udata
 * (the bytes after @core) cut short, or the response cut short. */
static void some_lengths(struct rng *r, size_t core, size_t full, size_t core_out,
                         size_t full_out, size_t *in_len, size_t *out_len)
{
    *in_len = full;
    *out_len = full_out;
    if (chance(r, 8)) {
        *in_len = (core + below(r, (uint32_t)(full - core + 1))) & ~(size_t)3;
    }
    if (chance(r, 8)) {
        *out_len = (core_out / 2 + below(r, (uint32_t)(full_out - core_out / 2 + 1))) & ~(size_t)3;
    }
}

/* One response buffer per thread: the kernel writes responses there. */
static __thread uint8_t resp[256];

static void op_alloc_pd(struct rng *r)
{
    struct ib_uverbs_alloc_pd c = { .response = (uintptr_t)resp };
    size_t full_out = sizeof(struct ib_uverbs_alloc_pd_resp) + sizeof(struct pvrdma_alloc_pd_resp);
    size_t in_len, out_len;

    some_lengths(r, sizeof(c), sizeof(c), sizeof(struct ib_uverbs_alloc_pd_resp), full_out,
                 &in_len, &out_len);
    if (cmd(IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(c), in_len, out_len) == 0) {
        pool_add(K_PD, ((struct ib_uverbs_alloc_pd_resp *)resp)->pd_handle);
    }
}

static int destroy(enum kind k, uint32_t handle)
{
    int r;

    switch (k) {
    case K_PD: {
        struct ib_uverbs_dealloc_pd c = { .pd_handle = handle };

        r = cmd(IB_USER_VERBS_CMD_DEALLOC_PD, &c, sizeof(c), sizeof(c), 0);
        break;
    }
    case K_MR: {
        struct ib_uverbs_dereg_mr c = { .mr_handle = handle };

        r = cmd(IB_USER_VERBS_CMD_DEREG_MR, &c, sizeof(c), sizeof(c), 0);
        break;
    }
    case K_AH: {
        struct ib_uverbs_destroy_ah c = { .ah_handle = handle };

        r = cmd(IB_USER_VERBS_CMD_DESTROY_AH, &c, sizeof(c), sizeof(c), 0);
        break;
    }
    case K_CQ: {
        struct ib_uverbs_destroy_cq c = { .response = (uintptr_t)resp, .cq_handle = handle };

        r = cmd(IB_USER_VERBS_CMD_DESTROY_CQ, &c, sizeof(c), sizeof(c),
                sizeof(struct ib_uverbs_destroy_cq_resp));
        break;
    }
    case K_QP: {
        struct ib_uverbs_destroy_qp c = { .response = (uintptr_t)resp, .qp_handle = handle };

        r = cmd(IB_USER_VERBS_CMD_DESTROY_QP, &c, sizeof(c), sizeof(c),
                sizeof(struct ib_uverbs_destroy_qp_resp));
        break;
    }
    case K_SRQ: {
        struct ib_uverbs_destroy_srq c = { .response = (uintptr_t)resp, .srq_handle = handle };

        r = cmd(IB_USER_VERBS_CMD_DESTROY_SRQ, &c, sizeof(c), sizeof(c),
                sizeof(struct ib_uverbs_destroy_srq_resp));
        break;
    }
    default:
        return EINVAL;
    }
    if (r == 0) {
        pool_remove(k, handle);
    }
    return r;
}

static void op_destroy(struct rng *r)
{
    enum kind k = (enum kind)below(r, KINDS);

    destroy(k, some_handle(r, k));
}

static void op_create_cq(struct rng *r)
{
    struct {
        struct ib_uverbs_create_cq core;
        struct pvrdma_create_cq drv;
    } c;
    uint32_t cqe = some_count(r, 256, (uint32_t)proc.attr.max_cqe);
    uint64_t size = (uint64_t)PAGE * (1 + (pow2_at_least(cqe) * 64ull + PAGE - 1) / PAGE);
    size_t full_out = sizeof(struct ib_uverbs_create_cq_resp) + sizeof(struct pvrdma_create_cq_resp);
    size_t in_len, out_len;

    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp;
    c.core.user_handle = next(r);
    c.core.cqe = cqe;
    c.core.comp_vector = chance(r, 90) ? 0 : below(r, 8);
    c.core.comp_channel = -1;
    if (size > ARENA || chance(r, 10)) {
        size = some_count(r, 16 * PAGE, ARENA);
    }
    c.drv.buf_addr = some_buffer(r, size);
    c.drv.buf_size = (uint32_t)size;
    some_lengths(r, sizeof(c.core), sizeof(c), sizeof(struct ib_uverbs_create_cq_resp), full_out,
                 &in_len, &out_len);
    if (cmd(IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), in_len, out_len) == 0) {
        pool_add(K_CQ, ((struct ib_uverbs_create_cq_resp *)resp)->cq_handle);
    }
}

static void op_resize_cq(struct rng *r)
{
    struct {
        struct ib_uverbs_resize_cq core;
        struct pvrdma_resize_cq drv;
    } c;
    uint32_t cqe = some_count(r, 256, (uint32_t)proc.attr.max_cqe);

    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp;
    c.core.cq_handle = some_handle(r, K_CQ);
    c.core.cqe = cqe;
    c.drv.buf_addr = some_buffer(r, 4 * PAGE);
    c.drv.buf_size = 4 * PAGE;
    cmd(IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof(c), sizeof(c),
        sizeof(struct ib_uverbs_resize_cq_resp));
}

static void op_reg_mr(struct rng *r)
{
    struct ib_uverbs_reg_mr c;
    uint64_t len = chance(r, 85) ? 1 + below(r, 64 * PAGE) : some_count(r, ARENA, ARENA);

    memset(&c, 0, sizeof(c));
    c.response = (uintptr_t)resp;
    c.start = some_buffer(r, len) + (chance(r, 20) ? below(r, PAGE) : 0);
    c.length = chance(r, 3) ? (uint64_t)-1 : len;
    c.hca_va = chance(r, 80) ? c.start : next(r);
    c.pd_handle = some_handle(r, K_PD);
    c.access_flags = chance(r, 80) ? below(r, 16) : (uint32_t)next(r);
    if (cmd(IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_reg_mr_resp)) == 0) {
        pool_add(K_MR, ((struct ib_uverbs_reg_mr_resp *)resp)->mr_handle);
    }
}

/* Ring bytes for @wr work requests of @sge scatter/gather entries after a
 * header of @hdr bytes: the ring state page and the WQE pages. */
static uint64_t ring_bytes(uint32_t wr, uint32_t sge, size_t hdr)
{
    uint64_t wqe = pow2_at_least((uint32_t)(hdr + sizeof(struct pvrdma_sge) * (sge ? sge : 1)));

    return (uint64_t)PAGE * (1 + (pow2_at_least(wr ? wr : 1) * wqe + PAGE - 1) / PAGE);
}

static void op_create_qp(struct rng *r)
{
    struct {
        struct ib_uverbs_create_qp core;
        struct pvrdma_create_qp drv;
    } c;
    static const uint8_t types[] = { IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UD, IBV_QPT_UC, 0, 7, 255 };
    size_t full_out = sizeof(struct ib_uverbs_create_qp_resp) + sizeof(struct pvrdma_create_qp_resp);
    size_t in_len, out_len;
    uint64_t sbytes, rbytes;

    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp;
    c.core.user_handle = next(r);
    c.core.pd_handle = some_handle(r, K_PD);
    c.core.send_cq_handle = some_handle(r, K_CQ);
    c.core.recv_cq_handle = chance(r, 70) ? c.core.send_cq_handle : some_handle(r, K_CQ);
    c.core.srq_handle = some_handle(r, K_SRQ);
    c.core.is_srq = chance(r, 25);
    c.core.max_send_wr = some_count(r, 64, (uint32_t)proc.attr.max_qp_wr);
    c.core.max_recv_wr = c.core.is_srq ? 0 : some_count(r, 64, (uint32_t)proc.attr.max_qp_wr);
    c.core.max_send_sge = some_count(r, 4, (uint32_t)proc.attr.max_sge);
    c.core.max_recv_sge = some_count(r, 4, (uint32_t)proc.attr.max_sge);
    c.core.max_inline_data = chance(r, 90) ? 0 : some_count(r, 64, 1u << 20);
    c.core.sq_sig_all = chance(r, 50);
    c.core.qp_type = types[below(r, sizeof(types))];
    sbytes = ring_bytes(c.core.max_send_wr, c.core.max_send_sge, sizeof(struct pvrdma_sq_wqe_hdr));
    rbytes = c.core.is_srq ? 0
                           : ring_bytes(c.core.max_recv_wr, c.core.max_recv_sge,
                                        sizeof(struct pvrdma_rq_wqe_hdr));
    if (sbytes > ARENA / 2 || chance(r, 10)) {
        sbytes = some_count(r, 16 * PAGE, ARENA);
    }
    if (rbytes > ARENA / 2 || chance(r, 10)) {
        rbytes = some_count(r, 16 * PAGE, ARENA);
    }
    c.drv.sbuf_addr = some_buffer(r, sbytes);
    c.drv.sbuf_size = (uint32_t)sbytes;
    c.drv.rbuf_addr = some_buffer(r, rbytes);
    c.drv.rbuf_size = (uint32_t)rbytes;
    c.drv.qp_addr = next(r);
    some_lengths(r, sizeof(c.core), sizeof(c), sizeof(struct ib_uverbs_create_qp_resp), full_out,
                 &in_len, &out_len);
    if (cmd(IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), in_len, out_len) == 0) {
        pool_add(K_QP, ((struct ib_uverbs_create_qp_resp *)resp)->qp_handle);
    }
}

/* A plausible transition of a QP (with the attributes the verbs require for
 * it) or, often, a random state and mask. */
static void op_modify_qp(struct rng *r)
{
    struct ib_uverbs_modify_qp c;
    struct ib_uverbs_qp_dest *d = &c.dest;

    memset(&c, 0, sizeof(c));
    c.qp_handle = some_handle(r, K_QP);
    c.qkey = (uint32_t)next(r);
    c.rq_psn = below(r, 1u << 24);
    c.sq_psn = below(r, 1u << 24);
    c.dest_qp_num = chance(r, 50) ? below(r, 64) : (uint32_t)next(r);
    c.qp_access_flags = chance(r, 80) ? below(r, 16) : (uint32_t)next(r);
    c.pkey_index = chance(r, 90) ? 0 : (uint16_t)next(r);
    c.port_num = chance(r, 90) ? 1 : (uint8_t)next(r);
    c.path_mtu = chance(r, 80) ? 1 + below(r, 5) : (uint8_t)next(r);
    c.max_rd_atomic = (uint8_t)some_count(r, 4, (uint32_t)proc.attr.max_qp_rd_atom);
    c.max_dest_rd_atomic = (uint8_t)some_count(r, 4, (uint32_t)proc.attr.max_qp_init_rd_atom);
    c.min_rnr_timer = below(r, 32);
    c.timeout = below(r, 32);
    c.retry_cnt = below(r, 8);
    c.rnr_retry = below(r, 8);
    c.en_sqd_async_notify = below(r, 2);
    memcpy(d->dgid, proc.gid.raw, 16);
    if (chance(r, 10)) {
        for (int i = 0; i < 16; i++) {
            d->dgid[i] = (uint8_t)next(r);
        }
    }
    d->sgid_index = chance(r, 90) ? (uint8_t)proc.gid_index : (uint8_t)next(r);
    d->hop_limit = 64;
    d->is_global = chance(r, 90);
    d->port_num = chance(r, 90) ? 1 : (uint8_t)next(r);
    d->sl = below(r, 16);
    d->flow_label = chance(r, 90) ? 0 : (uint32_t)next(r);
    d->static_rate = chance(r, 90) ? 0 : (uint8_t)next(r);

    switch (below(r, 8)) {
    case 0:
        c.qp_state = IBV_QPS_INIT;
        c.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        break;
    case 1:
        c.qp_state = IBV_QPS_INIT;
        c.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        break;
    case 2:
        c.qp_state = IBV_QPS_RTR;
        c.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        break;
    case 3:
        c.qp_state = IBV_QPS_RTS;
        c.attr_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
        break;
    case 4:
        c.qp_state = chance(r, 50) ? IBV_QPS_ERR : IBV_QPS_RESET;
        c.attr_mask = IBV_QP_STATE;
        break;
    case 5:
        c.qp_state = IBV_QPS_RTR;
        c.attr_mask = IBV_QP_STATE | IBV_QP_QKEY;
        break;
    default:
        c.qp_state = below(r, 9);
        c.cur_qp_state = below(r, 9);
        c.attr_mask = (uint32_t)next(r) & (chance(r, 50) ? 0x1fffff : 0xffffffff);
        break;
    }
    cmd(IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof(c), sizeof(c), 0);
}

static void op_query_qp(struct rng *r)
{
    struct ib_uverbs_query_qp c = {
        .response = (uintptr_t)resp,
        .qp_handle = some_handle(r, K_QP),
        .attr_mask = chance(r, 50) ? 0x1fffff : (uint32_t)next(r),
    };

    cmd(IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof(c), sizeof(c),
        sizeof(struct ib_uverbs_query_qp_resp));
}

static void op_create_srq(struct rng *r)
{
    struct {
        struct ib_uverbs_create_srq core;
        struct pvrdma_create_srq drv;
    } c;
    size_t full_out = sizeof(struct ib_uverbs_create_srq_resp) + sizeof(struct pvrdma_create_srq_resp);
    size_t in_len, out_len;
    uint64_t bytes;

    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp;
    c.core.user_handle = next(r);
    c.core.pd_handle = some_handle(r, K_PD);
    c.core.max_wr = some_count(r, 64, (uint32_t)proc.attr.max_srq_wr);
    c.core.max_sge = some_count(r, 4, (uint32_t)proc.attr.max_srq_sge);
    c.core.srq_limit = chance(r, 80) ? 0 : some_count(r, 64, c.core.max_wr);
    bytes = ring_bytes(c.core.max_wr, c.core.max_sge, sizeof(struct pvrdma_rq_wqe_hdr));
    if (bytes > ARENA / 2 || chance(r, 10)) {
        bytes = some_count(r, 16 * PAGE, ARENA);
    }
    c.drv.buf_addr = some_buffer(r, bytes);
    c.drv.buf_size = (uint32_t)bytes;
    some_lengths(r, sizeof(c.core), sizeof(c), sizeof(struct ib_uverbs_create_srq_resp), full_out,
                 &in_len, &out_len);
    if (cmd(IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), in_len, out_len) == 0) {
        pool_add(K_SRQ, ((struct ib_uverbs_create_srq_resp *)resp)->srq_handle);
    }
}

static void op_modify_srq(struct rng *r)
{
    struct ib_uverbs_modify_srq c = {
        .srq_handle = some_handle(r, K_SRQ),
        .attr_mask = chance(r, 70) ? IBV_SRQ_LIMIT : (uint32_t)next(r),
        .max_wr = some_count(r, 64, (uint32_t)proc.attr.max_srq_wr),
        .srq_limit = some_count(r, 64, (uint32_t)proc.attr.max_srq_wr),
    };

    cmd(IB_USER_VERBS_CMD_MODIFY_SRQ, &c, sizeof(c), sizeof(c), 0);
}

static void op_query_srq(struct rng *r)
{
    struct ib_uverbs_query_srq c = {
        .response = (uintptr_t)resp,
        .srq_handle = some_handle(r, K_SRQ),
    };

    cmd(IB_USER_VERBS_CMD_QUERY_SRQ, &c, sizeof(c), sizeof(c),
        sizeof(struct ib_uverbs_query_srq_resp));
}

static void op_create_ah(struct rng *r)
{
    struct ib_uverbs_create_ah c;

    memset(&c, 0, sizeof(c));
    c.response = (uintptr_t)resp;
    c.user_handle = next(r);
    c.pd_handle = some_handle(r, K_PD);
    memcpy(c.attr.grh.dgid, proc.gid.raw, 16);
    if (chance(r, 20)) {
        for (int i = 0; i < 16; i++) {
            c.attr.grh.dgid[i] = (uint8_t)next(r);
        }
    }
    c.attr.grh.sgid_index = chance(r, 90) ? (uint8_t)proc.gid_index : (uint8_t)next(r);
    c.attr.grh.hop_limit = (uint8_t)next(r);
    c.attr.grh.flow_label = chance(r, 90) ? 0 : (uint32_t)next(r);
    c.attr.dlid = (uint16_t)next(r);
    c.attr.sl = below(r, 16);
    c.attr.is_global = chance(r, 90);
    c.attr.port_num = chance(r, 90) ? 1 : (uint8_t)next(r);
    if (cmd(IB_USER_VERBS_CMD_CREATE_AH, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_create_ah_resp)) == 0) {
        pool_add(K_AH, ((struct ib_uverbs_create_ah_resp *)resp)->ah_handle);
    }
}

static void op_query(struct rng *r)
{
    if (chance(r, 50)) {
        struct ib_uverbs_query_device c = { .response = (uintptr_t)resp };

        cmd(IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_query_device_resp));
    } else {
        struct ib_uverbs_query_port c = {
            .response = (uintptr_t)resp,
            .port_num = chance(r, 80) ? 1 : (uint8_t)next(r),
        };

        cmd(IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_query_port_resp));
    }
}

/* The kernel's data-path commands on user objects: refused by the core (the
 * driver offers no kernel rings to user space), but they reach the lookups. */
static void op_kernel_datapath(struct rng *r)
{
    if (chance(r, 50)) {
        struct ib_uverbs_poll_cq c = {
            .response = (uintptr_t)resp,
            .cq_handle = some_handle(r, K_CQ),
            .ne = below(r, 4),
        };

        cmd(IB_USER_VERBS_CMD_POLL_CQ, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_poll_cq_resp));
    } else {
        struct ib_uverbs_req_notify_cq c = {
            .cq_handle = some_handle(r, K_CQ),
            .solicited_only = below(r, 2),
        };

        cmd(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof(c), sizeof(c), 0);
    }
}

struct op {
    void (*run)(struct rng *r);
    unsigned weight;
};

static const struct op ops[] = {
    { op_alloc_pd, 8 },   { op_create_cq, 8 },  { op_resize_cq, 2 },       { op_reg_mr, 8 },
    { op_create_qp, 10 }, { op_modify_qp, 14 }, { op_query_qp, 4 },        { op_create_srq, 5 },
    { op_modify_srq, 3 }, { op_query_srq, 2 },  { op_create_ah, 4 },       { op_destroy, 14 },
    { op_query, 2 },      { op_kernel_datapath, 2 },
};

struct thread_arg {
    uint64_t seed;
    long n_ops;
};

static void *fuzz_thread(void *p)
{
    struct thread_arg *a = p;
    struct rng r = { a->seed | 1 };
    unsigned total = 0;

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        total += ops[i].weight;
    }
    for (long i = 0; i < a->n_ops; i++) {
        unsigned pick = below(&r, total);
        size_t k = 0;

        while (pick >= ops[k].weight) {
            pick -= ops[k++].weight;
        }
        ops[k].run(&r);
    }
    return NULL;
}

/* Destroys what the round still holds, in dependency order; each must succeed. */
static void destroy_all(void)
{
    for (int k = 0; k < KINDS; k++) {
        while (proc.pool[k].n > 0) {
            uint32_t h = proc.pool[k].handle[proc.pool[k].n - 1];
            int e = destroy((enum kind)k, h);

            if (e) {
                fail("clean exit: destroying %s handle %u: %s", kind_name[k], h, strerror(e));
                proc.pool[k].n--;
            } else {
                shared->destroyed_at_exit++;
            }
        }
    }
}

enum ending { CLEAN, EXIT, KILL };
static const char *const ending_name[] = { "clean", "exit", "kill" };

static void *map(size_t len, int prot)
{
    void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        perror("mmap");
        _exit(2);
    }
    return p;
}

/* Records where a fault hit, for the parent's report, and dies of it. */
static void on_fault(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    shared->fault_addr = (uintptr_t)info->si_addr;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The child: one context, two fuzzing threads, the ending. */
static void child(const char *dev_name, int gid_index, uint64_t seed, long n_ops, enum ending end)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx = NULL;
    pthread_t t[THREADS];
    struct thread_arg arg[THREADS];

    struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO };

    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), dev_name)) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (!ctx || ibv_query_device(ctx, &proc.attr) || ibv_query_gid(ctx, 1, gid_index, &proc.gid)) {
        fail("cannot open %s: %s", dev_name, strerror(errno));
        _exit(1);
    }
    pthread_mutex_init(&proc.lock, NULL);
    proc.cmd_fd = ctx->cmd_fd;
    proc.gid_index = gid_index;
    proc.arena = map(ARENA, PROT_READ | PROT_WRITE);
    shared->arena = (uintptr_t)proc.arena;
    proc.ro = map(RO_AREA, PROT_READ);
    /* Inaccessible, and kept mapped: an unmapped range would be reused by the next mmap
     * (a thread's stack), which the device would then be asked to write. */
    proc.hole = map(HOLE, PROT_NONE);

    for (int i = 0; i < THREADS; i++) {
        arg[i].seed = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1;
        arg[i].n_ops = n_ops;
        pthread_create(&t[i], NULL, fuzz_thread, &arg[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    if (end == CLEAN) {
        destroy_all();
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    long rounds, n_ops;
    uint64_t seed;
    struct counts total = { 0 };

    if (argc != 6) {
        fprintf(stderr, "usage: %s DEVICE GID_INDEX SEED ROUNDS OPS\n", argv[0]);
        return 2;
    }
    seed = strtoull(argv[3], NULL, 0);
    rounds = strtol(argv[4], NULL, 0);
    n_ops = strtol(argv[5], NULL, 0);
    shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    printf("uverbs_fuzz: %s, seed %llu, %ld rounds of %d threads x %ld commands\n", argv[1],
           (unsigned long long)seed, rounds, THREADS, n_ops);
    fflush(stdout);

    for (long round = 0; round < rounds; round++) {
        uint64_t round_seed = seed + (uint64_t)round;
        struct rng r = { round_seed * 0xd1342543de82ef95ull | 1 };
        enum ending end = (enum ending)below(&r, 3);
        struct timespec t0, t1;
        int status;
        pid_t pid;

        memset(shared, 0, sizeof(*shared));
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid = fork();
        if (pid == 0) {
            child(argv[1], atoi(argv[2]), round_seed, n_ops, end);
        }
        if (end == KILL) {
            /* Mostly while the threads run, sometimes while the context opens. */
            long ms = 100 + below(&r, 1400);
            struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };

            nanosleep(&d, NULL);
            kill(pid, SIGKILL);
        }
        waitpid(pid, &status, 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (WIFSIGNALED(status) && !(end == KILL && WTERMSIG(status) == SIGKILL)) {
            if (shared->fail++ == 0) {
                snprintf(shared->first_fail, sizeof(shared->first_fail),
                         "the process died of signal %d (fault address %#llx, arena %#llx)",
                         WTERMSIG(status), (unsigned long long)shared->fault_addr,
                         (unsigned long long)shared->arena);
            }
        } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && shared->fail == 0) {
            shared->fail++;
            snprintf(shared->first_fail, sizeof(shared->first_fail), "the process exited %d",
                     WEXITSTATUS(status));
        }
        printf("round %ld (seed %llu, %s): %ld commands, %ld accepted, %ld refused, "
               "%ld destroyed at exit, %.1f s%s%s\n",
               round, (unsigned long long)round_seed, ending_name[end], shared->commands,
               shared->accepted, shared->refused, shared->destroyed_at_exit,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
               shared->fail ? "; FAIL: " : "", shared->fail ? shared->first_fail : "");
        fflush(stdout);
        total.commands += shared->commands;
        total.accepted += shared->accepted;
        total.refused += shared->refused;
        total.destroyed_at_exit += shared->destroyed_at_exit;
        total.fail += shared->fail;
        for (int k = 0; k < KINDS; k++) {
            total.created[k] += shared->created[k];
        }
        for (int c = 0; c < CMDS; c++) {
            total.tried[c] += shared->tried[c];
            total.took[c] += shared->took[c];
        }
    }
    printf("accepted/tried by command:");
    for (int c = 0; c < CMDS; c++) {
        if (total.tried[c]) {
            printf(" %s %ld/%ld", cmd_name(c), total.took[c], total.tried[c]);
        }
    }
    printf("\n");
    printf("created:");
    for (int k = 0; k < KINDS; k++) {
        printf(" %s %ld%s", kind_name[k], total.created[k], k + 1 < KINDS ? "," : "\n");
    }
    printf("summary: %ld rounds, %ld commands, %ld accepted, %ld refused, "
           "%ld objects destroyed at exit, %ld FAIL\n",
           rounds, total.commands, total.accepted, total.refused, total.destroyed_at_exit,
           total.fail);
    return total.fail ? 1 : 0;
}
