// SPDX-License-Identifier: GPL-2.0
/*
 * verb_costs: what one control-path verb costs the kernel, counted rather
 * than timed. Each verb runs N times in a phase of its own; around each phase
 * it reads
 *
 *   - the device's commands: the driver's hardware counter "commands"
 *     (ports/1/hw_counters/commands) where it keeps one (the Rust driver);
 *     otherwise (the C driver) the response interrupts, vector 0, one per
 *     command;
 *   - the device's interrupts, per MSI-X vector, from /proc/interrupts (the
 *     lines of the RDMA device's PCI function);
 *   - this process's context switches (a software perf event): every sleep
 *     the verb takes in the kernel is one;
 *   - this process's heap and page allocations in the kernel: the
 *     tracepoints kmem:kmalloc, kmem:kmem_cache_alloc and kmem:mm_page_alloc,
 *     counted (not recorded) by perf events attached to this process. The
 *     RDMA core's and uverbs' own allocations are in the count for both
 *     drivers alike; what differs between two drivers is theirs.
 *
 * and prints one line per verb with the counts per call:
 *
 *   cost: <verb> n <N> commands <c> interrupts <i> switches <s> kmalloc <k> cache <m> pages <p>
 *
 *   verb_costs DEVICE GID_INDEX [N [ROUNDS]]
 *
 * With ROUNDS (1..100) it times instead of counting: no counter is attached
 * (their tracepoints would be part of what is timed), the phases run ROUNDS
 * times over, and each phase prints its wall time per call (CLOCK_MONOTONIC
 * around the N calls):
 *
 *   time: <verb> round <r> n <N> us <microseconds per call>
 *
 * (the benchmark's per-verb figures: tools/pvrdma-lab/src/bench/figures.rs).
 *
 * With VERB_COSTS_MARK set, each phase's start and end also go to the trace
 * buffer (tracefs trace_marker: "verb_costs: <verb> begin|end"), so that a
 * trace of kmem events taken meanwhile names the call sites of each verb's
 * allocations.
 *
 * Exits non-zero (a "FAIL:" line) if a verb fails or a counter cannot be read.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum {
    DEFAULT_N = 64,
    MAX_N = 1024,
    MAX_ROUNDS = 100,
    MAX_VECTORS = 64,
    MR_BYTES = 64 * 1024,
    CQ_DEPTH = 64,
    QP_DEPTH = 16,
};

/* The counters of this process, in the order they are printed. */
enum { C_SWITCHES, C_KMALLOC, C_CACHE, C_PAGES, NUM_COUNTERS };

static const char *const tracepoints[NUM_COUNTERS] = {
    [C_KMALLOC] = "kmem/kmalloc",
    [C_CACHE] = "kmem/kmem_cache_alloc",
    [C_PAGES] = "kmem/mm_page_alloc",
};

static int counter_fd[NUM_COUNTERS];
static FILE *marker;
/* Timing instead of counting: the round being timed (1..), or 0. */
static int timed_round;
static char pci_addr[256];
/* The driver's command counter (hardware counter), if it keeps one */
static char commands_path[512];

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

static long perf_open(struct perf_event_attr *attr)
{
    /* This process (and the threads it starts), on any CPU. */
    return syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
}

static int tracepoint_id(const char *name)
{
    static const char *const roots[] = { "/sys/kernel/tracing/events",
                                         "/sys/kernel/debug/tracing/events" };
    char path[256];
    FILE *f;
    int id = -1;

    for (unsigned i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s/id", roots[i], name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%d", &id) != 1)
            id = -1;
        fclose(f);
        if (id >= 0)
            return id;
    }
    return -1;
}

static void open_counters(void)
{
    for (int c = 0; c < NUM_COUNTERS; c++) {
        struct perf_event_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.size = sizeof(attr);
        attr.inherit = 1;
        if (c == C_SWITCHES) {
            attr.type = PERF_TYPE_SOFTWARE;
            attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
        } else {
            int id = tracepoint_id(tracepoints[c]);

            if (id < 0)
                fail("no tracepoint %s (tracefs not mounted?)", tracepoints[c]);
            attr.type = PERF_TYPE_TRACEPOINT;
            attr.config = (uint64_t)id;
        }
        counter_fd[c] = (int)perf_open(&attr);
        if (counter_fd[c] < 0)
            fail("perf_event_open (counter %d): %s", c, strerror(errno));
    }
}

static void read_counters(uint64_t *out)
{
    for (int c = 0; c < NUM_COUNTERS; c++)
        if (read(counter_fd[c], &out[c], sizeof(out[c])) != sizeof(out[c]))
            fail("cannot read counter %d: %s", c, strerror(errno));
}

/* The PCI address of the RDMA device's function ("0000:00:04.1"). */
static void find_pci_addr(const char *dev)
{
    char link[256], target[256];
    const char *base;
    ssize_t n;

    snprintf(link, sizeof(link), "/sys/class/infiniband/%s/device", dev);
    n = readlink(link, target, sizeof(target) - 1);
    if (n < 0)
        fail("readlink %s: %s", link, strerror(errno));
    target[n] = 0;
    base = strrchr(target, '/');
    snprintf(pci_addr, sizeof(pci_addr), "%s", base ? base + 1 : target);
}

/*
 * The device's interrupts so far, per vector, summed over the CPUs. An MSI-X
 * line of /proc/interrupts: "IRQ: <count per CPU> PCI-MSIX-<addr> <vector>-edge <name>".
 */
static void read_interrupts(uint64_t *per_vector)
{
    char line[1024];
    FILE *f = fopen("/proc/interrupts", "r");
    int lines = 0;

    if (!f)
        fail("cannot open /proc/interrupts: %s", strerror(errno));
    memset(per_vector, 0, sizeof(*per_vector) * MAX_VECTORS);
    while (fgets(line, sizeof(line), f)) {
        char *p, *tok, *save = NULL;
        uint64_t sum = 0;
        int vector = -1;

        if (!strstr(line, pci_addr))
            continue;
        p = strchr(line, ':');
        if (!p)
            continue;
        for (tok = strtok_r(p + 1, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
            char *end;
            unsigned long long v = strtoull(tok, &end, 10);

            if (*end == 0 && vector < 0 && !strstr(tok, pci_addr)) {
                sum += v;
            } else if (*end == '-' && strstr(end, "edge")) {
                vector = (int)v;
                break;
            }
        }
        if (vector < 0 || vector >= MAX_VECTORS)
            fail("cannot read the vector of /proc/interrupts line: %s", line);
        per_vector[vector] += sum;
        lines++;
    }
    fclose(f);
    if (!lines)
        fail("no interrupt of %s in /proc/interrupts", pci_addr);
}

struct snapshot {
    uint64_t counters[NUM_COUNTERS];
    uint64_t irq[MAX_VECTORS];
    uint64_t commands;
};

/*
 * The device commands so far: the driver's counter where it keeps one,
 * otherwise the response interrupts (vector 0) in *irq.
 */
static uint64_t read_commands(const uint64_t *irq)
{
    unsigned long long v;
    FILE *f;
    int ok;

    if (!commands_path[0])
        return irq[0];
    f = fopen(commands_path, "r");
    if (!f)
        fail("cannot open %s: %s", commands_path, strerror(errno));
    ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    if (!ok)
        fail("cannot read %s", commands_path);
    return v;
}

static void mark(const char *verb, const char *what)
{
    if (marker) {
        fprintf(marker, "verb_costs: %s %s\n", verb, what);
        fflush(marker);
    }
}

/*
 * The core keeps a port's hardware counters for 10 ms after a read
 * (RDMA_HW_STATS_DEFAULT_LIFESPAN): a phase shorter than that (64
 * dealloc_pd on a quick host) would read the value cached at its start and
 * count no command. So the counter is read only after the cache has gone
 * stale, and the wait stays outside the phase's perf counters (a sleep is a
 * context switch).
 */
static void wait_counter_stale(void)
{
    if (commands_path[0])
        usleep(25 * 1000);
}

static void take_before(struct snapshot *s)
{
    wait_counter_stale();
    read_interrupts(s->irq);
    s->commands = read_commands(s->irq);
    read_counters(s->counters);
}

static void take_after(struct snapshot *s)
{
    read_counters(s->counters);
    wait_counter_stale();
    read_interrupts(s->irq);
    s->commands = read_commands(s->irq);
}

static void report(const char *verb, int n, const struct snapshot *a, const struct snapshot *b)
{
    uint64_t all = 0;
    double per[NUM_COUNTERS];

    for (int v = 0; v < MAX_VECTORS; v++)
        all += b->irq[v] - a->irq[v];
    for (int c = 0; c < NUM_COUNTERS; c++)
        per[c] = (double)(b->counters[c] - a->counters[c]) / n;
    printf("cost: %s n %d commands %.2f interrupts %.2f switches %.2f kmalloc %.2f cache %.2f "
           "pages %.2f\n",
           verb, n, (double)(b->commands - a->commands) / n, (double)all / n, per[C_SWITCHES],
           per[C_KMALLOC], per[C_CACHE], per[C_PAGES]);
    fflush(stdout);
}

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/*
 * Runs STMT for i in 0..n and reports VERB: counted between two snapshots,
 * or, when timing, timed alone.
 */
#define PHASE(verb, stmt)                                                                   \
    do {                                                                                    \
        struct snapshot before_, after_;                                                    \
        double t0_ = 0;                                                                     \
        if (timed_round)                                                                    \
            t0_ = now_us();                                                                 \
        else                                                                                \
            take_before(&before_);                                                          \
        mark(verb, "begin");                                                                \
        for (int i = 0; i < n; i++) {                                                       \
            stmt;                                                                           \
        }                                                                                   \
        mark(verb, "end");                                                                  \
        if (timed_round) {                                                                  \
            printf("time: %s round %d n %d us %.1f\n", verb, timed_round, n,                \
                   (now_us() - t0_) / n);                                                   \
        } else {                                                                            \
            take_after(&after_);                                                            \
            report(verb, n, &before_, &after_);                                             \
        }                                                                                   \
    } while (0)

static struct ibv_context *open_device(const char *name)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx = NULL;

    if (!list)
        fail("ibv_get_device_list: %s", strerror(errno));
    for (int i = 0; list[i]; i++)
        if (!strcmp(ibv_get_device_name(list[i]), name))
            ctx = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    if (!ctx)
        fail("cannot open %s", name);
    return ctx;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, const char *what)
{
    int r = ibv_modify_qp(qp, attr, mask);

    if (r)
        fail("ibv_modify_qp to %s: %s", what, strerror(r));
}

/* Each verb's phase, in turn. */
static void run_phases(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq, void *buf,
                       union ibv_gid gid, int gid_index, int n)
{
    static struct ibv_pd *pds[MAX_N];
    static struct ibv_cq *cqs[MAX_N];
    static struct ibv_mr *mrs[MAX_N];
    static struct ibv_qp *qps[MAX_N];
    static struct ibv_srq *srqs[MAX_N];
    static struct ibv_ah *ahs[MAX_N];

    PHASE("alloc_pd", if (!(pds[i] = ibv_alloc_pd(ctx))) fail("ibv_alloc_pd %d: %s", i, strerror(errno)));
    PHASE("dealloc_pd", if (ibv_dealloc_pd(pds[i])) fail("ibv_dealloc_pd %d", i));

    PHASE("create_cq", if (!(cqs[i] = ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0)))
                           fail("ibv_create_cq %d: %s", i, strerror(errno)));
    PHASE("destroy_cq", if (ibv_destroy_cq(cqs[i])) fail("ibv_destroy_cq %d", i));

    PHASE("reg_mr", if (!(mrs[i] = ibv_reg_mr(pd, buf, MR_BYTES,
                                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                   IBV_ACCESS_REMOTE_READ)))
                        fail("ibv_reg_mr %d: %s", i, strerror(errno)));
    PHASE("dereg_mr", if (ibv_dereg_mr(mrs[i])) fail("ibv_dereg_mr %d", i));

    {
        struct ibv_qp_init_attr init = {
            .send_cq = cq,
            .recv_cq = cq,
            .qp_type = IBV_QPT_RC,
            .cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = QP_DEPTH, .max_send_sge = 1,
                     .max_recv_sge = 1 },
        };
        struct ibv_qp_attr to_init = {
            .qp_state = IBV_QPS_INIT,
            .port_num = 1,
            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
        };
        struct ibv_qp_attr to_rtr = {
            .qp_state = IBV_QPS_RTR,
            .path_mtu = IBV_MTU_1024,
            .rq_psn = 0,
            .max_dest_rd_atomic = 1,
            .min_rnr_timer = 12,
            .ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = gid,
                                                                .sgid_index = (uint8_t)gid_index,
                                                                .hop_limit = 1 } },
        };
        struct ibv_qp_attr to_rts = {
            .qp_state = IBV_QPS_RTS,
            .timeout = 14,
            .retry_cnt = 7,
            .rnr_retry = 7,
            .sq_psn = 0,
            .max_rd_atomic = 1,
        };

        PHASE("create_qp", if (!(qps[i] = ibv_create_qp(pd, &init)))
                               fail("ibv_create_qp %d: %s", i, strerror(errno)));
        PHASE("modify_qp_init",
              modify(qps[i], &to_init,
                     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT"));
        PHASE("modify_qp_rtr", {
            /* Each QP connected to the next (the last to the first). */
            to_rtr.dest_qp_num = qps[(i + 1) % n]->qp_num;
            modify(qps[i], &to_rtr,
                   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                   "RTR");
        });
        PHASE("modify_qp_rts",
              modify(qps[i], &to_rts,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                     "RTS"));
        PHASE("destroy_qp", if (ibv_destroy_qp(qps[i])) fail("ibv_destroy_qp %d", i));
    }

    {
        struct ibv_srq_init_attr init = { .attr = { .max_wr = QP_DEPTH, .max_sge = 1 } };

        PHASE("create_srq", if (!(srqs[i] = ibv_create_srq(pd, &init)))
                                fail("ibv_create_srq %d: %s", i, strerror(errno)));
        PHASE("destroy_srq", if (ibv_destroy_srq(srqs[i])) fail("ibv_destroy_srq %d", i));
    }

    {
        struct ibv_ah_attr attr = {
            .is_global = 1,
            .port_num = 1,
            .grh = { .dgid = gid, .sgid_index = (uint8_t)gid_index, .hop_limit = 1 },
        };

        PHASE("create_ah", if (!(ahs[i] = ibv_create_ah(pd, &attr)))
                               fail("ibv_create_ah %d: %s", i, strerror(errno)));
        PHASE("destroy_ah", if (ibv_destroy_ah(ahs[i])) fail("ibv_destroy_ah %d", i));
    }
}

int main(int argc, char **argv)
{
    struct ibv_context *ctx;
    struct ibv_port_attr port;
    union ibv_gid gid;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    void *buf;
    int gid_index, n = DEFAULT_N, rounds = 0;

    if (argc < 3)
        fail("usage: verb_costs DEVICE GID_INDEX [N [ROUNDS]]");
    gid_index = atoi(argv[2]);
    if (argc > 3)
        n = atoi(argv[3]);
    if (n < 1 || n > MAX_N)
        fail("N must be 1..%d", MAX_N);
    if (argc > 4) {
        rounds = atoi(argv[4]);
        if (rounds < 1 || rounds > MAX_ROUNDS)
            fail("ROUNDS must be 1..%d", MAX_ROUNDS);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    ctx = open_device(argv[1]);
    find_pci_addr(argv[1]);
    snprintf(commands_path, sizeof(commands_path),
             "/sys/class/infiniband/%s/ports/1/hw_counters/commands", argv[1]);
    if (access(commands_path, R_OK))
        commands_path[0] = 0;
    printf("commands counted by %s\n", commands_path[0] ? commands_path : "the response interrupts (vector 0)");
    if (ibv_query_port(ctx, 1, &port) || ibv_query_gid(ctx, 1, gid_index, &gid))
        fail("cannot query port 1 or GID %d", gid_index);
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, CQ_DEPTH, NULL, NULL, 0);
    buf = aligned_alloc(4096, MR_BYTES);
    if (!pd || !cq || !buf)
        fail("cannot set up: %s", strerror(errno));
    memset(buf, 0x5a, MR_BYTES);
    if (getenv("VERB_COSTS_MARK")) {
        marker = fopen("/sys/kernel/tracing/trace_marker", "w");
        if (!marker)
            marker = fopen("/sys/kernel/debug/tracing/trace_marker", "w");
        if (!marker)
            fail("VERB_COSTS_MARK: cannot open trace_marker: %s", strerror(errno));
    }
    if (rounds) {
        for (timed_round = 1; timed_round <= rounds; timed_round++)
            run_phases(ctx, pd, cq, buf, gid, gid_index, n);
    } else {
        open_counters();
        run_phases(ctx, pd, cq, buf, gid, gid_index, n);
    }

    if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
        fail("cannot tear down");
    free(buf);
    if (rounds)
        printf("all verbs timed (%d calls each, %d rounds)\n", n, rounds);
    else
        printf("all verbs counted (%d calls each)\n", n);
    return 0;
}
