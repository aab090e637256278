/*
 * raw_pingpong.c - baseline: the physical limit of one request, one reply.
 *
 * Two processes joined by socketpair(AF_UNIX, SOCK_STREAM).  The parent
 * sends a 4-byte length prefix plus S payload bytes in one write(); the
 * forked child reads exactly that frame and echoes it in one write(); the
 * parent reads the echo in full.  One round trip is one latency sample.
 * No framing checks, no threads, no copies beyond read/write: this is what
 * any IPC library on this machine has to add its costs to.
 *
 * Prints, for S = 64, 4096, 1048576, with both processes pinned to the
 * same CPU (_samecpu) and to two CPUs (_crosscpu), then the better of
 * the two (by p50) without a suffix:
 *   metric raw_pingpong_<S>[_samecpu|_crosscpu]_p50 <us> us, ..._p99
 *
 * Threads: single-threaded parent and child.
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench.h"

static const size_t sizes[] = { 64, 4096, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ 1048576
#define MAXSAMPLES 400000

/* Child: echo frames until EOF.  Exits the process. */
static void
child_echo(int fd)
{
	uint8_t *buf = malloc(4 + MAXSZ);
	uint32_t len;

	if (buf == NULL)
		_exit(2);
	for (;;) {
		if (bench_read_all(fd, buf, 4) < 0)
			_exit(0);
		memcpy(&len, buf, 4);
		if (len > MAXSZ || bench_read_all(fd, buf + 4, len) < 0)
			_exit(3);
		if (bench_write_all(fd, buf, 4 + (size_t)len) < 0)
			_exit(4);
	}
}

/* One round trip of `len` payload bytes.  Returns 0 or -errno. */
static int
round_trip(int fd, uint8_t *out, uint8_t *in, uint32_t len)
{
	int rc;

	memcpy(out, &len, 4);
	if ((rc = bench_write_all(fd, out, 4 + (size_t)len)) < 0)
		return rc;
	return bench_read_all(fd, in, 4 + (size_t)len);
}

struct fig {
	double p50, p99, n;
};

static int
measure(int fd, size_t size, double dur, uint64_t *lat, struct fig *ret)
{
	uint8_t *out = malloc(4 + size), *in = malloc(4 + size);
	unsigned warm = size >= MAXSZ ? 5 : 200, i;
	uint64_t t0, t, end;
	size_t n = 0;
	int rc = -EPIPE;

	if (out == NULL || in == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	bench_fill(out + 4, size, (uint32_t)size);
	for (i = 0; i < warm; i++)
		if (round_trip(fd, out, in, (uint32_t)size) < 0)
			goto out;
	end = bench_now_ns() + (uint64_t)(dur * 1e9);
	do {
		t0 = bench_now_ns();
		if (round_trip(fd, out, in, (uint32_t)size) < 0)
			goto out;
		t = bench_now_ns();
		lat[n++] = t - t0;
	} while (t < end && n < MAXSAMPLES);
	if (memcmp(out, in, 4 + size) != 0)
		fprintf(stderr, "raw_pingpong: echo mismatch at %zu\n", size);
	ret->p50 = (double)bench_pct(lat, n, 50) / 1e3;
	ret->p99 = (double)bench_pct(lat, n, 99) / 1e3;
	ret->n = (double)n;
	rc = 0;
out:
	free(out);
	free(in);
	return rc;
}

/*
 * One placement: parent on CPU `pc`, child on CPU `cc` (-1: leave both
 * where the scheduler puts them).  Fills figs[] for every size.
 */
static int
placement(int pc, int cc, double dur, uint64_t *lat, struct fig *figs)
{
	cpu_set_t orig, set;
	int sv[2], status, rc = 0;
	size_t i;
	pid_t pid;

	sched_getaffinity(0, sizeof(orig), &orig);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if ((pid = fork()) < 0)
		return -errno;
	if (pid == 0) {
		if (cc >= 0) {
			CPU_ZERO(&set);
			CPU_SET(cc, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		close(sv[0]);
		child_echo(sv[1]);
	}
	close(sv[1]);
	if (pc >= 0) {
		CPU_ZERO(&set);
		CPU_SET(pc, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	for (i = 0; i < NSIZES && rc == 0; i++)
		rc = measure(sv[0], sizes[i], dur, lat, &figs[i]);
	close(sv[0]);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(orig), &orig);
	return rc;
}

static void
print_figs(const char *tag, const struct fig *figs)
{
	char name[64];
	size_t i;

	for (i = 0; i < NSIZES; i++) {
		snprintf(name, sizeof(name), "raw_pingpong_%zu%s_p50", sizes[i], tag);
		bench_metric(name, figs[i].p50, "us");
		snprintf(name, sizeof(name), "raw_pingpong_%zu%s_p99", sizes[i], tag);
		bench_metric(name, figs[i].p99, "us");
		if (*tag == '\0')
			continue;
		snprintf(name, sizeof(name), "raw_pingpong_%zu%s_n", sizes[i], tag);
		bench_metric(name, figs[i].n, "samples");
	}
}

/*
 * Where the scheduler puts the two processes decides the figure on small
 * VMs (a wake-up on the same CPU costs a few us, across CPUs tens), and
 * it puts them differently from run to run.  So measure both placements
 * explicitly and take the better one per size as the physical limit.
 */
int
main(int argc, char **argv)
{
	double dur = bench_quick(argc, argv) ? 0.3 : 1.5;
	uint64_t *lat = malloc(MAXSAMPLES * sizeof(*lat));
	struct fig same[NSIZES], cross[NSIZES], best[NSIZES];
	int cpu[2] = { -1, -1 }, c, k = 0, rc, n;
	char note[256];
	cpu_set_t set;
	size_t i;

	bench_ignore_sigpipe();
	if (lat == NULL)
		return 1;
	sched_getaffinity(0, sizeof(set), &set);
	for (c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[k++] = c;
	if (k < 2) {
		bench_note("raw_pingpong: one CPU only, unpinned run");
		if ((rc = placement(-1, -1, dur, lat, best)) < 0)
			goto fail;
		print_figs("", best);
		return 0;
	}
	if ((rc = placement(cpu[0], cpu[0], dur, lat, same)) < 0 ||
	    (rc = placement(cpu[0], cpu[1], dur, lat, cross)) < 0)
		goto fail;
	print_figs("_samecpu", same);
	print_figs("_crosscpu", cross);
	n = snprintf(note, sizeof(note), "raw_pingpong placement: _samecpu "
	    "parent and child on CPU %d, _crosscpu parent on CPU %d and child "
	    "on CPU %d; unsuffixed = better p50:", cpu[0], cpu[0], cpu[1]);
	for (i = 0; i < NSIZES; i++) {
		best[i] = same[i].p50 <= cross[i].p50 ? same[i] : cross[i];
		n += snprintf(note + n, sizeof(note) - (size_t)n, " %zu B %s",
		    sizes[i], same[i].p50 <= cross[i].p50 ? "samecpu" :
		    "crosscpu");
	}
	print_figs("", best);
	bench_note(note);
	free(lat);
	return 0;
fail:
	fprintf(stderr, "raw_pingpong: %s\n", strerror(-rc));
	return 1;
}
