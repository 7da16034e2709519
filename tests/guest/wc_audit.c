// SPDX-License-Identifier: GPL-2.0
/*
 * wc_audit.so: counts the work completions a program polls, for tests whose
 * tools do not check them (udaddy counts any completion, of any status, as a
 * message received).
 *
 *   cc -shared -fPIC -O2 -o /tmp/wc_audit.so wc_audit.c -ldl
 *   WC_AUDIT_LOG=FILE LD_PRELOAD=/tmp/wc_audit.so TOOL ...
 *
 * It interposes ibv_open_device() (which librdmacm and the tools call through
 * the dynamic linker) and replaces the context's poll_cq operation, which the
 * inline ibv_poll_cq() calls, with one that calls the provider's and counts
 * what it returned. At exit it appends one line to FILE (stderr without it):
 *
 *   wc-audit: pid P: recv ok R (B bytes), send ok S, other ok O, failed F (first status N)
 *
 * "recv ok" counts successful IBV_WC_RECV and IBV_WC_RECV_RDMA_WITH_IMM
 * completions, "send ok" successful IBV_WC_SEND ones, "other ok" any other
 * successful opcode, "failed" completions with a status other than success.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*poll_cq_fn)(struct ibv_cq *, int, struct ibv_wc *);
typedef struct ibv_context *(*open_device_fn)(struct ibv_device *);

static poll_cq_fn provider_poll_cq;
static unsigned long recv_ok, recv_bytes, send_ok, other_ok, failed;
static int first_status = -1;
static int registered;

static void report(void)
{
    const char *path = getenv("WC_AUDIT_LOG");
    FILE *out = path ? fopen(path, "a") : NULL;

    fprintf(out ? out : stderr,
            "wc-audit: pid %d: recv ok %lu (%lu bytes), send ok %lu, other ok %lu, failed %lu "
            "(first status %d)\n",
            (int)getpid(), recv_ok, recv_bytes, send_ok, other_ok, failed, first_status);
    if (out) {
        fclose(out);
    }
}

static int audited_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
    int n = provider_poll_cq(cq, num, wc);

    for (int i = 0; i < n; i++) {
        if (wc[i].status != IBV_WC_SUCCESS) {
            __atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED);
            if (first_status < 0) {
                first_status = wc[i].status;
            }
        } else if (wc[i].opcode == IBV_WC_RECV || wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            __atomic_fetch_add(&recv_ok, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&recv_bytes, wc[i].byte_len, __ATOMIC_RELAXED);
        } else if (wc[i].opcode == IBV_WC_SEND) {
            __atomic_fetch_add(&send_ok, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_fetch_add(&other_ok, 1, __ATOMIC_RELAXED);
        }
    }
    return n;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    open_device_fn real = (open_device_fn)dlsym(RTLD_NEXT, "ibv_open_device");
    struct ibv_context *ctx = real ? real(device) : NULL;

    if (ctx && ctx->ops.poll_cq && ctx->ops.poll_cq != audited_poll_cq) {
        /* Every context of the lab's one device has the same provider. */
        provider_poll_cq = ctx->ops.poll_cq;
        ctx->ops.poll_cq = audited_poll_cq;
        if (!registered) {
            registered = 1;
            atexit(report);
        }
    }
    return ctx;
}
