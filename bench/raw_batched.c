/*
 * raw_batched.c - baseline: the limit of a framed byte stream on one
 * channel when both sides batch, as sipc does.
 *
 * The frames, channels and placements of raw_pipelined (4-byte length
 * prefix + payload; socketpair, two pipes, two pipes of 1 MiB; samecpu
 * and crosscpu), but nothing is written a frame at a time:
 *   - the parent's writer thread keeps WINDOW (64) frames in flight and,
 *     each time the window has room, sends as many frames as it has room
 *     for in one write() (one buffer of WINDOW frames, written from its
 *     start);
 *   - the child reads up to CHUNK (256 KiB) at a time and echoes every
 *     complete frame of each read() with one write(); a frame split
 *     across reads waits in its buffer for the rest
 *     (bench_echo_batched() of bench.h);
 *   - the parent's main thread reads echoes CHUNK at a time, checks each
 *     echoed frame's length prefix, counts the frames completed by each
 *     read() and gives the window that many places back at once.
 * Prints, for 64 B and 4 KiB (payload bytes, one direction, 1 MB = 10^6
 * bytes), CPU time of both processes per echoed frame, and the frames
 * per write() of the parent's writer over the measured interval:
 *   metric raw_batched_<S>_<chan>_<place>_msgs <msgs/s> msg/s, _mbps
 *       <MB/s> MB/s, _cpu_per_msg <us> us, _frames_per_write <n> frames
 *   metric raw_batched_<S>_msgs, _mbps, _cpu_per_msg, _frames_per_write
 *       the channel and placement with the most msg/s at that size: the
 *       limit
 * and a note per size naming the channel and placement that won.  An
 * echo whose length prefix is not the size sent ends the program with
 * EPROTO (exit 1 on the socketpair, a note on the others).
 *
 * Channels, placements, the child's start and the report:
 * bench_tput_main() of bench.h, as in raw_pipelined.
 *
 * Threads: parent = main (reader, timing) + one writer thread; the
 * window's room (under its mutex) and the atomics below are the only
 * shared state.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "bench.h"

#define WINDOW 64
#define MAXSZ 4096
#define CHUNK (256 * 1024)

static const size_t sizes[] = { 64, 4096 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct run {
	struct bench_chan c;
	size_t size;
	uint8_t *frames;        /* WINDOW frames back to back */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned room;          /* under mu: frames the window has room for */
	bool stop;              /* under mu */
	atomic_bool writer_done;
	atomic_uint_fast64_t sent;      /* frames written */
	atomic_uint_fast64_t writes;    /* write() calls that wrote them */
};

/* [channel][placement][size] */
static struct bench_tput F[BENCH_NCHAN * BENCH_NPLACE * NSIZES];

static void *
writer_main(void *arg)
{
	struct run *r = arg;
	size_t flen = 4 + r->size;
	unsigned k;

	for (;;) {
		pthread_mutex_lock(&r->mu);
		while (r->room == 0 && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->stop) {
			pthread_mutex_unlock(&r->mu);
			break;
		}
		k = r->room;
		r->room = 0;
		pthread_mutex_unlock(&r->mu);
		if (bench_write_all(r->c.wr, r->frames, k * flen) < 0)
			break;
		atomic_fetch_add(&r->sent, k);
		atomic_fetch_add(&r->writes, 1);
	}
	atomic_store(&r->writer_done, true);
	return NULL;
}

/* Give the writer `k` places back (k = 0: only wake it for stop). */
static void
window_give(struct run *r, unsigned k, bool stop)
{
	pthread_mutex_lock(&r->mu);
	r->room += k;
	if (stop)
		r->stop = true;
	pthread_mutex_unlock(&r->mu);
	pthread_cond_signal(&r->cv);
}

/*
 * Read echoes until the writer has stopped and every sent frame came
 * back.  Counts completed frames per read(); marks the measurement
 * window.  Returns 0, -EPROTO for an echo of the wrong length, -EPIPE.
 */
static int
reader_loop(struct run *r, pid_t child, double warm, double dur,
    struct bench_tput *f)
{
	uint64_t cpu_mark = 0, cpu_end = 0;
	uint64_t t_start = bench_now_ns(), t_mark = 0, t_end = 0, now;
	uint64_t done = 0, done_mark = 0, done_end = 0;
	uint64_t w_mark = 0, w_end = 0, s_mark = 0, s_end = 0;
	size_t need = 0, hdr = 0, take;  /* payload left; prefix bytes seen */
	uint8_t *buf = malloc(CHUNK), hb[4];
	struct pollfd pfd = { .fd = r->c.rd, .events = POLLIN };
	bool inframe = false, stopped = false;
	unsigned k;
	uint32_t len;
	ssize_t n, i;
	int rc = 0;

	if (buf == NULL)
		return -ENOMEM;
	while (!atomic_load(&r->writer_done) || done < atomic_load(&r->sent)) {
		/* After stop the writer may finish between our check and a
		 * read that would then never return: poll briefly instead. */
		if (stopped && poll(&pfd, 1, 10) == 0)
			continue;
		n = read(r->c.rd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -EPIPE;
			break;
		}
		for (i = 0, k = 0; i < n;) {
			if (!inframe) {
				if (hdr == 0 && n - i >= 4) {
					memcpy(&len, buf + i, 4);
					i += 4;
				} else {
					hb[hdr++] = buf[i++];
					if (hdr < 4)
						continue;
					memcpy(&len, hb, 4);
					hdr = 0;
				}
				if (len != r->size) {
					rc = -EPROTO;
					break;
				}
				need = len;
				inframe = true;
			}
			take = (size_t)(n - i) < need ? (size_t)(n - i) : need;
			need -= take;
			i += (ssize_t)take;
			if (need == 0) {
				inframe = false;
				k++;
			}
		}
		if (rc < 0)
			break;
		done += k;
		if (k > 0 && !stopped)
			window_give(r, k, false);
		now = bench_now_ns();
		if (t_mark == 0 && now - t_start >= (uint64_t)(warm * 1e9)) {
			t_mark = now;
			done_mark = done;
			w_mark = atomic_load(&r->writes);
			s_mark = atomic_load(&r->sent);
			cpu_mark = bench_cpu_ns(0) + bench_cpu_ns(child);
		}
		if (t_mark != 0 && t_end == 0 &&
		    now - t_mark >= (uint64_t)(dur * 1e9)) {
			t_end = now;
			done_end = done;
			cpu_end = bench_cpu_ns(0) + bench_cpu_ns(child);
			w_end = atomic_load(&r->writes);
			s_end = atomic_load(&r->sent);
			stopped = true;
			window_give(r, 0, true);
		}
	}
	free(buf);
	if (rc == 0 && t_end == 0)
		rc = -EPIPE;    /* the writer failed before the interval ended */
	if (rc < 0) {
		/* The writer may sleep on the window or on a full channel,
		 * the child on a full channel back: stop the one, end the
		 * other (its end of the channel closed, the writer's write()
		 * fails with EPIPE). */
		window_give(r, 0, true);
		kill(child, SIGKILL);
		return rc;
	}
	f->msgs = (double)(done_end - done_mark) / bench_secs(t_mark, t_end);
	f->mbps = f->msgs * (double)r->size / 1e6;
	f->cpu = (double)(cpu_end - cpu_mark) / 1e3 /
	    (double)(done_end > done_mark ? done_end - done_mark : 1);
	f->per_write = w_end > w_mark ? (double)(s_end - s_mark) /
	    (double)(w_end - w_mark) : 0;
	return 0;
}

static int
measure(struct bench_chan c, pid_t child, size_t size, double dur,
    struct bench_tput *f)
{
	struct run r = { .c = c, .size = size, .room = WINDOW };
	uint32_t len = (uint32_t)size;
	pthread_t th;
	size_t j;
	int rc;

	r.frames = malloc(WINDOW * (4 + size));
	if (r.frames == NULL)
		return -ENOMEM;
	for (j = 0; j < WINDOW; j++) {
		memcpy(r.frames + j * (4 + size), &len, 4);
		bench_fill(r.frames + j * (4 + size) + 4, size,
		    len + (uint32_t)j);
	}
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	atomic_init(&r.writer_done, false);
	atomic_init(&r.sent, 0);
	atomic_init(&r.writes, 0);
	if ((rc = pthread_create(&th, NULL, writer_main, &r)) != 0) {
		free(r.frames);
		return -rc;
	}
	rc = reader_loop(&r, child, 0.2, dur, f);
	pthread_join(th, NULL);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.mu);
	free(r.frames);
	if (rc < 0)
		return rc;
	f->ok = 1;
	return 0;
}

static void
child_main(struct bench_chan chi)
{
	bench_echo_batched(chi, MAXSZ, CHUNK);
}

int
main(int argc, char **argv)
{
	static const struct bench_tput_prog pr = {
		.name = "raw_batched", .sizes = sizes, .nsizes = NSIZES,
		.child = child_main, .measure = measure, .figs = F,
	};

	return bench_tput_main(&pr, argc, argv);
}
