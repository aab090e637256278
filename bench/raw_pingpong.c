/*
 * raw_pingpong.c - baseline: the physical limit of one request, one reply.
 *
 * Two processes joined by a channel: a socketpair(AF_UNIX, SOCK_STREAM),
 * two pipes, or two pipes grown to 1 MiB (F_SETPIPE_SZ).  The parent
 * writes a 4-byte length prefix plus S payload bytes in one write(); the
 * forked child reads exactly that frame and echoes it in one write(); the
 * parent reads the echo in full.  One round trip is one latency sample.
 * No framing checks, no threads, no copies beyond read/write: this is what
 * any IPC library on this machine has to add its costs to.
 *
 * Every channel runs with both processes pinned to one CPU (samecpu) and
 * to two (crosscpu).  Prints, for S = 64, 4096, 1048576:
 *   metric raw_pingpong_<S>_<chan>_<place>_p50 <us> us, _p99, _n
 *   metric raw_pingpong_<S>_<chan>_p50, _p99    better placement
 *   metric raw_pingpong_<S>_<place>_p50, _p99   best channel there
 *   metric raw_pingpong_<S>_p50, _p99           best of all: the limit
 *   metric raw_pingpong_64[_<chan>_<place>]_ctxsw  context switches of
 *                                               both processes per trip
 * and a note per size naming the channel and placement that won.
 *
 * Then, at 64 B only, the other ways ONE descriptor can carry the
 * channel (a worker gets exactly one protocol descriptor), both
 * placements: socketpairs of SOCK_SEQPACKET and SOCK_DGRAM (one message
 * per frame), and the stream socketpair with both sides waiting for
 * input in poll() before each read() ("sockpoll": a thread asleep in a
 * stream socket's read() is also woken when the peer reads what it
 * wrote, which poll() filters out; sipc waits that way on both ends):
 *   metric raw_pingpong_64_<seqpacket|dgram|sockpoll>_<place>_p50, _p99,
 *       _n, _ctxsw
 *   metric raw_pingpong_64_onefd_p50, _p99, _ctxsw   the best one-descriptor
 *       channel (the plain stream socketpair included), better placement
 * These never enter the limit above; they show what one descriptor can
 * reach against two pipes on this machine.  Last, the system calls of
 * one 64 B round trip on each side, counted by the kernel (not timed;
 * bench.h, bench_sysc_*) for each one-descriptor channel at samecpu:
 *   metric raw_pingpong_64_<sock|seqpacket|dgram|sockpoll>_syscalls_caller,
 *       _syscalls_worker (calls), and a note with them by name
 *   metric raw_pingpong_64_onefd_syscalls_caller, _worker  the channel of
 *       the _onefd figure
 *   metric raw_pingpong_64_<chan>_samecpu_cpu_user_caller, _cpu_sys_caller,
 *       _cpu_user_worker, _cpu_sys_worker, _mean (us a trip, 100,000
 *       trips without counters; the split of user and system time is the
 *       kernel's estimate)
 * or a note "system calls not measured" saying why.
 *
 * Threads: single-threaded parent and child.
 */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "bench.h"

static const size_t sizes[] = { 64, 4096, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ 1048576
#define MAXSAMPLES 400000

struct fig {
	double p50, p99, n, ctxsw;
	int ok;
};

/* [channel][placement][size] */
static struct fig F[BENCH_NCHAN][BENCH_NPLACE][NSIZES];

/* Child: echo frames until EOF.  Exits the process. */
static void
child_echo(struct bench_chan c)
{
	uint8_t *buf = malloc(4 + MAXSZ);
	uint32_t len;

	if (buf == NULL)
		_exit(2);
	for (;;) {
		if (bench_read_all(c.rd, buf, 4) < 0)
			_exit(0);
		memcpy(&len, buf, 4);
		if (len > MAXSZ || bench_read_all(c.rd, buf + 4, len) < 0)
			_exit(3);
		if (bench_write_all(c.wr, buf, 4 + (size_t)len) < 0)
			_exit(4);
	}
}

/* Wait in poll() until `fd` has input (or an end), when `on`. */
static void
wait_input(int fd, int on)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	while (on && poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
}

/* Child of the one-descriptor channels: echo what each read() returns
 * (one message of a message socket; a whole 68-byte frame of the stream
 * socket in practice, which is all this child is used for), waiting in
 * poll() first when `usepoll`.  Exits the process. */
static void
child_echo_msg(int fd, int usepoll)
{
	uint8_t buf[4096];
	ssize_t n;

	for (;;) {
		wait_input(fd, usepoll);
		if ((n = read(fd, buf, sizeof(buf))) < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		if (bench_write_all(fd, buf, (size_t)n) < 0)
			_exit(4);
	}
}

/* Set while the parent of a "sockpoll" run waits in poll() first. */
static int parent_polls;

/* One round trip of `len` payload bytes.  Returns 0 or -errno. */
static int
round_trip(struct bench_chan c, uint8_t *out, uint8_t *in, uint32_t len)
{
	int rc;

	memcpy(out, &len, 4);
	if ((rc = bench_write_all(c.wr, out, 4 + (size_t)len)) < 0)
		return rc;
	wait_input(c.rd, parent_polls);
	return bench_read_all(c.rd, in, 4 + (size_t)len);
}

static int
measure(struct bench_chan c, pid_t child, size_t size, double dur,
    uint64_t *lat, struct fig *ret)
{
	uint8_t *out = malloc(4 + size), *in = malloc(4 + size);
	unsigned warm = size >= MAXSZ ? 5 : 200, i;
	uint64_t t0, t, end;
	double cs0;
	size_t n = 0;
	int rc = -EPIPE;

	if (out == NULL || in == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	bench_fill(out + 4, size, (uint32_t)size);
	for (i = 0; i < warm; i++)
		if (round_trip(c, out, in, (uint32_t)size) < 0)
			goto out;
	cs0 = bench_ctxsw(0) + bench_ctxsw(child);
	end = bench_now_ns() + (uint64_t)(dur * 1e9);
	do {
		t0 = bench_now_ns();
		if (round_trip(c, out, in, (uint32_t)size) < 0)
			goto out;
		t = bench_now_ns();
		lat[n++] = t - t0;
	} while (t < end && n < MAXSAMPLES);
	ret->ctxsw = (bench_ctxsw(0) + bench_ctxsw(child) - cs0) / (double)n;
	if (memcmp(out, in, 4 + size) != 0)
		fprintf(stderr, "raw_pingpong: echo mismatch at %zu\n", size);
	ret->p50 = (double)bench_pct(lat, n, 50) / 1e3;
	ret->p99 = (double)bench_pct(lat, n, 99) / 1e3;
	ret->n = (double)n;
	ret->ok = 1;
	rc = 0;
out:
	free(out);
	free(in);
	return rc;
}

/*
 * One channel, one placement: parent on CPU `pc`, child on CPU `cc` (-1:
 * where the scheduler puts them).  Fills figs[] for every size.
 */
static int
placement(int kind, int pc, int cc, double dur, uint64_t *lat,
    struct fig *figs)
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
		child_echo(chi);
	}
	bench_chan_close(&chi);
	bench_pin(pc);
	for (i = 0, rc = 0; i < NSIZES && rc == 0; i++)
		rc = measure(par, pid, sizes[i], dur, lat, &figs[i]);
	bench_chan_close(&par);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(orig), &orig);
	return rc;
}

static void
print_fig(const char *tag, size_t i, const struct fig *f, int with_n)
{
	char name[96];

	snprintf(name, sizeof(name), "raw_pingpong_%zu%s_p50", sizes[i], tag);
	bench_metric(name, f->p50, "us");
	snprintf(name, sizeof(name), "raw_pingpong_%zu%s_p99", sizes[i], tag);
	bench_metric(name, f->p99, "us");
	if (with_n) {
		snprintf(name, sizeof(name), "raw_pingpong_%zu%s_n", sizes[i],
		    tag);
		bench_metric(name, f->n, "samples");
	}
	if (sizes[i] == 64) {
		snprintf(name, sizeof(name), "raw_pingpong_64%s_ctxsw", tag);
		bench_metric(name, f->ctxsw, "switches");
	}
}

/* Index of the better of a set of figures by p50 (-1: none ran). */
static int
better(const struct fig *a, const struct fig *b)
{
	if (!a->ok)
		return b->ok ? 1 : -1;
	return (!b->ok || a->p50 <= b->p50) ? 0 : 1;
}

/* Print every figure, then per size the best of each channel, of each
 * placement and of all, and which channel and placement won. */
static void
report(int nplace)
{
	const struct fig *best, *f;
	int c, p, bc, bp;
	char tag[48], note[256];
	size_t i;

	for (c = 0; c < BENCH_NCHAN; c++)
		for (p = 0; p < nplace; p++)
			for (i = 0; i < NSIZES; i++) {
				if (!F[c][p][i].ok)
					continue;
				snprintf(tag, sizeof(tag), "_%s_%s",
				    bench_chan_name[c], bench_place_name[p]);
				print_fig(tag, i, &F[c][p][i], 1);
			}
	for (i = 0; i < NSIZES; i++) {
		bc = bp = -1;
		best = NULL;
		for (c = 0; c < BENCH_NCHAN; c++) {
			f = NULL;
			for (p = 0; p < nplace; p++)
				if (F[c][p][i].ok && (f == NULL ||
				    better(f, &F[c][p][i]) == 1))
					f = &F[c][p][i];
			if (f == NULL)
				continue;
			snprintf(tag, sizeof(tag), "_%s", bench_chan_name[c]);
			print_fig(tag, i, f, 0);
			if (best == NULL || better(best, f) == 1) {
				best = f;
				bc = c;
				bp = (int)(f - &F[c][0][i]) / (int)NSIZES;
			}
		}
		for (p = 0; p < nplace && nplace > 1; p++) {
			f = NULL;
			for (c = 0; c < BENCH_NCHAN; c++)
				if (F[c][p][i].ok && (f == NULL ||
				    better(f, &F[c][p][i]) == 1))
					f = &F[c][p][i];
			if (f == NULL)
				continue;
			snprintf(tag, sizeof(tag), "_%s", bench_place_name[p]);
			print_fig(tag, i, f, 0);
		}
		if (best == NULL)
			continue;
		print_fig("", i, best, 0);
		snprintf(note, sizeof(note), "raw_pingpong best at %zu B: %s %s "
		    "(p50 %.1f us; better placement: sock %.1f, pipe %.1f, "
		    "pipe1m %.1f us)", sizes[i], bench_chan_name[bc],
		    nplace > 1 ? bench_place_name[bp] : "unpinned", best->p50,
		    F[0][better(&F[0][0][i], &F[0][1][i]) == 1][i].p50,
		    F[1][better(&F[1][0][i], &F[1][1][i]) == 1][i].p50,
		    F[2][better(&F[2][0][i], &F[2][1][i]) == 1][i].p50);
		bench_note(note);
	}
}

/* ------------------------------------------- one-descriptor channels */
enum { MSG_SEQPACKET, MSG_DGRAM, MSG_SOCKPOLL, NMSG };
static const char *const msg_name[NMSG] = { "seqpacket", "dgram", "sockpoll" };
static const int msg_type[NMSG] = { SOCK_SEQPACKET, SOCK_DGRAM, SOCK_STREAM };
static struct fig M[NMSG][BENCH_NPLACE];

/* Channel `m` of the one-descriptor set, 64 B frames, parent on CPU
 * `pc`, child on `cc`.  Returns 0 or -errno. */
static int
msg_placement(int m, int pc, int cc, double dur, uint64_t *lat,
    struct fig *f)
{
	int type = msg_type[m], usepoll = m == MSG_SOCKPOLL;
	struct bench_chan par;
	cpu_set_t orig;
	int sv[2], status, rc;
	pid_t pid;

	sched_getaffinity(0, sizeof(orig), &orig);
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		rc = -errno;
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	if (pid == 0) {
		bench_pin(cc);
		close(sv[0]);
		child_echo_msg(sv[1], usepoll);
	}
	close(sv[1]);
	bench_pin(pc);
	par.rd = par.wr = sv[0];
	parent_polls = usepoll;
	rc = measure(par, pid, 64, dur, lat, f);
	parent_polls = 0;
	close(sv[0]);
	/* a datagram socket sees no end of stream: the child is stopped */
	(void)kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(orig), &orig);
	return rc;
}

/* Which one-descriptor channel gave the _onefd figure: a msg_name
 * index, or NMSG for the stream socketpair (-1 before report_onefd). */
static int onefd_best = -1;

/* The message channels' figures, and the best one-descriptor channel
 * (these two and the stream socketpair) at 64 B. */
static void
report_onefd(int nplace)
{
	const struct fig *best = NULL, *f;
	const char *bn = NULL, *bp = NULL;
	char tag[48], note[256];
	int m, p;

	for (m = 0; m < NMSG; m++)
		for (p = 0; p < nplace; p++) {
			f = &M[m][p];
			if (!f->ok)
				continue;
			snprintf(tag, sizeof(tag), "_%s_%s", msg_name[m],
			    bench_place_name[p]);
			print_fig(tag, 0, f, 1);
			if (best == NULL || better(best, f) == 1) {
				best = f;
				bn = msg_name[m];
				bp = bench_place_name[p];
			}
		}
	for (p = 0; p < nplace; p++) {
		f = &F[BENCH_SOCK][p][0];
		if (f->ok && (best == NULL || better(best, f) == 1)) {
			best = f;
			bn = "sock";
			bp = bench_place_name[p];
		}
	}
	if (best == NULL)
		return;
	for (m = 0; m < NMSG; m++)
		if (strcmp(bn, msg_name[m]) == 0)
			onefd_best = m;
	print_fig("_onefd", 0, best, 0);
	snprintf(note, sizeof(note), "raw_pingpong best one-descriptor channel "
	    "at 64 B: %s %s (p50 %.1f us, %.2f context switches a trip)", bn,
	    nplace > 1 ? bp : "unpinned", best->p50, best->ctxsw);
	bench_note(note);
}

/*
 * System calls per round trip of one-descriptor channel `m` (a msg_name
 * index, or NMSG: the stream socketpair with child_echo, as in the
 * `sock` figure), both processes on CPU `cpu`: SYSC_TRIPS trips counted
 * by the kernel for each (bench_sysc_*, bench.h), after a warm-up; no
 * time is taken.  Prints raw_pingpong_64_<chan>_syscalls_caller and
 * _worker and a note with the calls by name; 0 or -errno.
 */
#define SYSC_TRIPS 20000
static unsigned cpu_trips = 100000;  /* quick: 10,000 */

struct trip_arg {
	struct bench_chan c;
	uint8_t *out, *in;
};

static int
trip64(void *arg)
{
	struct trip_arg *a = arg;

	return round_trip(a->c, a->out, a->in, 64);
}

static int
count_onefd(int m, long id, int cpu, double *ret_caller, double *ret_worker)
{
	const char *name = m == NMSG ? "sock" : msg_name[m];
	int usepoll = m == MSG_SOCKPOLL, sv[2], status, rc, i, nc;
	struct bench_sysc_task self[4], kid;
	uint8_t out[68], in[68];
	char lc[256], lw[256], note[640], mn[96];
	struct bench_chan par;
	cpu_set_t orig;
	pid_t pid;

	sched_getaffinity(0, sizeof(orig), &orig);
	if (socketpair(AF_UNIX, (m == NMSG ? SOCK_STREAM : msg_type[m]) |
	    SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		rc = -errno;
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	if (pid == 0) {
		bench_pin(cpu);
		close(sv[0]);
		if (m == NMSG)
			child_echo((struct bench_chan){ sv[1], sv[1] });
		child_echo_msg(sv[1], usepoll);
	}
	close(sv[1]);
	bench_pin(cpu);
	par.rd = par.wr = sv[0];
	parent_polls = usepoll;
	bench_fill(out + 4, 64, 64);
	rc = 0;
	for (i = 0; i < 200 && rc == 0; i++)
		rc = round_trip(par, out, in, 64);
	nc = rc == 0 ? bench_sysc_tasks_open(id, 0, self, 4) : rc;
	if (nc > 0 && (rc = bench_sysc_tasks_open(id, pid, &kid, 1)) < 0)
		while (nc > 0)
			bench_sysc_task_close(&self[--nc]);
	if (nc <= 0 || rc < 0) {
		rc = nc < 0 ? nc : rc < 0 ? rc : -ESRCH;
		goto out;
	}
	bench_sysc_calibrate(self, nc, &kid, 1);
	bench_sysc_tasks_read(self, nc, 1);
	bench_sysc_tasks_read(&kid, 1, 1);
	for (i = 0, rc = 0; i < SYSC_TRIPS && rc == 0; i++)
		rc = round_trip(par, out, in, 64);
	bench_sysc_tasks_read(self, nc, 0);
	bench_sysc_tasks_read(&kid, 1, 0);
	if (rc == 0) {
		*ret_caller = bench_sysc_side(self, nc, SYSC_TRIPS, lc, sizeof(lc));
		*ret_worker = bench_sysc_side(&kid, 1, SYSC_TRIPS, lw, sizeof(lw));
		snprintf(mn, sizeof(mn), "raw_pingpong_64_%s_syscalls_caller",
		    name);
		bench_metric(mn, *ret_caller, "calls");
		snprintf(mn, sizeof(mn), "raw_pingpong_64_%s_syscalls_worker",
		    name);
		bench_metric(mn, *ret_worker, "calls");
		snprintf(note, sizeof(note), "raw_pingpong %s system calls a "
		    "round trip (%d counted): caller %s; worker %s", name,
		    SYSC_TRIPS, lc, lw);
		bench_note(note);
	}
	while (nc > 0)
		bench_sysc_task_close(&self[--nc]);
	bench_sysc_task_close(&kid);
	if (rc == 0) {
		struct trip_arg ta = { par, out, in };

		snprintf(mn, sizeof(mn), "raw_pingpong_64_%s_samecpu", name);
		if (bench_cpu_trips(mn, pid, cpu_trips, trip64, &ta) < 0)
			rc = -EIO;
	}
out:
	parent_polls = 0;
	close(sv[0]);
	(void)kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(orig), &orig);
	return rc;
}

/* The counts of every one-descriptor channel, and the _onefd figure's
 * under raw_pingpong_64_onefd_syscalls_caller/_worker. */
static void
count_all(int cpu)
{
	double c = 0, w = 0;
	char why[160], note[256];
	long id;
	int m, rc;

	if ((id = bench_sysc_id(why, sizeof(why))) < 0) {
		snprintf(note, sizeof(note), "raw_pingpong system calls not "
		    "measured: %s", why);
		bench_note(note);
		return;
	}
	for (m = 0; m <= NMSG; m++) {
		if ((rc = count_onefd(m, id, cpu, &c, &w)) < 0) {
			snprintf(note, sizeof(note), "raw_pingpong system calls "
			    "of %s not measured: %s", m == NMSG ? "sock" :
			    msg_name[m], strerror(-rc));
			bench_note(note);
			continue;
		}
		if (m == (onefd_best < 0 ? NMSG : onefd_best)) {
			bench_metric("raw_pingpong_64_onefd_syscalls_caller", c,
			    "calls");
			bench_metric("raw_pingpong_64_onefd_syscalls_worker", w,
			    "calls");
		}
	}
}

/*
 * Where the scheduler puts the two processes decides the figure on small
 * VMs (a wake-up on the same CPU costs a few us, across CPUs tens), and
 * it puts them differently from run to run.  So measure both placements
 * explicitly, over every channel, and take the best as the limit.
 */
int
main(int argc, char **argv)
{
	double dur = bench_quick(argc, argv) ? 0.15 : 0.6;

	if (bench_quick(argc, argv))
		cpu_trips = 10000;
	uint64_t *lat = malloc(MAXSAMPLES * sizeof(*lat));
	int cpu[2], k, c, p, rc, nplace;
	char note[256];

	bench_ignore_sigpipe();
	if (lat == NULL)
		return 1;
	k = bench_two_cpus(cpu);
	nplace = k < 2 ? 1 : 2;
	if (k < 2) {
		bench_note("raw_pingpong: one CPU only, unpinned runs");
		cpu[0] = cpu[1] = -1;
	}
	for (c = 0; c < BENCH_NCHAN; c++)
		for (p = 0; p < nplace; p++) {
			rc = placement(c, cpu[0], cpu[p], dur, lat, F[c][p]);
			if (rc == 0)
				continue;
			snprintf(note, sizeof(note), "raw_pingpong %s %s: %s",
			    bench_chan_name[c], bench_place_name[p],
			    strerror(-rc));
			bench_note(note);
			if (c == BENCH_SOCK)
				goto fail;
		}
	if (nplace > 1) {
		snprintf(note, sizeof(note), "raw_pingpong placement: samecpu "
		    "parent and child on CPU %d, crosscpu parent on CPU %d and "
		    "child on CPU %d", cpu[0], cpu[0], cpu[1]);
		bench_note(note);
	}
	report(nplace);
	for (c = 0; c < NMSG; c++)
		for (p = 0; p < nplace; p++) {
			rc = msg_placement(c, cpu[0], cpu[p], dur, lat,
			    &M[c][p]);
			if (rc == 0)
				continue;
			snprintf(note, sizeof(note), "raw_pingpong %s %s: %s",
			    msg_name[c], bench_place_name[p], strerror(-rc));
			bench_note(note);
		}
	report_onefd(nplace);
	count_all(cpu[0]);
	free(lat);
	return 0;
fail:
	free(lat);
	return 1;
}
