// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_badinput: bad input from user space to the RDMA driver, case by case.
 *
 *   verbs_badinput DEVICE GID_INDEX DRIVER
 *
 * Most cases bypass libibverbs and its provider: they write legacy uverbs
 * commands (<rdma/ib_user_verbs.h>: a struct ib_uverbs_cmd_hdr, the core's
 * command struct, then the provider's udata from <rdma/vmw_pvrdma-abi.h>)
 * straight to the context's command fd, so the kernel sees exactly the
 * lengths, sizes, addresses and handles each case gives. The others use
 * libibverbs calls that go to the kernel unchanged (modify_qp, dealloc_pd,
 * destroy_*).
 *
 * Groups: invalid udata lengths and bogus ring buffers; requests longer than
 * the provider's struct, with a byte set past it or all zeros; zero and huge
 * sizes; unaligned buffers; unknown handles and handles of another context;
 * bad QP attributes; destroying objects still in use; mmap()s of the command
 * fd at offsets, lengths and sharing the provider does not use; the kernel's
 * data-path
 * commands (POST_SEND, POST_RECV, POLL_CQ, ...) on user QPs and CQs, whose
 * kernel rings do not exist (the core refuses these write commands unless a
 * driver adds them to its uverbs_cmd_mask, which neither driver may do).
 *
 * A case either must fail (MUST_FAIL) or may be accepted (MAY_ACCEPT: input
 * that is valid or that the verbs leave to the device). One line per case:
 *   ok <case>: <errno name>            refused cleanly
 *   ok <case>: accepted (...)          a MAY_ACCEPT case accepted
 *   C-driver-accepts <case>: ...       a MUST_FAIL case the C driver accepts
 *                                      (DRIVER c): reported, not a failure
 *   FAIL <case>: ...                   invalid input accepted, or a wrong result
 * Whatever a case created is destroyed again; every destroy must return 0.
 * At the end the device must still carry a SEND between two fresh QPs, and
 * one line sums up:
 *   summary: N cases, N ok, N C-driver-accepts, N FAIL
 * The exit status is 1 if any case failed.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/vmw_pvrdma-abi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum expect { MUST_FAIL, MAY_ACCEPT };

/* What a case function returns: 0 (accepted) or a positive errno. A case
 * that finds something wrong beyond accept/refuse calls case_fail(). */
typedef int (*case_fn)(char *note, size_t note_len);

struct bad_case {
    const char *name;
    case_fn run;
    enum expect expect;
    /* The C driver accepts this invalid input (seen with the stock or the
     * patched QEMU model, or both): reported as C-driver-accepts, not counted
     * as a failure. */
    int c_accepts;
    const char *what;
};

/* Sizes the pvrdma provider would use for the small objects made here. */
enum { PAGE = 4096, RING_AREA = 64 * PAGE, SMALL_CQE = 16 };

static const char *dev_name;
static const char *driver;
static int gid_index;
static long page_size;

static struct ibv_context *ctx, *ctx_b;
static struct ibv_device_attr dev_attr;
static union ibv_gid gid;
static struct ibv_pd *pd, *pd_b;
static struct ibv_cq *cq;
static struct ibv_comp_channel *channel;
static struct ibv_mr *mr;
static uint8_t *mr_buf;
static int cmd_fd;
/* Page-aligned scratch memory: commands, responses, rings. */
static uint8_t *cmd_area, *resp_area, *ring_area;
/* A page followed by an inaccessible one, for reads past a command's end. */
static uint8_t *edge_page;
/* An address range with no accessible memory. */
static uint8_t *hole;

static int n_cases, n_ok, n_c_accepts, n_fail;
static int case_failed;
static char case_fail_msg[256];

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("FAIL setup: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    exit(1);
}

/* Marks the running case failed (beyond accepted/refused), with a reason. */
static void case_fail(const char *fmt, ...)
{
    va_list ap;

    if (case_failed) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(case_fail_msg, sizeof(case_fail_msg), fmt, ap);
    va_end(ap);
    case_failed = 1;
}

static const char *errno_name(int e)
{
    static char other[32];

    switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EIO: return "EIO";
    case E2BIG: return "E2BIG";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ENOSPC: return "ENOSPC";
    case ERANGE: return "ERANGE";
    case ENOSYS: return "ENOSYS";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EOVERFLOW: return "EOVERFLOW";
    case ETIMEDOUT: return "ETIMEDOUT";
    default:
        snprintf(other, sizeof(other), "errno %d", e);
        return other;
    }
}

static void note_set(char *note, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(note, len, fmt, ap);
    va_end(ap);
}

/* ---- Raw legacy uverbs commands --------------------------------------- */

/*
 * Writes the command @body (the core struct, then the driver udata) of
 * @body_len bytes after a header, placed so that the write ends at
 * @at + 8 + @body_len; only the first @in_len body bytes are written (the
 * header's in_words says so). @out_len is the response buffer's length (core
 * response + driver udata), in out_words. Returns 0 or the errno.
 */
static int raw_at(uint8_t *at, uint32_t command, const void *body, size_t body_len,
                  size_t in_len, size_t out_len)
{
    struct ib_uverbs_cmd_hdr hdr = {
        .command = command,
        .in_words = (uint16_t)((sizeof(hdr) + in_len) / 4),
        .out_words = (uint16_t)(out_len / 4),
    };
    size_t count = sizeof(hdr) + in_len;
    ssize_t n;

    memcpy(at, &hdr, sizeof(hdr));
    memcpy(at + sizeof(hdr), body, body_len);
    n = write(cmd_fd, at, count);
    if (n == (ssize_t)count) {
        return 0;
    }
    if (n < 0) {
        return errno;
    }
    return EIO;
}

static int raw(uint32_t command, const void *body, size_t body_len, size_t in_len,
               size_t out_len)
{
    return raw_at(cmd_area, command, body, body_len, in_len, out_len);
}

/* The response buffer, cleared to 0xee so a write past out_len shows. */
static void *resp_clear(void)
{
    memset(resp_area, 0xee, PAGE);
    return resp_area;
}

/* ---- CQ ---- */

struct cq_cmd {
    struct ib_uverbs_create_cq core;
    struct pvrdma_create_cq drv;
};

/* A valid CREATE_CQ for @cqe entries on a fresh ring in ring_area. */
static void cq_cmd_valid(struct cq_cmd *cmd, uint32_t cqe)
{
    struct cq_cmd c;
    uint32_t pages = 1 + (cqe * 64 + PAGE - 1) / PAGE;

    memset(&c, 0, sizeof(c));
    memset(ring_area, 0, (size_t)pages * PAGE);
    c.core.response = (uintptr_t)resp_clear();
    c.core.user_handle = 0x1234;
    c.core.cqe = cqe;
    c.core.comp_vector = 0;
    c.core.comp_channel = -1;
    c.drv.buf_addr = (uintptr_t)ring_area;
    c.drv.buf_size = pages * PAGE;
    *cmd = c;
}

static const size_t CQ_RESP = sizeof(struct ib_uverbs_create_cq_resp) +
                              sizeof(struct pvrdma_create_cq_resp);

static int raw_destroy_cq(uint32_t handle)
{
    struct ib_uverbs_destroy_cq d = { .response = (uintptr_t)resp_clear(), .cq_handle = handle };

    return raw(IB_USER_VERBS_CMD_DESTROY_CQ, &d, sizeof(d), sizeof(d),
               sizeof(struct ib_uverbs_destroy_cq_resp));
}

/* Runs a CREATE_CQ; if it was accepted, destroys the CQ again. */
static int cq_create_then_destroy(struct cq_cmd *c, size_t in_len, size_t out_len,
                                  uint8_t *at, char *note, size_t note_len)
{
    /* At the page edge, only what is written fits. */
    size_t body_len = at == cmd_area ? sizeof(*c) : in_len;
    int r = raw_at(at, IB_USER_VERBS_CMD_CREATE_CQ, c, body_len, in_len, out_len);

    if (r == 0) {
        struct ib_uverbs_create_cq_resp *resp = (void *)(uintptr_t)c->core.response;
        uint32_t handle = resp->cq_handle;
        int d;

        note_set(note, note_len, "CQ handle %u, %u entries%s", handle, resp->cqe,
                 ((uint8_t *)resp)[out_len] != 0xee ? "; the driver wrote past the response "
                 "buffer" : "");
        d = raw_destroy_cq(handle);
        if (d) {
            case_fail("destroying the accepted CQ (handle %u): %s", handle, errno_name(d));
        }
    }
    return r;
}

static int cq_udata_absent(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    return cq_create_then_destroy(&c, sizeof(c.core), CQ_RESP, cmd_area, note, len);
}

/* Half the udata (buf_addr only); the rest, valid, follows in memory. */
static int cq_udata_short(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    return cq_create_then_destroy(&c, sizeof(c.core) + 8, CQ_RESP, cmd_area, note, len);
}

/* Half the udata, and nothing readable after it. */
static int cq_udata_short_edge(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);
    size_t count = sizeof(struct ib_uverbs_cmd_hdr) + sizeof(c.core) + 8;

    return cq_create_then_destroy(&c, sizeof(c.core) + 8, CQ_RESP,
                                  edge_page + PAGE - count, note, len);
}

/* Response buffer with room for the core's response only. */
static int cq_resp_udata_absent(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);
    return cq_create_then_destroy(&c, sizeof(c), sizeof(struct ib_uverbs_create_cq_resp),
                                  cmd_area, note, len);
}

/* Response buffer with 4 of the driver's 8 bytes. */
static int cq_resp_udata_short(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);
    return cq_create_then_destroy(&c, sizeof(c), sizeof(struct ib_uverbs_create_cq_resp) + 4,
                                  cmd_area, note, len);
}

static int cq_buf_unmapped(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.drv.buf_addr = (uintptr_t)hole;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_buf_kernel(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.drv.buf_addr = 0xffff888000000000ull;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_buf_size_zero(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.drv.buf_size = 0;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

/* A ring of one page (the ring state only) for 256 entries (5 pages). */
static int cq_buf_too_small(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, 256);

    c.drv.buf_size = PAGE;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

/* A ring far larger than the device maps for a CQ (4 MiB, 1024 pages). */
static int cq_buf_huge(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);
    size_t size = 4u << 20;
    void *big = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int r;

    if (big == MAP_FAILED) {
        die("mmap 4 MiB: %s", strerror(errno));
    }
    c.drv.buf_addr = (uintptr_t)big;
    c.drv.buf_size = (uint32_t)size;
    r = cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
    munmap(big, size);
    return r;
}

static int cq_buf_unaligned(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.drv.buf_addr += 8;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_cqe_zero(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, 0);

    c.drv.buf_size = 2 * PAGE;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_cqe_over_max(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.core.cqe = (uint32_t)dev_attr.max_cqe + 1;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_cqe_huge(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.core.cqe = 0x80000000u;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_cqe_all_ones(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.core.cqe = 0xffffffffu;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_comp_vector_huge(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.core.comp_vector = 1000;
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_channel_bad_fd(char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);

    c.core.comp_channel = 0; /* stdin: not a completion channel */
    return cq_create_then_destroy(&c, sizeof(c), CQ_RESP, cmd_area, note, len);
}

static int cq_resize(char *note, size_t len)
{
    struct {
        struct ib_uverbs_resize_cq core;
        struct pvrdma_resize_cq drv;
    } c;

    (void)note;
    (void)len;
    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp_clear();
    c.core.cq_handle = cq->handle;
    c.core.cqe = 64;
    c.drv.buf_addr = (uintptr_t)ring_area;
    c.drv.buf_size = 3 * PAGE;
    return raw(IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof(c), sizeof(c),
               sizeof(struct ib_uverbs_resize_cq_resp));
}

/* ---- QP ---- */

struct qp_cmd {
    struct ib_uverbs_create_qp core;
    struct pvrdma_create_qp drv;
};

static const size_t QP_RESP = sizeof(struct ib_uverbs_create_qp_resp) +
                              sizeof(struct pvrdma_create_qp_resp);

/* A valid CREATE_QP (RC, 4 WRs of 1 SGE each way) on rings in ring_area:
 * send ring 2 pages (ring state + WQEs), receive ring 1 page after it. */
static void qp_cmd_valid(struct qp_cmd *cmd)
{
    struct qp_cmd c;

    memset(&c, 0, sizeof(c));
    memset(ring_area, 0, 3 * PAGE);
    c.core.response = (uintptr_t)resp_clear();
    c.core.user_handle = 0x5678;
    c.core.pd_handle = pd->handle;
    c.core.send_cq_handle = cq->handle;
    c.core.recv_cq_handle = cq->handle;
    c.core.max_send_wr = 4;
    c.core.max_recv_wr = 4;
    c.core.max_send_sge = 1;
    c.core.max_recv_sge = 1;
    c.core.qp_type = IBV_QPT_RC;
    c.drv.sbuf_addr = (uintptr_t)ring_area;
    c.drv.sbuf_size = 2 * PAGE;
    c.drv.rbuf_addr = (uintptr_t)ring_area + 2 * PAGE;
    c.drv.rbuf_size = PAGE;
    c.drv.qp_addr = 0x1000;
    *cmd = c;
}

static int raw_destroy_qp(uint32_t handle)
{
    struct ib_uverbs_destroy_qp d = { .response = (uintptr_t)resp_clear(), .qp_handle = handle };

    return raw(IB_USER_VERBS_CMD_DESTROY_QP, &d, sizeof(d), sizeof(d),
               sizeof(struct ib_uverbs_destroy_qp_resp));
}

/*
 * Set when a QP was created with less than its command asked for, which the
 * verbs forbid, or with inline data, which the device cannot honour: a
 * failure when the case's input was valid (an accepted MUST_FAIL case is
 * reported for its acceptance).
 */
static char granted_wrong[200];

static int qp_create_then_destroy(struct qp_cmd *c, size_t in_len, size_t out_len, char *note,
                                  size_t note_len)
{
    int r = raw(IB_USER_VERBS_CMD_CREATE_QP, c, sizeof(*c), in_len, out_len);

    if (r == 0) {
        struct ib_uverbs_create_qp_resp *resp = (void *)(uintptr_t)c->core.response;
        uint32_t handle = resp->qp_handle;
        int d;

        note_set(note, note_len,
                 "QP %u: max_send_wr %u, max_recv_wr %u, max_send_sge %u, max_recv_sge %u, "
                 "max_inline_data %u", resp->qpn, resp->max_send_wr, resp->max_recv_wr,
                 resp->max_send_sge, resp->max_recv_sge, resp->max_inline_data);
        /* The verbs' contract: the QP gets at least the WRs and SGEs asked. */
        if (resp->max_send_wr < c->core.max_send_wr || resp->max_recv_wr < c->core.max_recv_wr ||
            resp->max_send_sge < c->core.max_send_sge ||
            resp->max_recv_sge < c->core.max_recv_sge) {
            snprintf(granted_wrong, sizeof(granted_wrong),
                     "granted less than asked (asked %u/%u WRs, %u/%u SGEs)",
                     c->core.max_send_wr, c->core.max_recv_wr, c->core.max_send_sge,
                     c->core.max_recv_sge);
        }
        /*
         * Inline data is another matter: the device has none. It gathers
         * every send through its SGEs' lkeys and rdma-core's provider copies
         * no data into the WQE, so an inline send from an unregistered
         * buffer, which the verbs allow, fails with a protection error
         * (seen: rdma_client against rdma_server). rdma-core's tools ask
         * for inline data and use what they are granted: granting none is
         * the truth, granting any is a lie.
         */
        if (resp->max_inline_data != 0) {
            snprintf(granted_wrong, sizeof(granted_wrong),
                     "granted %u bytes of inline data (asked %u), which the device cannot honour",
                     resp->max_inline_data, c->core.max_inline_data);
        }
        d = raw_destroy_qp(handle);
        if (d) {
            case_fail("destroying the accepted QP (handle %u): %s", handle, errno_name(d));
        }
    }
    return r;
}

static int qp_udata_absent(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    return qp_create_then_destroy(&c, sizeof(c.core), QP_RESP, note, len);
}

/* The udata without qp_addr (24 of 32 bytes); the rest follows in memory. */
static int qp_udata_short(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    return qp_create_then_destroy(&c, sizeof(c.core) + 24, QP_RESP, note, len);
}

static int qp_resp_udata_absent(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    return qp_create_then_destroy(&c, sizeof(c), sizeof(struct ib_uverbs_create_qp_resp),
                                  note, len);
}

static int qp_sbuf_unmapped(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.drv.sbuf_addr = (uintptr_t)hole;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_rbuf_size_zero(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.drv.rbuf_size = 0;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_sbuf_unaligned(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.drv.sbuf_addr += 8;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

/* Rings of 2 + 1 pages for 4096 send WRs (the rings hold a few dozen). */
static int qp_send_wr_over_ring(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_send_wr = 4096;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_send_wr_over_max(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_send_wr = (uint32_t)dev_attr.max_qp_wr + 1;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_send_wr_huge(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_send_wr = 1u << 30;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_recv_wr_huge(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_recv_wr = 0xffffffffu;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_send_sge_over_max(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_send_sge = (uint32_t)dev_attr.max_sge + 1;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_send_sge_huge(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_send_sge = 1u << 20;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_inline_huge(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_inline_data = 1u << 20;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

/*
 * As much inline data as perftest's latency tools ask for: a valid request,
 * granted none (see qp_create_then_destroy).
 */
static int qp_inline_256(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_inline_data = 256;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

/* More inline data than a send WQE of one page could hold beside its header. */
static int qp_inline_page(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.max_inline_data = 4096;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_type_uc(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.qp_type = IBV_QPT_UC;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_type_unknown(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.qp_type = 200;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_unknown_cq(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.send_cq_handle = 0xdead;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

static int qp_pd_other_context(char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);

    c.core.pd_handle = pd_b->handle;
    return qp_create_then_destroy(&c, sizeof(c), QP_RESP, note, len);
}

/* ---- SRQ ---- */

struct srq_cmd {
    struct ib_uverbs_create_srq core;
    struct pvrdma_create_srq drv;
};

static const size_t SRQ_RESP = sizeof(struct ib_uverbs_create_srq_resp) +
                               sizeof(struct pvrdma_create_srq_resp);

static void srq_cmd_valid(struct srq_cmd *cmd)
{
    struct srq_cmd c;

    memset(&c, 0, sizeof(c));
    memset(ring_area, 0, 2 * PAGE);
    c.core.response = (uintptr_t)resp_clear();
    c.core.user_handle = 0x9abc;
    c.core.pd_handle = pd->handle;
    c.core.max_wr = 4;
    c.core.max_sge = 1;
    c.drv.buf_addr = (uintptr_t)ring_area;
    c.drv.buf_size = 2 * PAGE;
    *cmd = c;
}

static int raw_destroy_srq(uint32_t handle)
{
    struct ib_uverbs_destroy_srq d = { .response = (uintptr_t)resp_clear(),
                                       .srq_handle = handle };

    return raw(IB_USER_VERBS_CMD_DESTROY_SRQ, &d, sizeof(d), sizeof(d),
               sizeof(struct ib_uverbs_destroy_srq_resp));
}

static int srq_create_then_destroy(struct srq_cmd *c, size_t in_len, char *note,
                                   size_t note_len)
{
    int r = raw(IB_USER_VERBS_CMD_CREATE_SRQ, c, sizeof(*c), in_len, SRQ_RESP);

    if (r == 0) {
        struct ib_uverbs_create_srq_resp *resp = (void *)(uintptr_t)c->core.response;
        uint32_t handle = resp->srq_handle;
        int d;

        note_set(note, note_len, "SRQ handle %u: max_wr %u, max_sge %u", handle, resp->max_wr,
                 resp->max_sge);
        d = raw_destroy_srq(handle);
        if (d) {
            case_fail("destroying the accepted SRQ (handle %u): %s", handle, errno_name(d));
        }
    }
    return r;
}

static int srq_udata_absent(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    return srq_create_then_destroy(&c, sizeof(c.core), note, len);
}

static int srq_udata_short(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    return srq_create_then_destroy(&c, sizeof(c.core) + 8, note, len);
}

static int srq_buf_unmapped(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    c.drv.buf_addr = (uintptr_t)hole;
    return srq_create_then_destroy(&c, sizeof(c), note, len);
}

/* A ring of one page (the ring state only) for 256 receives (2 pages of WQEs). */
static int srq_buf_too_small(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    c.core.max_wr = 256;
    c.drv.buf_size = PAGE;
    return srq_create_then_destroy(&c, sizeof(c), note, len);
}

static int srq_wr_huge(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    c.core.max_wr = 1u << 30;
    return srq_create_then_destroy(&c, sizeof(c), note, len);
}

static int srq_sge_huge(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    c.core.max_sge = 1u << 20;
    return srq_create_then_destroy(&c, sizeof(c), note, len);
}

static int srq_pd_other_context(char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);

    c.core.pd_handle = pd_b->handle;
    return srq_create_then_destroy(&c, sizeof(c), note, len);
}

/* ---- Requests longer than the provider's struct ---- */

/*
 * A valid CREATE_CQ, CREATE_QP or CREATE_SRQ (@cmd, @cmd_len bytes: the core's
 * struct, then the provider's) followed by 8 more udata bytes, @tail: how a
 * newer provider would ask for something it added at the end of its struct.
 * The RDMA core's rule for udata (include/rdma/ib_verbs.h, struct ib_udata):
 * a longer request is taken if the bytes the kernel does not know are zero,
 * and refused with EOPNOTSUPP otherwise, so that the provider learns this
 * kernel lacks the feature rather than having it silently ignored. Linux
 * 7.3's C driver reads these three requests with ib_copy_validate_udata_in(),
 * which follows it, and the Rust driver with UData::read, which calls the
 * same: neither is excused. The core's response (in resp_area) holds the new
 * object's handle at @handle_at; @destroy destroys an accepted object again.
 */
static int create_with_tail(uint32_t command, const void *cmd, size_t cmd_len, uint64_t tail,
                            size_t out_len, size_t handle_at, int (*destroy)(uint32_t),
                            char *note, size_t note_len)
{
    uint8_t body[sizeof(struct qp_cmd) + sizeof(tail)];
    size_t body_len = cmd_len + sizeof(tail);
    int r;

    if (body_len > sizeof(body)) {
        die("a command of %zu bytes with its tail does not fit", cmd_len);
    }
    memcpy(body, cmd, cmd_len);
    memcpy(body + cmd_len, &tail, sizeof(tail));
    r = raw(command, body, body_len, body_len, out_len);
    if (r == 0) {
        uint32_t handle;
        int d;

        memcpy(&handle, resp_area + handle_at, sizeof(handle));
        note_set(note, note_len, "handle %u", handle);
        d = destroy(handle);
        if (d) {
            case_fail("destroying the accepted object (handle %u): %s", handle, errno_name(d));
        }
    } else if (tail != 0 && r != EOPNOTSUPP) {
        case_fail("refused, but with %s rather than EOPNOTSUPP", errno_name(r));
    } else if (tail == 0) {
        case_fail("refused a request whose bytes past the provider's struct are all zero");
    }
    return r;
}

/* Only the tail's last byte is set: the driver must check all of it. */
static const uint64_t TAIL_SET = 1ull << 56;

static int cq_udata_tail(uint64_t tail, char *note, size_t len)
{
    struct cq_cmd c;

    cq_cmd_valid(&c, SMALL_CQE);
    return create_with_tail(IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), tail, CQ_RESP,
                            offsetof(struct ib_uverbs_create_cq_resp, cq_handle), raw_destroy_cq,
                            note, len);
}

static int qp_udata_tail(uint64_t tail, char *note, size_t len)
{
    struct qp_cmd c;

    qp_cmd_valid(&c);
    return create_with_tail(IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), tail, QP_RESP,
                            offsetof(struct ib_uverbs_create_qp_resp, qp_handle), raw_destroy_qp,
                            note, len);
}

static int srq_udata_tail(uint64_t tail, char *note, size_t len)
{
    struct srq_cmd c;

    srq_cmd_valid(&c);
    return create_with_tail(IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), tail, SRQ_RESP,
                            offsetof(struct ib_uverbs_create_srq_resp, srq_handle),
                            raw_destroy_srq, note, len);
}

static int cq_udata_tail_set(char *n, size_t l) { return cq_udata_tail(TAIL_SET, n, l); }
static int cq_udata_tail_zero(char *n, size_t l) { return cq_udata_tail(0, n, l); }
static int qp_udata_tail_set(char *n, size_t l) { return qp_udata_tail(TAIL_SET, n, l); }
static int qp_udata_tail_zero(char *n, size_t l) { return qp_udata_tail(0, n, l); }
static int srq_udata_tail_set(char *n, size_t l) { return srq_udata_tail(TAIL_SET, n, l); }
static int srq_udata_tail_zero(char *n, size_t l) { return srq_udata_tail(0, n, l); }

/* ---- MR ---- */

static int raw_dereg_mr(uint32_t handle)
{
    struct ib_uverbs_dereg_mr d = { .mr_handle = handle };

    return raw(IB_USER_VERBS_CMD_DEREG_MR, &d, sizeof(d), sizeof(d), 0);
}

static int reg_mr_then_dereg(uint64_t start, uint64_t length, uint64_t iova, uint32_t pd_handle,
                             uint32_t access, char *note, size_t note_len)
{
    struct ib_uverbs_reg_mr c = {
        .response = (uintptr_t)resp_clear(), .start = start, .length = length,
        .hca_va = iova, .pd_handle = pd_handle, .access_flags = access,
    };
    int r = raw(IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), sizeof(c),
                sizeof(struct ib_uverbs_reg_mr_resp));

    if (r == 0) {
        struct ib_uverbs_reg_mr_resp *resp = (void *)resp_area;
        uint32_t handle = resp->mr_handle;
        int d;

        note_set(note, note_len, "MR handle %u, lkey 0x%x", handle, resp->lkey);
        d = raw_dereg_mr(handle);
        if (d) {
            case_fail("deregistering the accepted MR (handle %u): %s", handle, errno_name(d));
        }
    }
    return r;
}

static int mr_length_zero(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf, 0, (uintptr_t)mr_buf, pd->handle,
                             IBV_ACCESS_LOCAL_WRITE, note, len);
}

/* 1 TiB: far past max_mr_size (and mostly unmapped). */
static int mr_length_huge(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf, 1ull << 40, (uintptr_t)mr_buf, pd->handle,
                             IBV_ACCESS_LOCAL_WRITE, note, len);
}

/* One page past max_mr_size, all of it mapped (not populated). */
static int mr_length_over_max(char *note, size_t len)
{
    uint64_t size = dev_attr.max_mr_size + PAGE;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int r;

    if (p == MAP_FAILED) {
        note_set(note, len, "cannot map %llu bytes", (unsigned long long)size);
        return ENOMEM;
    }
    r = reg_mr_then_dereg((uintptr_t)p, size, (uintptr_t)p, pd->handle,
                          IBV_ACCESS_LOCAL_WRITE, note, len);
    munmap(p, size);
    return r;
}

static int mr_wraps(char *note, size_t len)
{
    return reg_mr_then_dereg(0xfffffffffffff000ull, 2 * PAGE, 0xfffffffffffff000ull,
                             pd->handle, IBV_ACCESS_LOCAL_WRITE, note, len);
}

static int mr_unmapped(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)hole, 4 * PAGE, (uintptr_t)hole, pd->handle,
                             IBV_ACCESS_LOCAL_WRITE, note, len);
}

/* Valid: an MR that starts and ends inside pages. */
static int mr_unaligned(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf + 100, 3 * PAGE, (uintptr_t)mr_buf + 100,
                             pd->handle, IBV_ACCESS_LOCAL_WRITE, note, len);
}

/* The I/O virtual address's page offset differs from the buffer's. */
static int mr_iova_offset_mismatch(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf + 100, PAGE, (uintptr_t)mr_buf + 200,
                             pd->handle, IBV_ACCESS_LOCAL_WRITE, note, len);
}

static int mr_remote_write_without_local(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf, PAGE, (uintptr_t)mr_buf, pd->handle,
                             IBV_ACCESS_REMOTE_WRITE, note, len);
}

static int mr_access_unknown_bits(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf, PAGE, (uintptr_t)mr_buf, pd->handle,
                             IBV_ACCESS_LOCAL_WRITE | (1u << 15), note, len);
}

static int mr_pd_other_context(char *note, size_t len)
{
    return reg_mr_then_dereg((uintptr_t)mr_buf, PAGE, (uintptr_t)mr_buf, pd_b->handle,
                             IBV_ACCESS_LOCAL_WRITE, note, len);
}

/* ---- Unknown handles ---- */

enum { NO_SUCH_HANDLE = 0x7ffff };

static int destroy_cq_unknown(char *note, size_t len)
{
    (void)note;
    (void)len;
    return raw_destroy_cq(NO_SUCH_HANDLE);
}

static int destroy_qp_unknown(char *note, size_t len)
{
    (void)note;
    (void)len;
    return raw_destroy_qp(NO_SUCH_HANDLE);
}

static int destroy_srq_unknown(char *note, size_t len)
{
    (void)note;
    (void)len;
    return raw_destroy_srq(NO_SUCH_HANDLE);
}

static int dereg_mr_unknown(char *note, size_t len)
{
    (void)note;
    (void)len;
    return raw_dereg_mr(NO_SUCH_HANDLE);
}

static int dealloc_pd_unknown(char *note, size_t len)
{
    struct ib_uverbs_dealloc_pd d = { .pd_handle = NO_SUCH_HANDLE };

    (void)note;
    (void)len;
    return raw(IB_USER_VERBS_CMD_DEALLOC_PD, &d, sizeof(d), sizeof(d), 0);
}

/* The PD of the other context, by its handle, from this context. */
static int dealloc_pd_other_context(char *note, size_t len)
{
    struct ib_uverbs_dealloc_pd d = { .pd_handle = pd_b->handle };
    int r;

    (void)note;
    (void)len;
    r = raw(IB_USER_VERBS_CMD_DEALLOC_PD, &d, sizeof(d), sizeof(d), 0);
    if (r == 0) {
        case_fail("DEALLOC_PD of handle %u freed a PD of this context", pd_b->handle);
    }
    return r;
}

static int modify_qp_unknown(char *note, size_t len)
{
    struct ib_uverbs_modify_qp m;

    (void)note;
    (void)len;
    memset(&m, 0, sizeof(m));
    m.qp_handle = NO_SUCH_HANDLE;
    m.attr_mask = IBV_QP_STATE;
    m.qp_state = IBV_QPS_ERR;
    return raw(IB_USER_VERBS_CMD_MODIFY_QP, &m, sizeof(m), sizeof(m), 0);
}

static int query_qp_unknown(char *note, size_t len)
{
    struct ib_uverbs_query_qp q = { .response = (uintptr_t)resp_clear(),
                                    .qp_handle = NO_SUCH_HANDLE, .attr_mask = IBV_QP_STATE };

    (void)note;
    (void)len;
    return raw(IB_USER_VERBS_CMD_QUERY_QP, &q, sizeof(q), sizeof(q),
               sizeof(struct ib_uverbs_query_qp_resp));
}

/* ---- Bad QP attributes (libibverbs: ibv_modify_qp goes to the kernel as is) ---- */

static struct ibv_qp *make_qp(struct ibv_pd *on_pd, struct ibv_cq *on_cq, struct ibv_srq *srq)
{
    struct ibv_qp_init_attr a = {
        .send_cq = on_cq, .recv_cq = on_cq, .srq = srq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 4, .max_recv_wr = srq ? 0 : 4, .max_send_sge = 1,
                 .max_recv_sge = 1 },
    };
    struct ibv_qp *qp = ibv_create_qp(on_pd, &a);

    if (!qp) {
        die("ibv_create_qp: %s", strerror(errno));
    }
    return qp;
}

static void destroy_qp_checked(struct ibv_qp *qp)
{
    int r = ibv_destroy_qp(qp);

    if (r) {
        case_fail("ibv_destroy_qp: %s", errno_name(r));
    }
}

static int to_init(struct ibv_qp *qp)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
                             .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };

    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                         IBV_QP_ACCESS_FLAGS);
}

static void rtr_attr(struct ibv_qp_attr *a, uint32_t dest_qpn)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = IBV_QPS_RTR;
    a->path_mtu = IBV_MTU_1024;
    a->dest_qp_num = dest_qpn;
    a->max_dest_rd_atomic = 1;
    a->min_rnr_timer = 12;
    a->ah_attr.is_global = 1;
    a->ah_attr.grh.dgid = gid;
    a->ah_attr.grh.sgid_index = (uint8_t)gid_index;
    a->ah_attr.grh.hop_limit = 1;
    a->ah_attr.port_num = 1;
}

static const int RTR_MASK = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
static const int RTS_MASK = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

static void rts_attr(struct ibv_qp_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = IBV_QPS_RTS;
    a->timeout = 14;
    a->retry_cnt = 7;
    a->rnr_retry = 7;
    a->max_rd_atomic = 1;
}

/* A fresh QP, brought to @state (INIT or RTR, connected to itself), then
 * @tweak applied to a modify to the next state; returns its result. */
enum tweak {
    RESET_TO_RTS, BAD_PORT, BAD_PKEY_INDEX, BAD_SGID_INDEX, BAD_MTU, DEST_QPN_HUGE,
    RNR_TIMER_HUGE, DEST_RD_ATOMIC_HUGE, RD_ATOMIC_HUGE, RETRY_CNT_HUGE, TIMEOUT_HUGE,
    ACCESS_UNKNOWN_BITS, UNKNOWN_MASK_BITS,
};

static int modify_with(enum tweak t, char *note, size_t len)
{
    struct ibv_qp *qp = make_qp(pd, cq, NULL);
    struct ibv_qp_attr a;
    int r = 0, mask;

    (void)note;
    (void)len;
    switch (t) {
    case RESET_TO_RTS:
        rts_attr(&a);
        r = ibv_modify_qp(qp, &a, RTS_MASK);
        break;
    case UNKNOWN_MASK_BITS: {
        /* libibverbs refuses unknown mask bits itself: the raw command. */
        struct ib_uverbs_modify_qp m;

        memset(&m, 0, sizeof(m));
        m.qp_handle = qp->handle;
        m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
                      (1u << 30);
        m.qp_state = IBV_QPS_INIT;
        m.port_num = 1;
        m.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
        r = raw(IB_USER_VERBS_CMD_MODIFY_QP, &m, sizeof(m), sizeof(m), 0);
        break;
    }
    case BAD_PORT:
    case BAD_PKEY_INDEX:
    case ACCESS_UNKNOWN_BITS:
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_INIT;
        a.port_num = t == BAD_PORT ? 7 : 1;
        a.pkey_index = t == BAD_PKEY_INDEX ? 60000 : 0;
        a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | (t == ACCESS_UNKNOWN_BITS ? 1u << 15 : 0);
        mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        r = ibv_modify_qp(qp, &a, mask);
        break;
    default:
        if (to_init(qp)) {
            die("modify to INIT: %s", strerror(errno));
        }
        rtr_attr(&a, qp->qp_num);
        if (t == BAD_SGID_INDEX) {
            a.ah_attr.grh.sgid_index = 250;
        } else if (t == BAD_MTU) {
            a.path_mtu = 0;
        } else if (t == DEST_QPN_HUGE) {
            a.dest_qp_num = 0xffffffffu;
        } else if (t == RNR_TIMER_HUGE) {
            a.min_rnr_timer = 200;
        } else if (t == DEST_RD_ATOMIC_HUGE) {
            a.max_dest_rd_atomic = 255;
        }
        if (t == RD_ATOMIC_HUGE || t == RETRY_CNT_HUGE || t == TIMEOUT_HUGE) {
            if (ibv_modify_qp(qp, &a, RTR_MASK)) {
                die("modify to RTR: %s", strerror(errno));
            }
            rts_attr(&a);
            if (t == RD_ATOMIC_HUGE) {
                a.max_rd_atomic = 255;
            } else if (t == RETRY_CNT_HUGE) {
                a.retry_cnt = 200;
            } else {
                a.timeout = 200;
            }
            r = ibv_modify_qp(qp, &a, RTS_MASK);
        } else {
            r = ibv_modify_qp(qp, &a, RTR_MASK);
        }
        break;
    }
    destroy_qp_checked(qp);
    return r;
}

static int modify_reset_to_rts(char *n, size_t l) { return modify_with(RESET_TO_RTS, n, l); }
static int modify_bad_port(char *n, size_t l) { return modify_with(BAD_PORT, n, l); }
static int modify_bad_pkey_index(char *n, size_t l) { return modify_with(BAD_PKEY_INDEX, n, l); }
static int modify_bad_sgid_index(char *n, size_t l) { return modify_with(BAD_SGID_INDEX, n, l); }
static int modify_bad_mtu(char *n, size_t l) { return modify_with(BAD_MTU, n, l); }
static int modify_dest_qpn_huge(char *n, size_t l) { return modify_with(DEST_QPN_HUGE, n, l); }
static int modify_rnr_timer_huge(char *n, size_t l) { return modify_with(RNR_TIMER_HUGE, n, l); }
static int modify_dest_rd_atomic_huge(char *n, size_t l)
{
    return modify_with(DEST_RD_ATOMIC_HUGE, n, l);
}
static int modify_rd_atomic_huge(char *n, size_t l) { return modify_with(RD_ATOMIC_HUGE, n, l); }
static int modify_retry_cnt_huge(char *n, size_t l) { return modify_with(RETRY_CNT_HUGE, n, l); }
static int modify_timeout_huge(char *n, size_t l) { return modify_with(TIMEOUT_HUGE, n, l); }
static int modify_access_unknown(char *n, size_t l)
{
    return modify_with(ACCESS_UNKNOWN_BITS, n, l);
}
static int modify_mask_unknown(char *n, size_t l) { return modify_with(UNKNOWN_MASK_BITS, n, l); }

/* ---- Destroying objects still in use ---- */

static int dealloc_pd_with_mr(char *note, size_t len)
{
    struct ibv_pd *p = ibv_alloc_pd(ctx);
    struct ibv_mr *m;
    int r;

    (void)note;
    (void)len;
    if (!p) {
        die("ibv_alloc_pd: %s", strerror(errno));
    }
    m = ibv_reg_mr(p, mr_buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
    if (!m) {
        die("ibv_reg_mr: %s", strerror(errno));
    }
    r = ibv_dealloc_pd(p);
    if (r == 0) {
        /* The PD is gone under its MR; deregistering must still not crash. */
        int d = ibv_dereg_mr(m);

        note_set(note, len, "the MR's dereg then returned %s", d ? errno_name(d) : "0");
        return 0;
    }
    {
        int d;

        if ((d = ibv_dereg_mr(m)) || (d = ibv_dealloc_pd(p))) {
            case_fail("cleanup after the refusal: %s", errno_name(d));
        }
    }
    return r;
}

static int dealloc_pd_with_qp(char *note, size_t len)
{
    struct ibv_pd *p = ibv_alloc_pd(ctx);
    struct ibv_qp *qp;
    int r;

    if (!p) {
        die("ibv_alloc_pd: %s", strerror(errno));
    }
    qp = make_qp(p, cq, NULL);
    r = ibv_dealloc_pd(p);
    if (r == 0) {
        note_set(note, len, "PD freed under a QP");
        return 0;
    }
    destroy_qp_checked(qp);
    if (ibv_dealloc_pd(p)) {
        case_fail("ibv_dealloc_pd after the QP was destroyed failed");
    }
    return r;
}

static int destroy_cq_with_qp(char *note, size_t len)
{
    struct ibv_cq *c = ibv_create_cq(ctx, SMALL_CQE, NULL, NULL, 0);
    struct ibv_qp *qp;
    int r;

    if (!c) {
        die("ibv_create_cq: %s", strerror(errno));
    }
    qp = make_qp(pd, c, NULL);
    r = ibv_destroy_cq(c);
    if (r == 0) {
        note_set(note, len, "CQ destroyed under a QP");
        return 0;
    }
    destroy_qp_checked(qp);
    if (ibv_destroy_cq(c)) {
        case_fail("ibv_destroy_cq after the QP was destroyed failed");
    }
    return r;
}

static struct ibv_srq *make_srq(struct ibv_pd *on_pd)
{
    struct ibv_srq_init_attr a = { .attr = { .max_wr = 4, .max_sge = 1 } };
    struct ibv_srq *s = ibv_create_srq(on_pd, &a);

    if (!s) {
        die("ibv_create_srq: %s", strerror(errno));
    }
    return s;
}

static int destroy_srq_with_qp(char *note, size_t len)
{
    struct ibv_srq *s = make_srq(pd);
    struct ibv_qp *qp = make_qp(pd, cq, s);
    int r = ibv_destroy_srq(s);

    if (r == 0) {
        note_set(note, len, "SRQ destroyed under a QP");
        return 0;
    }
    destroy_qp_checked(qp);
    if (ibv_destroy_srq(s)) {
        case_fail("ibv_destroy_srq after the QP was destroyed failed");
    }
    return r;
}

static int dealloc_pd_with_srq(char *note, size_t len)
{
    struct ibv_pd *p = ibv_alloc_pd(ctx);
    struct ibv_srq *s;
    int r;

    if (!p) {
        die("ibv_alloc_pd: %s", strerror(errno));
    }
    s = make_srq(p);
    r = ibv_dealloc_pd(p);
    if (r == 0) {
        note_set(note, len, "PD freed under an SRQ");
        return 0;
    }
    if (ibv_destroy_srq(s) || ibv_dealloc_pd(p)) {
        case_fail("cleanup after the refusal failed");
    }
    return r;
}

static int srq_limit_over_max_wr(char *note, size_t len)
{
    struct ibv_srq *s = make_srq(pd);
    struct ibv_srq_attr a = { .srq_limit = 1000 };
    int r = ibv_modify_srq(s, &a, IBV_SRQ_LIMIT);

    (void)note;
    (void)len;
    if (ibv_destroy_srq(s)) {
        case_fail("ibv_destroy_srq failed");
    }
    return r;
}

/* ---- mmap of the uverbs file ---- */

/*
 * The provider maps its context's doorbell (UAR) page with one shared page at
 * offset 0 of the command fd (its ABI has no other offset). Maps @len bytes at
 * byte offset @off with @flags; returns 0 if that worked (and unmaps again) or
 * the errno.
 */
static int map_cmd_fd(size_t len, off_t off, int flags, char *note, size_t note_len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, cmd_fd, off);

    if (p == MAP_FAILED) {
        return errno;
    }
    note_set(note, note_len, "%zu bytes at offset %#llx mapped", len, (unsigned long long)off);
    if (munmap(p, len)) {
        case_fail("munmap: %s", strerror(errno));
    }
    return 0;
}

/* The doorbell page again, as the provider maps it: must work. */
static int mmap_uar_again(char *note, size_t len)
{
    int r = map_cmd_fd(page_size, 0, MAP_SHARED, note, len);

    if (r) {
        case_fail("the doorbell page (one shared page at offset 0) did not map again");
    }
    return r;
}

/* The C driver checks the byte offset for page alignment, which an offset
 * made from vm_pgoff always has: it maps the doorbell at any offset. */
static int mmap_offset_one_page(char *note, size_t len)
{
    return map_cmd_fd(page_size, page_size, MAP_SHARED, note, len);
}

/* Past the 32 bits of page offset the core's mmap table has. */
static int mmap_offset_2_32_pages(char *note, size_t len)
{
    return map_cmd_fd(page_size, (off_t)page_size << 32, MAP_SHARED, note, len);
}

static int mmap_two_pages(char *note, size_t len)
{
    return map_cmd_fd(2 * page_size, 0, MAP_SHARED, note, len);
}

/* A private (copy-on-write) mapping of device memory: the RDMA core maps only
 * shared ones (rdma_user_mmap_io()); the C driver does not check. */
static int mmap_private(char *note, size_t len)
{
    return map_cmd_fd(page_size, 0, MAP_PRIVATE, note, len);
}

/* ---- Kernel data-path commands on user objects ---- */

/* The kernel's POST_SEND on a user QP in RTS (connected to itself). */
static int kernel_post_send_user_qp(char *note, size_t len)
{
    struct ibv_qp *qp = make_qp(pd, cq, NULL);
    struct ibv_qp_attr a;
    struct {
        struct ib_uverbs_post_send core;
        struct ib_uverbs_send_wr wr;
        struct ibv_sge sge;
    } c;
    int r;

    (void)note;
    (void)len;
    rtr_attr(&a, qp->qp_num);
    if (to_init(qp) || ibv_modify_qp(qp, &a, RTR_MASK)) {
        die("modify to RTR: %s", strerror(errno));
    }
    rts_attr(&a);
    if (ibv_modify_qp(qp, &a, RTS_MASK)) {
        die("modify to RTS: %s", strerror(errno));
    }
    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp_clear();
    c.core.qp_handle = qp->handle;
    c.core.wr_count = 1;
    c.core.sge_count = 1;
    c.core.wqe_size = sizeof(c.wr);
    c.wr.wr_id = 1;
    c.wr.num_sge = 1;
    c.wr.opcode = IBV_WR_SEND;
    c.sge.addr = (uintptr_t)mr_buf;
    c.sge.length = 16;
    c.sge.lkey = mr->lkey;
    r = raw(IB_USER_VERBS_CMD_POST_SEND, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_post_send_resp));
    destroy_qp_checked(qp);
    return r;
}

/* The kernel's POST_RECV (no SGE) on a user QP in INIT. */
static int kernel_post_recv_user_qp(char *note, size_t len)
{
    struct ibv_qp *qp = make_qp(pd, cq, NULL);
    struct {
        struct ib_uverbs_post_recv core;
        struct ib_uverbs_recv_wr wr;
    } c;
    int r;

    (void)note;
    (void)len;
    if (to_init(qp)) {
        die("modify to INIT: %s", strerror(errno));
    }
    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp_clear();
    c.core.qp_handle = qp->handle;
    c.core.wr_count = 1;
    c.core.sge_count = 0;
    c.core.wqe_size = sizeof(c.wr);
    c.wr.wr_id = 2;
    c.wr.num_sge = 0;
    r = raw(IB_USER_VERBS_CMD_POST_RECV, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_post_recv_resp));
    destroy_qp_checked(qp);
    return r;
}

/* The kernel's POLL_CQ on an (empty) user CQ: refused, or no completion. */
static int kernel_poll_user_cq(char *note, size_t len)
{
    struct ib_uverbs_poll_cq c = { .response = (uintptr_t)resp_clear(), .cq_handle = cq->handle,
                                   .ne = 4 };
    int r = raw(IB_USER_VERBS_CMD_POLL_CQ, &c, sizeof(c), sizeof(c),
                sizeof(struct ib_uverbs_poll_cq_resp) + 4 * sizeof(struct ib_uverbs_wc));

    if (r == 0) {
        struct ib_uverbs_poll_cq_resp *resp = (void *)resp_area;

        note_set(note, len, "%u completions", resp->count);
        if (resp->count != 0) {
            case_fail("%u completions from an empty user CQ", resp->count);
        }
    }
    return r;
}

static int kernel_post_srq_recv(char *note, size_t len)
{
    struct ibv_srq *s = make_srq(pd);
    struct {
        struct ib_uverbs_post_srq_recv core;
        struct ib_uverbs_recv_wr wr;
    } c;
    int r;

    (void)note;
    (void)len;
    memset(&c, 0, sizeof(c));
    c.core.response = (uintptr_t)resp_clear();
    c.core.srq_handle = s->handle;
    c.core.wr_count = 1;
    c.core.wqe_size = sizeof(c.wr);
    c.wr.wr_id = 3;
    r = raw(IB_USER_VERBS_CMD_POST_SRQ_RECV, &c, sizeof(c), sizeof(c),
            sizeof(struct ib_uverbs_post_srq_recv_resp));
    if (ibv_destroy_srq(s)) {
        case_fail("ibv_destroy_srq failed");
    }
    return r;
}

static int kernel_notify_user_cq(char *note, size_t len)
{
    struct ib_uverbs_req_notify_cq c = { .cq_handle = cq->handle, .solicited_only = 0 };

    (void)note;
    (void)len;
    return raw(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof(c), sizeof(c), 0);
}

/* ---- The table ---- */

#define CASE(name, fn, expect, c_acc, what) { name, fn, expect, c_acc, what }

static const struct bad_case cases[] = {
    /* udata lengths, ring buffers */
    CASE("cq-udata-absent", cq_udata_absent, MUST_FAIL, 0,
         "CREATE_CQ without the provider's udata"),
    CASE("cq-udata-short", cq_udata_short, MUST_FAIL, 1,
         "CREATE_CQ with 8 of the 16 udata bytes (a valid rest follows in memory)"),
    CASE("cq-udata-short-at-page-end", cq_udata_short_edge, MUST_FAIL, 0,
         "CREATE_CQ with 8 of the 16 udata bytes, nothing readable after them"),
    /* Linux 7.3's C driver answers with ib_respond_udata(), which truncates
     * the response to the room given: it accepts (6.12's refused). */
    CASE("cq-resp-udata-absent", cq_resp_udata_absent, MUST_FAIL, 1,
         "CREATE_CQ with no room for the provider's response (cqn)"),
    CASE("cq-resp-udata-short", cq_resp_udata_short, MUST_FAIL, 1,
         "CREATE_CQ with 4 of the provider's 8 response bytes"),
    CASE("cq-buf-inaccessible", cq_buf_unmapped, MUST_FAIL, 0,
         "CQ ring at an inaccessible address"),
    CASE("cq-buf-kernel-address", cq_buf_kernel, MUST_FAIL, 0, "CQ ring at a kernel address"),
    CASE("cq-buf-size-zero", cq_buf_size_zero, MUST_FAIL, 0, "CQ ring of 0 bytes"),
    CASE("cq-buf-too-small", cq_buf_too_small, MUST_FAIL, 1,
         "CQ of 256 entries on a one-page ring (ring state only)"),
    CASE("cq-buf-huge", cq_buf_huge, MUST_FAIL, 0,
         "CQ of 16 entries on a 4 MiB ring (more pages than the device maps)"),
    CASE("qp-udata-absent", qp_udata_absent, MUST_FAIL, 0,
         "CREATE_QP without the provider's udata"),
    CASE("qp-udata-short", qp_udata_short, MUST_FAIL, 1,
         "CREATE_QP with 24 of the 32 udata bytes (a valid rest follows in memory)"),
    CASE("qp-resp-udata-absent", qp_resp_udata_absent, MAY_ACCEPT, 0,
         "CREATE_QP with no room for the provider's response (qpn, qp_handle): the ABI of "
         "devices before version 20 (QP handle = QPN); QEMU's is version 17"),
    CASE("qp-sbuf-inaccessible", qp_sbuf_unmapped, MUST_FAIL, 0, "QP send ring inaccessible"),
    CASE("qp-rbuf-size-zero", qp_rbuf_size_zero, MUST_FAIL, 0, "QP receive ring of 0 bytes"),
    CASE("srq-udata-absent", srq_udata_absent, MUST_FAIL, 0,
         "CREATE_SRQ without the provider's udata"),
    CASE("srq-udata-short", srq_udata_short, MUST_FAIL, 1,
         "CREATE_SRQ with 8 of the 16 udata bytes (a valid rest follows in memory)"),
    /* requests longer than the provider's struct (see create_with_tail) */
    CASE("cq-udata-tail-set", cq_udata_tail_set, MUST_FAIL, 0,
         "CREATE_CQ with 8 udata bytes past pvrdma_create_cq, one of them set (EOPNOTSUPP)"),
    CASE("cq-udata-tail-zero", cq_udata_tail_zero, MAY_ACCEPT, 0,
         "CREATE_CQ with 8 zero udata bytes past pvrdma_create_cq (must be accepted)"),
    CASE("qp-udata-tail-set", qp_udata_tail_set, MUST_FAIL, 0,
         "CREATE_QP with 8 udata bytes past pvrdma_create_qp, one of them set (EOPNOTSUPP)"),
    CASE("qp-udata-tail-zero", qp_udata_tail_zero, MAY_ACCEPT, 0,
         "CREATE_QP with 8 zero udata bytes past pvrdma_create_qp (must be accepted)"),
    CASE("srq-udata-tail-set", srq_udata_tail_set, MUST_FAIL, 0,
         "CREATE_SRQ with 8 udata bytes past pvrdma_create_srq, one of them set (EOPNOTSUPP)"),
    CASE("srq-udata-tail-zero", srq_udata_tail_zero, MAY_ACCEPT, 0,
         "CREATE_SRQ with 8 zero udata bytes past pvrdma_create_srq (must be accepted)"),
    CASE("srq-buf-inaccessible", srq_buf_unmapped, MUST_FAIL, 0, "SRQ ring inaccessible"),
    CASE("srq-buf-too-small", srq_buf_too_small, MUST_FAIL, 1,
         "SRQ of 256 receives on a one-page ring (ring state only)"),
    /* zero and huge sizes */
    CASE("cq-cqe-zero", cq_cqe_zero, MUST_FAIL, 1, "CQ of 0 entries"),
    CASE("cq-cqe-over-max", cq_cqe_over_max, MUST_FAIL, 0, "CQ of max_cqe + 1 entries"),
    CASE("cq-cqe-2^31", cq_cqe_huge, MUST_FAIL, 1, "CQ of 2^31 entries"),
    CASE("cq-cqe-all-ones", cq_cqe_all_ones, MUST_FAIL, 1, "CQ of 0xffffffff entries"),
    CASE("cq-comp-vector-huge", cq_comp_vector_huge, MUST_FAIL, 0, "CQ on vector 1000"),
    CASE("cq-channel-not-a-channel", cq_channel_bad_fd, MUST_FAIL, 0,
         "CQ with fd 0 as its completion channel"),
    CASE("cq-resize", cq_resize, MUST_FAIL, 0, "RESIZE_CQ (not offered)"),
    CASE("qp-send-wr-over-ring", qp_send_wr_over_ring, MUST_FAIL, 1,
         "QP of 4096 send WRs on a one-page send ring"),
    CASE("qp-send-wr-over-max", qp_send_wr_over_max, MUST_FAIL, 1, "QP of max_qp_wr + 1 send WRs"),
    CASE("qp-send-wr-2^30", qp_send_wr_huge, MUST_FAIL, 0, "QP of 2^30 send WRs"),
    CASE("qp-recv-wr-all-ones", qp_recv_wr_huge, MUST_FAIL, 0, "QP of 0xffffffff receive WRs"),
    CASE("qp-send-sge-over-max", qp_send_sge_over_max, MUST_FAIL, 1, "QP of max_sge + 1 send SGEs"),
    CASE("qp-send-sge-2^20", qp_send_sge_huge, MUST_FAIL, 0, "QP of 2^20 send SGEs"),
    CASE("qp-inline-2^20", qp_inline_huge, MUST_FAIL, 1, "QP of 1 MiB inline data"),
    CASE("qp-inline-4096", qp_inline_page, MUST_FAIL, 1,
         "QP of 4096 bytes inline data (more than a one-page WQE holds)"),
    CASE("qp-inline-256", qp_inline_256, MAY_ACCEPT, 0, "QP of 256 bytes inline data (valid, granted none)"),
    CASE("qp-type-uc", qp_type_uc, MUST_FAIL, 0, "UC QP (not offered)"),
    CASE("qp-type-unknown", qp_type_unknown, MUST_FAIL, 0, "QP of type 200"),
    CASE("srq-wr-2^30", srq_wr_huge, MUST_FAIL, 0, "SRQ of 2^30 WRs"),
    CASE("srq-sge-2^20", srq_sge_huge, MUST_FAIL, 0, "SRQ of 2^20 SGEs"),
    CASE("srq-limit-over-max-wr", srq_limit_over_max_wr, MUST_FAIL, 1,
         "SRQ limit 1000 on a 4-WR SRQ"),
    CASE("mr-length-zero", mr_length_zero, MUST_FAIL, 0, "MR of 0 bytes"),
    CASE("mr-length-1TiB", mr_length_huge, MUST_FAIL, 0, "MR of 1 TiB"),
    CASE("mr-length-over-max", mr_length_over_max, MUST_FAIL, 0,
         "MR of max_mr_size + 4 KiB (mapped)"),
    CASE("mr-wraps-address-space", mr_wraps, MUST_FAIL, 0, "MR wrapping past 2^64"),
    CASE("mr-inaccessible", mr_unmapped, MUST_FAIL, 0, "MR over inaccessible memory"),
    CASE("mr-remote-write-without-local-write", mr_remote_write_without_local, MUST_FAIL, 0,
         "MR with REMOTE_WRITE but not LOCAL_WRITE"),
    CASE("mr-access-unknown-bits", mr_access_unknown_bits, MUST_FAIL, 0,
         "MR with an unknown access bit (bit 15)"),
    /* unaligned buffers */
    CASE("mr-unaligned", mr_unaligned, MAY_ACCEPT, 0,
         "MR starting 100 bytes into a page (valid; the stock device model refuses it)"),
    CASE("mr-iova-offset-mismatch", mr_iova_offset_mismatch, MUST_FAIL, 0,
         "MR whose iova's page offset differs from its address's"),
    CASE("cq-buf-unaligned", cq_buf_unaligned, MUST_FAIL, 1, "CQ ring 8 bytes into a page"),
    CASE("qp-sbuf-unaligned", qp_sbuf_unaligned, MUST_FAIL, 1, "QP send ring 8 bytes into a page"),
    /* unknown handles, handles of another context */
    CASE("destroy-cq-unknown-handle", destroy_cq_unknown, MUST_FAIL, 0, "DESTROY_CQ 0x7ffff"),
    CASE("destroy-qp-unknown-handle", destroy_qp_unknown, MUST_FAIL, 0, "DESTROY_QP 0x7ffff"),
    CASE("destroy-srq-unknown-handle", destroy_srq_unknown, MUST_FAIL, 0, "DESTROY_SRQ 0x7ffff"),
    CASE("dereg-mr-unknown-handle", dereg_mr_unknown, MUST_FAIL, 0, "DEREG_MR 0x7ffff"),
    CASE("dealloc-pd-unknown-handle", dealloc_pd_unknown, MUST_FAIL, 0, "DEALLOC_PD 0x7ffff"),
    CASE("modify-qp-unknown-handle", modify_qp_unknown, MUST_FAIL, 0, "MODIFY_QP 0x7ffff"),
    CASE("query-qp-unknown-handle", query_qp_unknown, MUST_FAIL, 0, "QUERY_QP 0x7ffff"),
    CASE("qp-unknown-cq-handle", qp_unknown_cq, MUST_FAIL, 0, "CREATE_QP on CQ 0xdead"),
    CASE("qp-pd-of-other-context", qp_pd_other_context, MUST_FAIL, 0,
         "CREATE_QP on the PD handle of another context"),
    CASE("srq-pd-of-other-context", srq_pd_other_context, MUST_FAIL, 0,
         "CREATE_SRQ on the PD handle of another context"),
    CASE("mr-pd-of-other-context", mr_pd_other_context, MUST_FAIL, 0,
         "REG_MR on the PD handle of another context"),
    CASE("dealloc-pd-of-other-context", dealloc_pd_other_context, MUST_FAIL, 0,
         "DEALLOC_PD of the PD handle of another context"),
    /* bad QP attributes */
    CASE("modify-qp-reset-to-rts", modify_reset_to_rts, MUST_FAIL, 0, "RESET -> RTS"),
    CASE("modify-qp-port-7", modify_bad_port, MUST_FAIL, 0, "RESET -> INIT on port 7"),
    CASE("modify-qp-pkey-index-60000", modify_bad_pkey_index, MUST_FAIL, 0,
         "RESET -> INIT with P_Key index 60000"),
    CASE("modify-qp-access-unknown-bits", modify_access_unknown, MUST_FAIL, 1,
         "RESET -> INIT with an unknown access bit (bit 15)"),
    CASE("modify-qp-unknown-mask-bits", modify_mask_unknown, MUST_FAIL, 0,
         "RESET -> INIT with attribute mask bit 30"),
    CASE("modify-qp-sgid-index-250", modify_bad_sgid_index, MUST_FAIL, 0,
         "INIT -> RTR with source GID index 250"),
    CASE("modify-qp-path-mtu-0", modify_bad_mtu, MUST_FAIL, 1, "INIT -> RTR with path MTU 0"),
    CASE("modify-qp-dest-qpn-32-bit", modify_dest_qpn_huge, MUST_FAIL, 0,
         "INIT -> RTR with destination QPN 0xffffffff"),
    CASE("modify-qp-min-rnr-timer-200", modify_rnr_timer_huge, MUST_FAIL, 0,
         "INIT -> RTR with min_rnr_timer 200"),
    CASE("modify-qp-max-dest-rd-atomic-255", modify_dest_rd_atomic_huge, MUST_FAIL, 1,
         "INIT -> RTR with max_dest_rd_atomic 255"),
    CASE("modify-qp-max-rd-atomic-255", modify_rd_atomic_huge, MUST_FAIL, 1,
         "RTR -> RTS with max_rd_atomic 255"),
    CASE("modify-qp-retry-cnt-200", modify_retry_cnt_huge, MUST_FAIL, 1,
         "RTR -> RTS with retry_cnt 200"),
    CASE("modify-qp-timeout-200", modify_timeout_huge, MUST_FAIL, 1, "RTR -> RTS with timeout 200"),
    /* destroying objects still in use */
    CASE("dealloc-pd-with-mr", dealloc_pd_with_mr, MUST_FAIL, 0, "DEALLOC_PD of a PD with an MR"),
    CASE("dealloc-pd-with-qp", dealloc_pd_with_qp, MUST_FAIL, 0, "DEALLOC_PD of a PD with a QP"),
    CASE("dealloc-pd-with-srq", dealloc_pd_with_srq, MUST_FAIL, 0,
         "DEALLOC_PD of a PD with an SRQ"),
    CASE("destroy-cq-with-qp", destroy_cq_with_qp, MUST_FAIL, 0, "DESTROY_CQ of a QP's CQ"),
    CASE("destroy-srq-with-qp", destroy_srq_with_qp, MUST_FAIL, 0, "DESTROY_SRQ of a QP's SRQ"),
    /* mmap of the uverbs file */
    CASE("mmap-doorbell-again", mmap_uar_again, MAY_ACCEPT, 0,
         "mmap of one shared page at offset 0, as the provider maps its doorbell (must work)"),
    CASE("mmap-offset-one-page", mmap_offset_one_page, MUST_FAIL, 1,
         "mmap of one page at offset 1 page (nothing is there)"),
    CASE("mmap-offset-2^32-pages", mmap_offset_2_32_pages, MUST_FAIL, 1,
         "mmap of one page at offset 2^32 pages"),
    CASE("mmap-two-pages", mmap_two_pages, MUST_FAIL, 0,
         "mmap of two pages at offset 0 (the doorbell is one)"),
    CASE("mmap-private", mmap_private, MUST_FAIL, 1,
         "private mmap of the doorbell page (offset 0, one page)"),
    /* kernel data-path commands on user objects */
    CASE("kernel-post-srq-recv", kernel_post_srq_recv, MUST_FAIL, 0,
         "POST_SRQ_RECV through the kernel"),
    CASE("kernel-req-notify-user-cq", kernel_notify_user_cq, MAY_ACCEPT, 0,
         "REQ_NOTIFY_CQ through the kernel on a user CQ"),
    CASE("kernel-poll-user-cq", kernel_poll_user_cq, MAY_ACCEPT, 0,
         "POLL_CQ through the kernel on an empty user CQ"),
    CASE("kernel-post-recv-user-qp", kernel_post_recv_user_qp, MUST_FAIL, 0,
         "POST_RECV through the kernel on a user QP in INIT"),
    CASE("kernel-post-send-user-qp", kernel_post_send_user_qp, MUST_FAIL, 0,
         "POST_SEND through the kernel on a user QP in RTS"),
};

static void run_case(const struct bad_case *c)
{
    char note[256] = "";
    int r;

    n_cases++;
    printf("# %s: %s\n", c->name, c->what);
    fflush(stdout);
    case_failed = 0;
    granted_wrong[0] = 0;
    r = c->run(note, sizeof(note));
    if (r == 0 && c->expect == MAY_ACCEPT && granted_wrong[0]) {
        case_fail("%s", granted_wrong);
    }
    if (case_failed) {
        n_fail++;
        printf("FAIL %s: %s (%s)\n", c->name, case_fail_msg, r ? errno_name(r) : "accepted");
    } else if (r != 0) {
        n_ok++;
        printf("ok %s: %s\n", c->name, errno_name(r));
    } else if (c->expect == MAY_ACCEPT) {
        n_ok++;
        printf("ok %s: accepted%s%s%s\n", c->name, note[0] ? " (" : "", note, note[0] ? ")" : "");
    } else if (c->c_accepts && !strcmp(driver, "c")) {
        n_c_accepts++;
        printf("C-driver-accepts %s: accepted%s%s%s\n", c->name, note[0] ? " (" : "", note,
               note[0] ? ")" : "");
    } else {
        n_fail++;
        printf("FAIL %s: accepted%s%s%s\n", c->name, note[0] ? " (" : "", note,
               note[0] ? ")" : "");
    }
    fflush(stdout);
}

/* ---- Setup and the final check ---- */

static struct ibv_context *open_by_name(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *c = NULL;

    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), dev_name)) {
            c = ibv_open_device(list[i]);
        }
    }
    if (list) {
        ibv_free_device_list(list);
    }
    if (!c) {
        die("cannot open %s", dev_name);
    }
    return c;
}

static uint8_t *map_area(size_t len, int prot)
{
    void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        die("mmap: %s", strerror(errno));
    }
    return p;
}

static void setup(void)
{
    ctx = open_by_name();
    ctx_b = open_by_name();
    cmd_fd = ctx->cmd_fd;
    if (ibv_query_device(ctx, &dev_attr)) {
        die("ibv_query_device: %s", strerror(errno));
    }
    if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
        die("ibv_query_gid: %s", strerror(errno));
    }
    pd = ibv_alloc_pd(ctx);
    channel = ibv_create_comp_channel(ctx);
    cq = ibv_create_cq(ctx, SMALL_CQE, NULL, NULL, 0);
    if (!pd || !channel || !cq) {
        die("PD/channel/CQ: %s", strerror(errno));
    }
    /* Context B's PD gets a handle no object of context A will have: B
     * allocates PDs until its handle is past all of A's (A makes a few
     * dozen objects at most). */
    for (int i = 0; i < 64; i++) {
        pd_b = ibv_alloc_pd(ctx_b);
        if (!pd_b) {
            die("ibv_alloc_pd on the second context: %s", strerror(errno));
        }
    }
    cmd_area = map_area(PAGE, PROT_READ | PROT_WRITE);
    resp_area = map_area(PAGE, PROT_READ | PROT_WRITE);
    ring_area = map_area(RING_AREA, PROT_READ | PROT_WRITE);
    edge_page = map_area(2 * PAGE, PROT_READ | PROT_WRITE);
    if (mprotect(edge_page + PAGE, PAGE, PROT_NONE)) {
        die("mprotect: %s", strerror(errno));
    }
    /* Kept mapped (inaccessible), so that no later mapping lands there. */
    hole = map_area(16 * PAGE, PROT_NONE);
    mr_buf = map_area(16 * PAGE, PROT_READ | PROT_WRITE);
    mr = ibv_reg_mr(pd, mr_buf, 16 * PAGE, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) {
        die("ibv_reg_mr: %s", strerror(errno));
    }
    printf("device %s (driver %s): max_cqe %d, max_qp_wr %d, max_sge %d, max_mr_size %llu, "
           "max_srq_wr %d, max_srq_sge %d; PD handle of the other context %u\n", dev_name,
           driver, dev_attr.max_cqe, dev_attr.max_qp_wr, dev_attr.max_sge,
           (unsigned long long)dev_attr.max_mr_size, dev_attr.max_srq_wr,
           dev_attr.max_srq_sge, pd_b->handle);
    fflush(stdout);
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int poll_one(struct ibv_cq *on, struct ibv_wc *wc)
{
    long deadline = now_ms() + 20000;

    while (now_ms() < deadline) {
        int n = ibv_poll_cq(on, 1, wc);

        if (n) {
            return n;
        }
        usleep(1000);
    }
    return 0;
}

/* After all that, two fresh QPs still carry a SEND, and everything goes away. */
static void still_works(void)
{
    struct ibv_cq *c = ibv_create_cq(ctx, SMALL_CQE, NULL, NULL, 0);
    struct ibv_qp *a, *b;
    struct ibv_qp_attr attr;
    struct ibv_sge sge;
    struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad_r;
    struct ibv_send_wr swr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1,
                               .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad_s;
    struct ibv_wc wc;
    int got_send = 0, got_recv = 0, r;

    n_cases++;
    if (!c) {
        die("ibv_create_cq: %s", strerror(errno));
    }
    a = make_qp(pd, c, NULL);
    b = make_qp(pd, c, NULL);
    for (int i = 0; i < 2; i++) {
        struct ibv_qp *q = i ? b : a;

        rtr_attr(&attr, (i ? a : b)->qp_num);
        if (to_init(q) || ibv_modify_qp(q, &attr, RTR_MASK)) {
            die("modify to RTR: %s", strerror(errno));
        }
        rts_attr(&attr);
        if (ibv_modify_qp(q, &attr, RTS_MASK)) {
            die("modify to RTS: %s", strerror(errno));
        }
    }
    memset(mr_buf, 0, 2 * PAGE);
    for (int i = 0; i < 100; i++) {
        mr_buf[i] = (uint8_t)(i * 3 + 1);
    }
    sge = (struct ibv_sge){ .addr = (uintptr_t)mr_buf + PAGE, .length = PAGE, .lkey = mr->lkey };
    if (ibv_post_recv(b, &rwr, &bad_r)) {
        die("ibv_post_recv: %s", strerror(errno));
    }
    sge = (struct ibv_sge){ .addr = (uintptr_t)mr_buf, .length = 100, .lkey = mr->lkey };
    if (ibv_post_send(a, &swr, &bad_s)) {
        die("ibv_post_send: %s", strerror(errno));
    }
    for (int i = 0; i < 2 && poll_one(c, &wc); i++) {
        if (wc.status == IBV_WC_SUCCESS && wc.wr_id == 8) {
            got_send = 1;
        } else if (wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 && wc.byte_len == 100) {
            got_recv = 1;
        }
    }
    if (!got_send || !got_recv || memcmp(mr_buf, mr_buf + PAGE, 100)) {
        n_fail++;
        printf("FAIL device-still-works: send %d, receive %d, data %s\n", got_send, got_recv,
               memcmp(mr_buf, mr_buf + PAGE, 100) ? "differs" : "same");
    } else {
        n_ok++;
        printf("ok device-still-works: a SEND between two fresh RC QPs arrived intact\n");
    }
    if ((r = ibv_destroy_qp(a)) || (r = ibv_destroy_qp(b)) || (r = ibv_destroy_cq(c)) ||
        (r = ibv_dereg_mr(mr)) || (r = ibv_destroy_cq(cq)) ||
        (r = ibv_destroy_comp_channel(channel)) || (r = ibv_dealloc_pd(pd))) {
        n_fail++;
        printf("FAIL cleanup: a destroy returned %s\n", errno_name(r));
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s DEVICE GID_INDEX DRIVER\n", argv[0]);
        return 2;
    }
    dev_name = argv[1];
    gid_index = atoi(argv[2]);
    driver = argv[3];
    page_size = sysconf(_SC_PAGESIZE);
    if (page_size != PAGE) {
        fprintf(stderr, "page size %ld, this test assumes %d\n", page_size, PAGE);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    setup();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_case(&cases[i]);
    }
    still_works();
    printf("summary: %d cases, %d ok, %d C-driver-accepts, %d FAIL\n", n_cases, n_ok, n_c_accepts,
           n_fail);
    return n_fail ? 1 : 0;
}
