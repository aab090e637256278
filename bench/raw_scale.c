/*
 * raw_scale.c - baseline: what many worker processes cost without sipc.
 *
 * The parent forks N echo children (N = 4, 16, 64, 256, as sipc_bench's
 * scale section) and keeps 256 requests of 64 B outstanding, spread
 * evenly (256 / N per child, one each at 256): a single parent thread
 * waits with epoll, and every echo it reads from a child is answered at
 * once with a new request to that child, one write() per frame (4-byte
 * length prefix + payload) on both sides, as in raw_pipelined.  That is
 * the cheapest a supervisor of N processes can be: no locks, no threads
 * to hand over to, one wait for all of them.  Each N runs over a
 * socketpair (sipc's channel) and over two pipes; nothing is pinned (the
 * scheduler places N + 1 processes, as it places sipc's workers).
 *
 * Prints, for each N and channel:
 *   metric raw_scale_w<N>_<chan>_64_msgs <msg/s> msg/s
 *   metric raw_scale_w<N>_<chan>_64_cpu_per_msg <us> us  (parent + children)
 *   metric raw_scale_w<N>_64_msgs   the better channel at that N
 * and a note per N naming it.
 *
 * Threads: one per process.
 */
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "bench.h"

#define OUTSTANDING 256
#define SIZE 64
#define CHUNK 65536

static const unsigned counts[] = { 4, 16, 64, 256 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* The parent's view of one child. */
struct kid {
	struct bench_chan c;
	pid_t pid;
	size_t hdr, need;       /* header bytes seen; payload bytes left */
	uint8_t hb[4];
};

struct fig {
	double msgs, cpu;
	int ok;
};

static uint64_t
cpu_all(const struct kid *k, unsigned n)
{
	uint64_t ns = bench_cpu_ns(0);

	for (unsigned i = 0; i < n; i++)
		ns += bench_cpu_ns(k[i].pid);
	return ns;
}

/* Parse echoes out of `buf`; returns how many frames completed. */
static unsigned
parse(struct kid *k, const uint8_t *buf, size_t n)
{
	unsigned done = 0;
	uint32_t len;
	size_t i = 0, take;

	while (i < n) {
		if (k->need == 0 && k->hdr < 4) {
			k->hb[k->hdr++] = buf[i++];
			if (k->hdr == 4) {
				memcpy(&len, k->hb, 4);
				k->need = len;
			}
		} else {
			take = n - i < k->need ? n - i : k->need;
			k->need -= take;
			i += take;
		}
		if (k->hdr == 4 && k->need == 0) {
			k->hdr = 0;
			done++;
		}
	}
	return done;
}

/* Fork n children over channels of `kind`; each child keeps only its own
 * ends.  Returns 0 or -errno (children started so far are in k[]). */
static int
spawn(int kind, struct kid *k, unsigned n, unsigned *started)
{
	struct bench_chan chi;
	unsigned i, j;
	int rc;

	for (i = 0; i < n; i++) {
		if ((rc = bench_chan_open(kind, &k[i].c, &chi)) < 0)
			return rc;
		if ((k[i].pid = fork()) < 0) {
			rc = -errno;
			bench_chan_close(&k[i].c);
			bench_chan_close(&chi);
			return rc;
		}
		if (k[i].pid == 0) {
			for (j = 0; j <= i; j++)
				bench_chan_close(&k[j].c);
			bench_echo_frames(chi, SIZE, CHUNK);
		}
		bench_chan_close(&chi);
		*started = i + 1;
	}
	return 0;
}

static int
run(int kind, unsigned n, double warm, double dur, struct fig *f)
{
	struct kid *k = calloc(n, sizeof(*k));
	struct epoll_event ev, evs[64];
	uint8_t frame[4 + SIZE], *buf = malloc(CHUNK);
	uint64_t t0, t_mark = 0, now, done = 0, done_mark = 0, cpu_mark = 0;
	uint32_t len = SIZE;
	unsigned started = 0, i, got;
	int ep = -1, rc, m, status;
	ssize_t r;

	memcpy(frame, &len, 4);
	bench_fill(frame + 4, SIZE, len);
	if (k == NULL || buf == NULL || (ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = spawn(kind, k, n, &started)) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		ev.events = EPOLLIN;
		ev.data.u32 = i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, k[i].c.rd, &ev) < 0) {
			rc = -errno;
			goto out;
		}
	}
	for (i = 0; i < OUTSTANDING; i++)
		if (bench_write_all(k[i % n].c.wr, frame, sizeof(frame)) < 0) {
			rc = -EPIPE;
			goto out;
		}
	t0 = bench_now_ns();
	for (;;) {
		m = epoll_wait(ep, evs, 64, 5000);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0) {
			rc = m < 0 ? -errno : -ETIMEDOUT;
			goto out;
		}
		for (int e = 0; e < m; e++) {
			struct kid *c = &k[evs[e].data.u32];

			if ((r = read(c->c.rd, buf, CHUNK)) <= 0) {
				rc = r < 0 && errno == EINTR ? 0 : -EPIPE;
				if (rc < 0)
					goto out;
				continue;
			}
			got = parse(c, buf, (size_t)r);
			done += got;
			while (got-- > 0)
				if (bench_write_all(c->c.wr, frame,
				    sizeof(frame)) < 0) {
					rc = -EPIPE;
					goto out;
				}
		}
		now = bench_now_ns();
		if (t_mark == 0 && now - t0 >= (uint64_t)(warm * 1e9)) {
			t_mark = now;
			done_mark = done;
			cpu_mark = cpu_all(k, n);
		} else if (t_mark != 0 && now - t_mark >= (uint64_t)(dur * 1e9)) {
			f->cpu = (double)(cpu_all(k, n) - cpu_mark) / 1e3 /
			    (double)(done - done_mark);
			f->msgs = (double)(done - done_mark) / bench_secs(t_mark, now);
			f->ok = 1;
			rc = 0;
			goto out;
		}
	}
out:
	/* EOF on every channel ends every child. */
	for (i = 0; i < started; i++)
		bench_chan_close(&k[i].c);
	for (i = 0; i < started; i++)
		waitpid(k[i].pid, &status, 0);
	if (ep >= 0)
		close(ep);
	free(buf);
	free(k);
	return rc;
}

int
main(int argc, char **argv)
{
	static const int kinds[] = { BENCH_SOCK, BENCH_PIPE };
	struct fig f[NCOUNTS][2];
	bool quick = bench_quick(argc, argv);
	double warm = quick ? 0.1 : 0.3, dur = quick ? 0.3 : 1.5;
	char name[96], msg[160];
	int rc, failed = 0;

	bench_ignore_sigpipe();
	memset(f, 0, sizeof(f));
	for (size_t i = 0; i < NCOUNTS; i++) {
		int best = -1;

		for (int c = 0; c < 2; c++) {
			const char *cn = bench_chan_name[kinds[c]];

			if ((rc = run(kinds[c], counts[i], warm, dur,
			    &f[i][c])) < 0) {
				snprintf(msg, sizeof(msg), "raw_scale w%u %s: %s",
				    counts[i], cn, strerror(-rc));
				bench_note(msg);
				failed = 1;
				continue;
			}
			snprintf(name, sizeof(name), "raw_scale_w%u_%s_64_msgs",
			    counts[i], cn);
			bench_metric(name, f[i][c].msgs, "msg/s");
			snprintf(name, sizeof(name),
			    "raw_scale_w%u_%s_64_cpu_per_msg", counts[i], cn);
			bench_metric(name, f[i][c].cpu, "us");
			if (best < 0 || f[i][c].msgs > f[i][best].msgs)
				best = c;
		}
		if (best < 0)
			continue;
		snprintf(name, sizeof(name), "raw_scale_w%u_64_msgs", counts[i]);
		bench_metric(name, f[i][best].msgs, "msg/s");
		snprintf(msg, sizeof(msg), "raw_scale w%u: best channel %s",
		    counts[i], bench_chan_name[kinds[best]]);
		bench_note(msg);
	}
	return failed;
}
