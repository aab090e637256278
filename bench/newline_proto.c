/*
 * newline_proto.c - baseline: the naive prototype sipc replaces.
 *
 * A forked child speaks newline-delimited messages over two pipes with
 * stdio: it reads a line with getline(), hex-decodes it (binary payloads
 * may hold '\n' and '\0', so a line protocol has to encode them), encodes
 * the bytes again and answers with fputs() + fflush().  The parent sends
 * one line at a time and waits for the answer (synchronous), which is how
 * such prototypes are usually driven.
 *
 * Prints: metric newline_proto_64_{samecpu,crosscpu}_reqs <req/s> req/s
 *         metric newline_proto_64_reqs <req/s> req/s  (the better one)
 *         metric newline_proto_64_p50 <us> us         (of that one)
 *
 * Threads: single-threaded parent and child.
 */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "bench.h"

#define PAYLOAD 64
#define MAXSAMPLES 400000

static const char hexd[] = "0123456789abcdef";

static void
hex_encode(const uint8_t *in, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hexd[in[i] >> 4];
		out[2 * i + 1] = hexd[in[i] & 15];
	}
	out[2 * len] = '\n';
	out[2 * len + 1] = '\0';
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode up to the newline; returns the byte count or -1. */
static ssize_t
hex_decode(const char *in, size_t inlen, uint8_t *out, size_t cap)
{
	size_t i, n = 0;
	int hi, lo;

	for (i = 0; i + 1 < inlen && in[i] != '\n'; i += 2) {
		hi = hexval(in[i]);
		lo = hexval(in[i + 1]);
		if (hi < 0 || lo < 0 || n == cap)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | lo);
	}
	return (ssize_t)n;
}

static void
child_main(int rfd, int wfd)
{
	FILE *in = fdopen(rfd, "r"), *out = fdopen(wfd, "w");
	uint8_t bytes[4096];
	char *line = NULL, enc[2 * sizeof(bytes) + 2];
	size_t cap = 0;
	ssize_t n, m;

	if (in == NULL || out == NULL)
		_exit(2);
	while ((n = getline(&line, &cap, in)) > 0) {
		m = hex_decode(line, (size_t)n, bytes, sizeof(bytes));
		if (m < 0)
			_exit(3);
		hex_encode(bytes, (size_t)m, enc);
		if (fputs(enc, out) == EOF || fflush(out) == EOF)
			_exit(4);
	}
	_exit(0);
}

static void
pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Lock-step request/answer until `dur` passes; parent on CPU pc, child
 * on cc (-1: unpinned). */
static int
placement(int pc, int cc, double dur, uint64_t *lat, double *ret_rps,
    double *ret_p50)
{
	char req[2 * PAYLOAD + 2], rep[2 * PAYLOAD + 8];
	int to_child[2], from_child[2], status, rc = -EPIPE;
	uint8_t payload[PAYLOAD];
	uint64_t t0, t1, end;
	cpu_set_t orig;
	FILE *out, *in;
	size_t n = 0;
	unsigned i;
	pid_t pid;

	sched_getaffinity(0, sizeof(orig), &orig);
	if (pipe(to_child) < 0 || pipe(from_child) < 0 || (pid = fork()) < 0)
		return -errno;
	if (pid == 0) {
		pin(cc);
		close(to_child[1]);
		close(from_child[0]);
		child_main(to_child[0], from_child[1]);
	}
	pin(pc);
	close(to_child[0]);
	close(from_child[1]);
	out = fdopen(to_child[1], "w");
	in = fdopen(from_child[0], "r");
	if (out == NULL || in == NULL)
		return -ENOMEM;
	bench_fill(payload, sizeof(payload), 64);
	hex_encode(payload, sizeof(payload), req);
	for (i = 0; i < 500; i++)
		if (fputs(req, out) == EOF || fflush(out) == EOF ||
		    fgets(rep, sizeof(rep), in) == NULL)
			goto out;
	t0 = bench_now_ns();
	end = t0 + (uint64_t)(dur * 1e9);
	do {
		t1 = bench_now_ns();
		if (fputs(req, out) == EOF || fflush(out) == EOF ||
		    fgets(rep, sizeof(rep), in) == NULL)
			goto out;
		lat[n] = bench_now_ns() - t1;
		n++;
	} while (t1 < end && n < MAXSAMPLES);
	t1 = bench_now_ns();
	if (strcmp(req, rep) != 0)
		fprintf(stderr, "newline_proto: echo mismatch\n");
	*ret_rps = (double)n / bench_secs(t0, t1);
	*ret_p50 = (double)bench_pct(lat, n, 50) / 1e3;
	rc = 0;
out:
	fclose(out);
	fclose(in);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(orig), &orig);
	return rc;
}

/*
 * As for raw_pingpong: the scheduler's placement of the two processes
 * decides the figure here, so run both placements and keep the better
 * (a prototype's best case is the bar sipc has to clear).
 */
int
main(int argc, char **argv)
{
	double dur = bench_quick(argc, argv) ? 0.4 : 2.0;
	double rps[2] = { 0, 0 }, p50[2] = { 0, 0 };
	uint64_t *lat = malloc(MAXSAMPLES * sizeof(*lat));
	int cpu[2] = { -1, -1 }, c, k = 0, b, rc;
	char note[200];
	cpu_set_t set;

	bench_ignore_sigpipe();
	if (lat == NULL)
		return 1;
	sched_getaffinity(0, sizeof(set), &set);
	for (c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[k++] = c;
	if (k < 2)
		rc = placement(-1, -1, dur, lat, &rps[0], &p50[0]);
	else if ((rc = placement(cpu[0], cpu[0], dur, lat, &rps[0],
	    &p50[0])) == 0) {
		rc = placement(cpu[0], cpu[1], dur, lat, &rps[1], &p50[1]);
		bench_metric("newline_proto_64_samecpu_reqs", rps[0], "req/s");
		bench_metric("newline_proto_64_crosscpu_reqs", rps[1], "req/s");
	}
	if (rc < 0) {
		fprintf(stderr, "newline_proto: %s\n", strerror(-rc));
		return 1;
	}
	b = rps[1] > rps[0];
	bench_metric("newline_proto_64_reqs", rps[b], "req/s");
	bench_metric("newline_proto_64_p50", p50[b], "us");
	if (k < 2)
		snprintf(note, sizeof(note), "newline_proto placement: one CPU "
		    "only, not pinned");
	else
		snprintf(note, sizeof(note), "newline_proto placement: "
		    "_samecpu parent and child on CPU %d, _crosscpu parent on "
		    "CPU %d and child on CPU %d; unsuffixed = %s", cpu[0],
		    cpu[0], cpu[1], b ? "crosscpu" : "samecpu");
	bench_note(note);
	free(lat);
	return 0;
}
