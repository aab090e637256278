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
 * Threads: single-threaded parent and child.
 */
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

/* One round trip of `len` payload bytes.  Returns 0 or -errno. */
static int
round_trip(struct bench_chan c, uint8_t *out, uint8_t *in, uint32_t len)
{
	int rc;

	memcpy(out, &len, 4);
	if ((rc = bench_write_all(c.wr, out, 4 + (size_t)len)) < 0)
		return rc;
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
	free(lat);
	return 0;
fail:
	free(lat);
	return 1;
}
