/*
 * raw_pipelined.c - baseline: the physical limit of pipelined transfer.
 *
 * Parent and a forked child joined by a channel: a socketpair(AF_UNIX,
 * SOCK_STREAM), two pipes, or two pipes grown to 1 MiB (F_SETPIPE_SZ).
 * A writer thread in the parent keeps WINDOW (64) requests in flight,
 * issuing one write() per frame (4-byte length prefix + payload in the
 * same buffer); the child reads in large chunks, and echoes every
 * complete frame with one write() per frame; the parent's main thread
 * reads echoes in large chunks and frees a window slot per frame.
 *
 * Every channel runs with parent and child pinned to one CPU (samecpu)
 * and to two (crosscpu; the parent's two threads share its CPU).
 * Prints, for 64 B, 4 KiB, 1 MiB (payload bytes, one direction, 1 MB =
 * 10^6 bytes), CPU time of both processes per echoed frame:
 *   metric raw_pipelined_<S>_<chan>_<place>_msgs <msgs/s> msg/s, _mbps
 *       <MB/s> MB/s, _cpu_per_msg <us> us
 *   metric raw_pipelined_<S>_msgs, _mbps, _cpu_per_msg   the channel and
 *       placement with the most msg/s at that size: the limit
 * and a note per size naming the channel and placement that won.
 *
 * Channels, placements, the child and the report: bench_tput_main() of
 * bench.h, which raw_batched shares.
 *
 * Threads: parent = main (reader, timing) + one writer thread; the window
 * semaphore and the atomics below are the only shared state.
 */
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "bench.h"

#define WINDOW 64
#define MAXSZ 1048576
#define CHUNK (256 * 1024)

static const size_t sizes[] = { 64, 4096, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct run {
	struct bench_chan c;
	pid_t child;
	size_t size;
	uint8_t *frame;         /* prefix + payload, written as one */
	sem_t window;
	atomic_bool stop;
	atomic_bool writer_done;
	atomic_uint_fast64_t sent;
};

/* [channel][placement][size] */
static struct bench_tput F[BENCH_NCHAN * BENCH_NPLACE * NSIZES];

static void *
writer_main(void *arg)
{
	struct run *r = arg;

	for (;;) {
		while (sem_wait(&r->window) < 0 && errno == EINTR)
			;
		if (atomic_load(&r->stop))
			break;
		if (bench_write_all(r->c.wr, r->frame, 4 + r->size) < 0)
			break;
		atomic_fetch_add(&r->sent, 1);
	}
	atomic_store(&r->writer_done, true);
	return NULL;
}

/*
 * Read echoes until the writer has stopped and every sent frame came
 * back.  Counts completed frames; marks the measurement window.
 */
static int
reader_loop(struct run *r, double warm, double dur, uint64_t *ret_n,
    double *ret_secs, double *ret_cpu)
{
	uint64_t cpu_mark = 0, cpu_end = 0;
	uint64_t t_start = bench_now_ns(), t_mark = 0, t_end = 0, now;
	uint64_t done = 0, done_mark = 0, done_end = 0;
	size_t need = 0, hdr = 0;   /* payload bytes left; header bytes seen */
	uint8_t *buf = malloc(CHUNK), hb[4];
	struct pollfd pfd = { .fd = r->c.rd, .events = POLLIN };
	uint32_t len;
	ssize_t n, i;

	if (buf == NULL)
		return -ENOMEM;
	while (!atomic_load(&r->writer_done) || done < atomic_load(&r->sent)) {
		/* After stop the writer may finish between our check and a
		 * read that would then never return: poll briefly instead. */
		if (atomic_load(&r->stop) && poll(&pfd, 1, 10) == 0)
			continue;
		n = read(r->c.rd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return -EPIPE;
		}
		for (i = 0; i < n;) {
			if (need == 0 && hdr < 4) {
				hb[hdr++] = buf[i++];
				if (hdr == 4) {
					memcpy(&len, hb, 4);
					need = len;
				}
			} else {
				size_t take = (size_t)(n - i) < need ?
				    (size_t)(n - i) : need;
				need -= take;
				i += (ssize_t)take;
			}
			if (hdr == 4 && need == 0) {
				hdr = 0;
				done++;
				sem_post(&r->window);
			}
		}
		now = bench_now_ns();
		if (t_mark == 0 && now - t_start >= (uint64_t)(warm * 1e9)) {
			t_mark = now;
			done_mark = done;
			cpu_mark = bench_cpu_ns(0) + bench_cpu_ns(r->child);
		}
		if (t_mark != 0 && t_end == 0 &&
		    now - t_mark >= (uint64_t)(dur * 1e9)) {
			t_end = now;
			done_end = done;
			cpu_end = bench_cpu_ns(0) + bench_cpu_ns(r->child);
			atomic_store(&r->stop, true);
			sem_post(&r->window);
		}
	}
	free(buf);
	*ret_n = done_end - done_mark;
	*ret_secs = bench_secs(t_mark, t_end);
	*ret_cpu = (double)(cpu_end - cpu_mark) / 1e3 /
	    (double)(*ret_n ? *ret_n : 1);
	return 0;
}

static int
measure(struct bench_chan c, pid_t child, size_t size, double dur,
    struct bench_tput *f)
{
	struct run r = { .c = c, .child = child, .size = size };
	double secs, warm = size >= MAXSZ ? 0.3 : 0.2;
	pthread_t th;
	uint64_t n;
	uint32_t len = (uint32_t)size;
	int rc;

	r.frame = malloc(4 + size);
	if (r.frame == NULL)
		return -ENOMEM;
	memcpy(r.frame, &len, 4);
	bench_fill(r.frame + 4, size, len);
	sem_init(&r.window, 0, WINDOW);
	atomic_init(&r.stop, false);
	atomic_init(&r.writer_done, false);
	atomic_init(&r.sent, 0);
	if ((rc = pthread_create(&th, NULL, writer_main, &r)) != 0) {
		free(r.frame);
		return -rc;
	}
	rc = reader_loop(&r, warm, dur, &n, &secs, &f->cpu);
	pthread_join(th, NULL);
	sem_destroy(&r.window);
	free(r.frame);
	if (rc < 0)
		return rc;
	f->msgs = (double)n / secs;
	f->mbps = (double)n * (double)size / secs / 1e6;
	f->ok = 1;
	return 0;
}

static void
child_main(struct bench_chan chi)
{
	bench_echo_frames(chi, MAXSZ, CHUNK);
}

int
main(int argc, char **argv)
{
	static const struct bench_tput_prog pr = {
		.name = "raw_pipelined", .sizes = sizes, .nsizes = NSIZES,
		.child = child_main, .measure = measure, .figs = F,
	};

	return bench_tput_main(&pr, argc, argv);
}
