/*
 * bench.h - helpers shared by the bench programs (header-only, all static
 * inline so each program stays one translation unit): monotonic time,
 * percentiles, full reads/writes, the `metric` output line, VmRSS, the
 * channels and CPU placements of the raw baselines, their echo children,
 * CPU time and context switches of a process, system calls counted by
 * the kernel per task (a perf counter on raw_syscalls:sys_enter), and
 * the driver the two pipelined baselines (raw_pipelined, raw_batched)
 * share.
 *
 * Threads: every helper is reentrant; nothing here holds a lock.
 */
#ifndef SIPC_BENCH_H
#define SIPC_BENCH_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double
bench_secs(uint64_t from_ns, uint64_t to_ns)
{
	return (double)(to_ns - from_ns) / 1e9;
}

static inline void
bench_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One figure per line: "metric <name> <value> <unit>".  Flushed at once so
 * a later crash or timeout cannot eat figures already measured. */
static inline void
bench_metric(const char *name, double value, const char *unit)
{
	printf("metric %s %.6g %s\n", name, value, unit);
	fflush(stdout);
}

static inline void
bench_note(const char *msg)
{
	printf("note %s\n", msg);
	fflush(stdout);
}

static inline int
bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Percentile (0..100) of n samples, nearest rank; sorts `v` in place. */
static inline uint64_t
bench_pct(uint64_t *v, size_t n, double pct)
{
	size_t rank;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_u64);
	rank = (size_t)(pct / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static inline int
bench_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of n (> 0) values; sorts `v` in place. */
static inline double
bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Write all of buf; returns 0 or -errno. */
static inline int
bench_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly len bytes; returns 0, -EPIPE on EOF, or -errno. */
static inline int
bench_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* VmRSS in KiB of a process (0 = self), or 0 if it cannot be read. */
static inline long
bench_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = 0;
	FILE *f;

	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/status");
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Deterministic payload bytes (every value incl. '\n' and '\0'). */
static inline void
bench_fill(uint8_t *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
}

/* True when argv carries --quick or BENCH_QUICK=1 is set. */
static inline int
bench_quick(int argc, char **argv)
{
	const char *q = getenv("BENCH_QUICK");
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--quick") == 0)
			return 1;
	return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}


/* Writes to a peer that went away must fail with EPIPE, not kill us. */
static inline void
bench_ignore_sigpipe(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGPIPE, &sa, NULL);
}


/* ------------------------------------------------------------ channels
 * The raw baselines run over each channel a worker could be given, so
 * the limit at each payload size is the faster one measured in the same
 * run: one socketpair(AF_UNIX, SOCK_STREAM), two pipes, and two pipes
 * grown to 1 MiB with F_SETPIPE_SZ (fewer wake-ups per 1 MiB frame). */
enum bench_chan_kind { BENCH_SOCK, BENCH_PIPE, BENCH_PIPE1M, BENCH_NCHAN };
static const char *const bench_chan_name[BENCH_NCHAN] = {
	"sock", "pipe", "pipe1m"
};

/* One side of a channel: rd == wr for a socketpair. */
struct bench_chan {
	int rd, wr;
};

static inline void
bench_chan_close(struct bench_chan *c)
{
	if (c->rd >= 0)
		close(c->rd);
	if (c->wr >= 0 && c->wr != c->rd)
		close(c->wr);
	c->rd = c->wr = -1;
}

/* Open a channel of `kind`; *par and *chi are the two ends (close the
 * other one after fork).  Returns 0 or -errno. */
static inline int
bench_chan_open(int kind, struct bench_chan *par, struct bench_chan *chi)
{
	int sv[2], down[2], up[2], rc;

	par->rd = par->wr = chi->rd = chi->wr = -1;
	if (kind == BENCH_SOCK) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return -errno;
		par->rd = par->wr = sv[0];
		chi->rd = chi->wr = sv[1];
		return 0;
	}
	if (pipe2(down, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(up, O_CLOEXEC) < 0) {
		rc = -errno;
		close(down[0]);
		close(down[1]);
		return rc;
	}
	par->wr = down[1];
	chi->rd = down[0];
	chi->wr = up[1];
	par->rd = up[0];
	if (kind == BENCH_PIPE1M &&
	    (fcntl(down[1], F_SETPIPE_SZ, 1 << 20) < 0 ||
	    fcntl(up[1], F_SETPIPE_SZ, 1 << 20) < 0)) {
		rc = -errno;
		bench_chan_close(par);
		bench_chan_close(chi);
		return rc;
	}
	return 0;
}

/* Child of a pipelined baseline: parse length-prefixed frames (4-byte
 * length, payload up to `maxsz`) out of reads of up to `chunk` bytes and
 * echo each with one write().  Exits the process at EOF or on error. */
static inline void
bench_echo_frames(struct bench_chan c, size_t maxsz, size_t chunk)
{
	size_t cap = 2 * (4 + maxsz) + chunk, have = 0, off, flen;
	uint8_t *buf = malloc(cap);
	uint32_t len;
	ssize_t n;

	if (buf == NULL)
		_exit(2);
	for (;;) {
		n = read(c.rd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		have += (size_t)n;
		off = 0;
		while (have - off >= 4) {
			memcpy(&len, buf + off, 4);
			flen = 4 + (size_t)len;
			if (len > maxsz)
				_exit(3);
			if (have - off < flen)
				break;
			if (bench_write_all(c.wr, buf + off, flen) < 0)
				_exit(4);
			off += flen;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
}

/* Child of the batched baseline: the frames of bench_echo_frames(), read
 * `chunk` bytes at a time, but every complete frame of one read() goes
 * back in one write(); a frame split across reads stays in the buffer
 * until its rest comes.  Exits the process at EOF or on error (3: a
 * length prefix above `maxsz`). */
static inline void
bench_echo_batched(struct bench_chan c, size_t maxsz, size_t chunk)
{
	size_t cap = 4 + maxsz + chunk, have = 0, off, flen;
	uint8_t *buf = malloc(cap);
	uint32_t len;
	ssize_t n;

	if (buf == NULL)
		_exit(2);
	for (;;) {
		/* have < 4 + maxsz here: the tail is less than one frame */
		n = read(c.rd, buf + have, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		have += (size_t)n;
		off = 0;
		while (have - off >= 4) {
			memcpy(&len, buf + off, 4);
			if (len > maxsz)
				_exit(3);
			flen = 4 + (size_t)len;
			if (have - off < flen)
				break;
			off += flen;
		}
		if (off > 0 && bench_write_all(c.wr, buf, off) < 0)
			_exit(4);
		memmove(buf, buf + off, have - off);
		have -= off;
	}
}

/* ----------------------------------------------------------- placement */
enum { BENCH_SAMECPU, BENCH_CROSSCPU, BENCH_NPLACE };
static const char *const bench_place_name[BENCH_NPLACE] = {
	"samecpu", "crosscpu"
};

/* Pin the calling thread (and the threads it creates later) to `cpu`;
 * -1 leaves it alone. */
static inline void
bench_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/* The first two CPUs this process may use; returns how many (0..2). */
static inline int
bench_two_cpus(int cpu[2])
{
	cpu_set_t set;
	int c, k = 0;

	cpu[0] = cpu[1] = -1;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 0;
	for (c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[k++] = c;
	return k;
}

/* ------------------------------------------------------ what a run costs */

/* CPU time (user + system, ns) of this whole process (pid 0) or of
 * another process of ours, from the kernel's per-process clock; 0 if the
 * process cannot be read. */
static inline uint64_t
bench_cpu_ns(pid_t pid)
{
	struct timespec ts;
	clockid_t clk = CLOCK_PROCESS_CPUTIME_ID;

	if (pid != 0 && clock_getcpuclockid(pid, &clk) != 0)
		return 0;
	if (clock_gettime(clk, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Context switches (voluntary + involuntary) of every thread of this
 * process (pid 0, getrusage) or of another process (the sum over
 * /proc/PID/task/x/status; a thread that exited is not counted). */
static inline double
bench_ctxsw(pid_t pid)
{
	char path[300], line[128];
	unsigned long long v, sum = 0;
	struct rusage ru;
	struct dirent *de;
	DIR *d;
	FILE *f;

	if (pid == 0) {
		if (getrusage(RUSAGE_SELF, &ru) < 0)
			return 0;
		return (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.64s/status",
		    (int)pid, de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "voluntary_ctxt_switches: %llu",
			    &v) == 1 || sscanf(line,
			    "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				sum += v;
		fclose(f);
	}
	closedir(d);
	return (double)sum;
}

/* User and system CPU of a process (0: this one), in us: getrusage, or
 * /proc/PID/stat (clock ticks; the kernel scales both from the exact
 * total, so the split is an estimate over a long interval).  0 or -1. */
static inline int
bench_cpu_split(pid_t pid, double *ret_user, double *ret_sys)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;
	struct rusage ru;
	FILE *f;
	int ok;

	if (pid == 0) {
		if (getrusage(RUSAGE_SELF, &ru) < 0)
			return -1;
		*ret_user = (double)ru.ru_utime.tv_sec * 1e6 +
		    (double)ru.ru_utime.tv_usec;
		*ret_sys = (double)ru.ru_stime.tv_sec * 1e6 +
		    (double)ru.ru_stime.tv_usec;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	/* after "(comm)": state is field 3, utime 14, stime 15 */
	if (!ok || (p = strrchr(buf, ')')) == NULL || sscanf(p + 2,
	    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	    &st) != 2)
		return -1;
	*ret_user = (double)ut * 1e6 / (double)sysconf(_SC_CLK_TCK);
	*ret_sys = (double)st * 1e6 / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

/* User and system CPU per round trip of both sides over `trips` round
 * trips of `trip` (0 or -1), and the mean time of one; printed as
 * <prefix>_cpu_user_caller, _cpu_sys_caller, _cpu_user_worker,
 * _cpu_sys_worker and _mean (us).  No counter is open. */
static inline int
bench_cpu_trips(const char *prefix, pid_t worker, unsigned trips,
    int (*trip)(void *), void *arg)
{
	double cu0, cs0, wu0, ws0, cu1, cs1, wu1, ws1;
	char name[160];
	uint64_t t0, t1;
	unsigned i;

	if (bench_cpu_split(0, &cu0, &cs0) < 0 ||
	    bench_cpu_split(worker, &wu0, &ws0) < 0)
		return -1;
	t0 = bench_now_ns();
	for (i = 0; i < trips; i++)
		if (trip(arg) < 0)
			return -1;
	t1 = bench_now_ns();
	if (bench_cpu_split(0, &cu1, &cs1) < 0 ||
	    bench_cpu_split(worker, &wu1, &ws1) < 0)
		return -1;
	snprintf(name, sizeof(name), "%s_cpu_user_caller", prefix);
	bench_metric(name, (cu1 - cu0) / trips, "us");
	snprintf(name, sizeof(name), "%s_cpu_sys_caller", prefix);
	bench_metric(name, (cs1 - cs0) / trips, "us");
	snprintf(name, sizeof(name), "%s_cpu_user_worker", prefix);
	bench_metric(name, (wu1 - wu0) / trips, "us");
	snprintf(name, sizeof(name), "%s_cpu_sys_worker", prefix);
	bench_metric(name, (ws1 - ws0) / trips, "us");
	snprintf(name, sizeof(name), "%s_mean", prefix);
	bench_metric(name, (double)(t1 - t0) / 1e3 / trips, "us");
	return 0;
}

/* ------------------------------------------------ system calls counted
 * Exact counts of system calls, by the kernel: a perf counter on the
 * raw_syscalls:sys_enter tracepoint, one per task (thread) counted, not
 * inherited, so each side and each thread is counted apart.  A filter
 * ("id == N", the tracepoint's field) counts one system call only.  The
 * tracepoint's id comes from tracefs; where it is not mounted, a root
 * run mounts it in a private mount namespace of a short-lived child (the
 * machine's mounts stay as they were): call bench_sysc_id() while the
 * process has one thread.  A counted task pays a little at each switch,
 * so nothing is timed while counters are open. */
#define BENCH_TRACEFS "/sys/kernel/tracing"

static inline long
bench_tp_id_at(const char *root, const char *event)
{
	char path[256];
	long id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/id", root, event);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fscanf(f, "%ld", &id) != 1)
		id = -1;
	fclose(f);
	return id;
}

/* The id of tracefs event `event` ("raw_syscalls/sys_enter"), or -1. */
static inline long
bench_tp_id(const char *event)
{
	long id;
	int p[2], status;
	pid_t pid;

	if ((id = bench_tp_id_at(BENCH_TRACEFS, event)) >= 0 ||
	    (id = bench_tp_id_at("/sys/kernel/debug/tracing", event)) >= 0)
		return id;
	if (geteuid() != 0 || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tracefs", BENCH_TRACEFS, "tracefs", 0, NULL) < 0)
			_exit(1);
		id = bench_tp_id_at(BENCH_TRACEFS, event);
		_exit(bench_write_all(p[1], &id, sizeof(id)) < 0);
	}
	close(p[1]);
	if (read(p[0], &id, sizeof(id)) != (ssize_t)sizeof(id))
		id = -1;
	close(p[0]);
	waitpid(pid, &status, 0);
	return id;
}

/* The raw_syscalls:sys_enter id, or -1 with why. */
static inline long
bench_sysc_id(char *why, size_t wl)
{
	long id = bench_tp_id("raw_syscalls/sys_enter");

	if (id < 0)
		snprintf(why, wl, "no raw_syscalls:sys_enter tracepoint "
		    "(tracefs not mounted%s)", geteuid() ? " and not root" : "");
	return id;
}

/* A counter of task `tid`'s entries (`nr` >= 0: of that system call
 * only); the descriptor, or -errno. */
static inline int
bench_sysc_open(long id, pid_t tid, long nr)
{
	struct perf_event_attr a;
	char filter[32];
	int fd;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = (uint64_t)id;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
	    PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(filter, sizeof(filter), "id == %ld", nr);
	if (nr >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static inline double
bench_ctr(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v) ? (double)v : 0;
}

/* The system calls a breakdown names (the others are "other"). */
static const struct {
	const char *name;
	long nr;
} bench_sysc_names[] = {
	{ "read", SYS_read }, { "write", SYS_write }, { "readv", SYS_readv },
	{ "writev", SYS_writev }, { "recvmsg", SYS_recvmsg },
	{ "sendmsg", SYS_sendmsg }, { "recvfrom", SYS_recvfrom },
	{ "sendto", SYS_sendto }, { "poll", SYS_poll }, { "ppoll", SYS_ppoll },
	{ "epoll_wait", SYS_epoll_wait }, { "epoll_pwait", SYS_epoll_pwait },
	{ "futex", SYS_futex }, { "clock_nanosleep", SYS_clock_nanosleep },
	{ "sched_yield", SYS_sched_yield },
};
#define BENCH_NSYSC (sizeof(bench_sysc_names) / sizeof(bench_sysc_names[0]))

/* Every counter of one task: [0] all its system calls, [1 + i] those of
 * bench_sysc_names[i]. */
struct bench_sysc_task {
	pid_t tid;
	char comm[20];
	int fd[1 + BENCH_NSYSC];
	double v0[1 + BENCH_NSYSC], v[1 + BENCH_NSYSC];
	double ov[1 + BENCH_NSYSC];   /* the reading's own calls (calibrate) */
};

static inline void
bench_sysc_task_close(struct bench_sysc_task *t)
{
	for (size_t i = 0; i <= BENCH_NSYSC; i++)
		if (t->fd[i] >= 0)
			close(t->fd[i]);
}

/* Counters on every task of process `pid` (0: this one), at most `max`;
 * returns how many tasks, or -errno (the first open that failed). */
static inline int
bench_sysc_tasks_open(long id, pid_t pid, struct bench_sysc_task *t,
    int max)
{
	char path[300];
	struct dirent *de;
	FILE *f;
	DIR *d;
	int n = 0, fd;

	if (pid == 0)
		pid = getpid();
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL && n < max) {
		if (de->d_name[0] == '.')
			continue;
		memset(&t[n], 0, sizeof(t[n]));
		t[n].tid = (pid_t)atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
		    (int)t[n].tid);
		if ((f = fopen(path, "r")) != NULL) {
			if (fgets(t[n].comm, sizeof(t[n].comm), f) == NULL)
				t[n].comm[0] = '\0';
			t[n].comm[strcspn(t[n].comm, "\n")] = '\0';
			fclose(f);
		}
		for (size_t i = 0; i <= BENCH_NSYSC; i++)
			t[n].fd[i] = -1;
		for (size_t i = 0; i <= BENCH_NSYSC; i++) {
			fd = bench_sysc_open(id, t[n].tid, i == 0 ? -1 :
			    bench_sysc_names[i - 1].nr);
			if (fd < 0) {
				closedir(d);
				bench_sysc_task_close(&t[n]);
				while (n > 0)
					bench_sysc_task_close(&t[--n]);
				return fd;
			}
			t[n].fd[i] = fd;
		}
		n++;
	}
	closedir(d);
	return n;
}

/* Read every counter: into v0 (`start`) or v (end). */
static inline void
bench_sysc_tasks_read(struct bench_sysc_task *t, int n, int start)
{
	for (int k = 0; k < n; k++)
		for (size_t i = 0; i <= BENCH_NSYSC; i++)
			(start ? t[k].v0 : t[k].v)[i] = bench_ctr(t[k].fd[i]);
}

/* The calls a start and an end reading add to each counter (the
 * reading thread's own read()s between its two readings of a counter):
 * one empty interval, subtracted by bench_sysc_side.  Every task counted
 * by the reading thread goes in one call, in the order of the real
 * readings. */
static inline void
bench_sysc_calibrate(struct bench_sysc_task *a, int na,
    struct bench_sysc_task *b, int nb)
{
	bench_sysc_tasks_read(a, na, 1);
	bench_sysc_tasks_read(b, nb, 1);
	bench_sysc_tasks_read(a, na, 0);
	bench_sysc_tasks_read(b, nb, 0);
	for (int k = 0; k < na + nb; k++) {
		struct bench_sysc_task *t = k < na ? &a[k] : &b[k - na];

		for (size_t i = 0; i <= BENCH_NSYSC; i++)
			t->ov[i] = t->v[i] - t->v0[i];
	}
}

/* One side's calls per round trip: the total, and in `list` the named
 * system calls that occurred ("read 1.00 write 1.00 other 0.01"), per
 * thread (comm) when the side has more than one that made a call. */
static inline double
bench_sysc_side(const struct bench_sysc_task *t, int n, double trips,
    char *list, size_t ll)
{
	double total = 0, d, named;
	size_t used = 0;
	int k, busy = 0;

	list[0] = '\0';
	for (k = 0; k < n; k++)
		busy += t[k].v[0] - t[k].v0[0] - t[k].ov[0] >= trips / 100;
	for (k = 0; k < n; k++) {
		d = t[k].v[0] - t[k].v0[0] - t[k].ov[0];
		total += d;
		if (d < trips / 100)
			continue;     /* a thread that took no part */
		if (busy > 1 && used < ll)
			used += (size_t)snprintf(list + used, ll - used,
			    "%s[%s %.2f:", used ? " " : "", t[k].comm, d / trips);
		named = 0;
		for (size_t i = 1; i <= BENCH_NSYSC && used < ll; i++) {
			double c = t[k].v[i] - t[k].v0[i] - t[k].ov[i];

			named += c;
			if (c >= trips / 100)
				used += (size_t)snprintf(list + used, ll - used,
				    "%s%s %.2f", used ? " " : "",
				    bench_sysc_names[i - 1].name, c / trips);
		}
		if (d - named >= trips / 100 && used < ll)
			used += (size_t)snprintf(list + used, ll - used,
			    " other %.2f", (d - named) / trips);
		if (busy > 1 && used < ll)
			used += (size_t)snprintf(list + used, ll - used, "]");
	}
	return total / trips;
}

/* ------------------------------------------------- pipelined baselines
 * raw_pipelined and raw_batched: a forked echo child on each channel at
 * each placement, one figure per payload size; the unsuffixed figure of
 * a size is the channel and placement with the most msg/s, the limit. */

/* One channel, placement and size: msg/s, payload MB/s one way, CPU us
 * of both processes per echoed frame, and (printed when > 0) frames per
 * write() of the parent's writer. */
struct bench_tput {
	double msgs, mbps, cpu, per_write;
	int ok;
};

/* A baseline: its name (the metrics' prefix), its payload sizes, the
 * child's loop (never returns), one measurement over the parent's end
 * of a channel, and where the figures go: figs[BENCH_NCHAN *
 * BENCH_NPLACE * nsizes], indexed by bench_tput_at(). */
struct bench_tput_prog {
	const char *name;
	const size_t *sizes;
	size_t nsizes;
	void (*child)(struct bench_chan chi);
	int (*measure)(struct bench_chan par, pid_t child, size_t size,
	    double dur, struct bench_tput *f);
	struct bench_tput *figs;
};

static inline struct bench_tput *
bench_tput_at(const struct bench_tput_prog *pr, int c, int p, size_t i)
{
	return &pr->figs[((size_t)c * BENCH_NPLACE + (size_t)p) * pr->nsizes +
	    i];
}

/* One channel, one placement: parent (and the threads it starts) on CPU
 * `pc`, child on CPU `cc` (-1: where the scheduler puts them); every
 * size in turn over the same child.  Returns 0 or -errno. */
static inline int
bench_tput_placement(const struct bench_tput_prog *pr, int kind, int p,
    int pc, int cc, double dur)
{
	struct bench_chan par, chi;
	cpu_set_t orig;
	int status, rc;
	size_t i;
	pid_t pid;

	sched_getaffinity(0, sizeof(orig), &orig);
	if ((rc = bench_chan_open(kind, &par, &chi)) < 0)
		return rc;
	if ((pid = fork()) < 0) {
		rc = -errno;
		bench_chan_close(&par);
		bench_chan_close(&chi);
		return rc;
	}
	if (pid == 0) {
		bench_pin(cc);
		bench_chan_close(&par);
		pr->child(chi);
		_exit(0);
	}
	bench_chan_close(&chi);
	bench_pin(pc);          /* the threads it starts inherit it */
	for (i = 0, rc = 0; i < pr->nsizes && rc == 0; i++)
		rc = pr->measure(par, pid, pr->sizes[i], dur,
		    bench_tput_at(pr, kind, p, i));
	bench_chan_close(&par);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(orig), &orig);
	return rc;
}

static inline void
bench_tput_print(const struct bench_tput_prog *pr, const char *tag,
    size_t i, const struct bench_tput *f)
{
	char name[96];

	snprintf(name, sizeof(name), "%s_%zu%s_msgs", pr->name, pr->sizes[i],
	    tag);
	bench_metric(name, f->msgs, "msg/s");
	snprintf(name, sizeof(name), "%s_%zu%s_mbps", pr->name, pr->sizes[i],
	    tag);
	bench_metric(name, f->mbps, "MB/s");
	snprintf(name, sizeof(name), "%s_%zu%s_cpu_per_msg", pr->name,
	    pr->sizes[i], tag);
	bench_metric(name, f->cpu, "us");
	if (f->per_write > 0) {
		snprintf(name, sizeof(name), "%s_%zu%s_frames_per_write",
		    pr->name, pr->sizes[i], tag);
		bench_metric(name, f->per_write, "frames");
	}
}

/* Every figure, then per size the one with the most msg/s and a note
 * naming it. */
static inline void
bench_tput_report(const struct bench_tput_prog *pr, int nplace)
{
	const struct bench_tput *best, *f;
	int c, p, bc = 0, bp = 0;
	char tag[48], note[256];
	size_t i;

	for (c = 0; c < BENCH_NCHAN; c++)
		for (p = 0; p < nplace; p++)
			for (i = 0; i < pr->nsizes; i++) {
				f = bench_tput_at(pr, c, p, i);
				if (!f->ok)
					continue;
				snprintf(tag, sizeof(tag), "_%s_%s",
				    bench_chan_name[c], bench_place_name[p]);
				bench_tput_print(pr, tag, i, f);
			}
	for (i = 0; i < pr->nsizes; i++) {
		best = NULL;
		for (c = 0; c < BENCH_NCHAN; c++)
			for (p = 0; p < nplace; p++) {
				f = bench_tput_at(pr, c, p, i);
				if (f->ok && (best == NULL ||
				    f->msgs > best->msgs)) {
					best = f;
					bc = c;
					bp = p;
				}
			}
		if (best == NULL)
			continue;
		bench_tput_print(pr, "", i, best);
		snprintf(note, sizeof(note), "%s best at %zu B: %s %s "
		    "(%.0f msg/s, %.2f us CPU per message)", pr->name,
		    pr->sizes[i], bench_chan_name[bc], nplace > 1 ?
		    bench_place_name[bp] : "unpinned", best->msgs, best->cpu);
		bench_note(note);
	}
}

/* The whole program: every channel at both placements (unpinned when
 * only one CPU is usable), --quick for 0.3 s a figure instead of 1 s,
 * then the report.  Returns the exit status: 1 when the socketpair, the
 * channel every machine has, failed. */
static inline int
bench_tput_main(const struct bench_tput_prog *pr, int argc, char **argv)
{
	double dur = bench_quick(argc, argv) ? 0.3 : 1.0;
	int cpu[2], k, c, p, rc, nplace;
	char note[256];

	bench_ignore_sigpipe();
	k = bench_two_cpus(cpu);
	nplace = k < 2 ? 1 : 2;
	if (k < 2) {
		snprintf(note, sizeof(note), "%s: one CPU only, unpinned runs",
		    pr->name);
		bench_note(note);
		cpu[0] = cpu[1] = -1;
	}
	for (c = 0; c < BENCH_NCHAN; c++)
		for (p = 0; p < nplace; p++) {
			rc = bench_tput_placement(pr, c, p, cpu[0], cpu[p],
			    dur);
			if (rc == 0)
				continue;
			snprintf(note, sizeof(note), "%s %s %s: %s", pr->name,
			    bench_chan_name[c], bench_place_name[p],
			    strerror(-rc));
			bench_note(note);
			if (c == BENCH_SOCK)
				return 1;
		}
	if (nplace > 1) {
		snprintf(note, sizeof(note), "%s placement: samecpu parent "
		    "(writer and reader threads) and child on CPU %d, "
		    "crosscpu parent on CPU %d and child on CPU %d", pr->name,
		    cpu[0], cpu[0], cpu[1]);
		bench_note(note);
	}
	bench_tput_report(pr, nplace);
	return 0;
}

#endif /* SIPC_BENCH_H */
