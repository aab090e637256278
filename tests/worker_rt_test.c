/*
 * worker_rt_test.c - tests for src/worker/runtime.c.  The runtime runs in a
 * real child process (forked, or a fixture from fixtures/ started with
 * posix_spawn) on one end of a socket pair placed at descriptor 3; the
 * test plays the supervisor with the frame codec.  Single-threaded.
 * Most tests read start evidence as ACCEPT frames (the runtime without
 * a start counter); the start_counter tests read the counter.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/wire.h"
#include "sipc.h"
#include "sipc_worker.h"
#include "testlib.h"
#include "worker/worker.h"

#define DEADLINE_MS 20000

/* Child exit statuses chosen by child_main() below. */
enum { X_OPENFAIL = 10, X_PROTOCOL = 9, X_EPIPE = 32, X_OTHER = 1,
	X_DIED = 42 };

extern char **environ;

struct peer {
	int fd;
	pid_t pid;
	struct sipc_decoder dec;
	uint8_t buf[65536];
	size_t off, len;
};

/* ------------------------------------------------------- child side */

static uint64_t deferred_id;
static bool deferred;

/*
 * Lengths near SIZE_MAX and UINT32_MAX handed to the reply calls: each
 * must be refused with SIPC_E_TOOBIG before any byte is read (the buffer
 * is one byte long).  An error frame adds a 4-byte code to the message,
 * so SIZE_MAX - 3 is where an unchecked sum wraps to 0.  Replies "ok",
 * or "bad N" for the first case that was not refused.
 */
static void
huge_lengths(sipc_worker *w, uint64_t id)
{
	static const size_t lens[] = { SIZE_MAX, SIZE_MAX - 3, SIZE_MAX - 2,
	    SIZE_MAX - 27, (size_t)UINT32_MAX, (size_t)UINT32_MAX - 3,
	    (size_t)UINT32_MAX - 23, (size_t)SIPC_FRAME_MAX_PAYLOAD + 1 };
	char msg[32];
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		if (sipc_worker_error(w, id, 1, "m", lens[i]) != SIPC_E_TOOBIG ||
		    sipc_worker_reply(w, id, "m", lens[i]) != SIPC_E_TOOBIG)
			break;
	}
	/* the code plus a message one byte short of the maximum: one over */
	if (i == sizeof(lens) / sizeof(lens[0]) && sipc_worker_error(w, id, 1,
	    "m", (size_t)SIPC_FRAME_MAX_PAYLOAD - 3) != SIPC_E_TOOBIG)
		i = 99;
	if (i == sizeof(lens) / sizeof(lens[0]))
		snprintf(msg, sizeof(msg), "ok");
	else
		snprintf(msg, sizeof(msg), "bad %zu", i);
	sipc_worker_reply(w, id, msg, strlen(msg));
}

static void
child_handler(sipc_worker *w, uint64_t id, const uint8_t *p, size_t len,
    void *arg)
{
	int64_t end = tl_now_ms() + DEADLINE_MS;
	char c;

	if (len == 3 && memcmp(p, "err", 3) == 0) {
		sipc_worker_error(w, id, 7, "bad", 3);
	} else if (len == 3 && memcmp(p, "die", 3) == 0) {
		/* A crash inside the handler: nothing buffered survives. */
		_exit(X_DIED);
	} else if (len == 3 && memcmp(p, "nap", 3) == 0) {
		/* 20 ms of handler time, more than the default reply hold */
		usleep(20000);
		sipc_worker_reply(w, id, p, len);
	} else if (len == 4 && memcmp(p, "hold", 4) == 0) {
		/* reply only if cancelled */
	} else if (len == 7 && memcmp(p, "hugelen", 7) == 0) {
		huge_lengths(w, id);
	} else if (len == 5 && memcmp(p, "defer", 5) == 0) {
		deferred = true;
		deferred_id = id;
	} else if (len == 9 && memcmp(p, "waitclose", 9) == 0) {
		/* Wait for the supervisor to hang up, then try to answer. */
		while (recv(sipc_worker_fd(w), &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0 &&
		    tl_now_ms() < end)
			usleep(1000);
		sipc_worker_reply(w, id, "late", 4);
		_exit(sipc_worker_flush(w) == -EPIPE ? X_EPIPE : X_OTHER);
	} else {
		sipc_worker_reply(w, id, p, len);
	}
}

static void
child_cancel(sipc_worker *w, uint64_t id, void *arg)
{
	sipc_worker_reply(w, id, "cancelled", 9);
}

static void
child_idle(sipc_worker *w, void *arg)
{
	if (deferred) {
		deferred = false;
		sipc_worker_reply(w, deferred_id, "deferred", 8);
	}
}

/* TEST_DENY_SENDMSG: sendmsg() fails with EPERM in this process (a
 * seccomp filter), as a policy refusing descriptors would make it. */
static void
deny_sendmsg(void)
{
#if defined(__x86_64__)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		_exit(X_OTHER);
#else
	_exit(X_OTHER);
#endif
}

static void __attribute__((noreturn))
child_main(int fd, const char *const *env)
{
	sipc_worker *w;
	int r;

	if (dup2(fd, 3) < 0)
		_exit(X_OTHER);
	if (fd != 3)
		close(fd);
	setenv("SIPC_FD", "3", 1);
	for (; env != NULL && *env != NULL; env += 2)
		setenv(env[0], env[1], 1);
	sipc__worker_start_counter(getenv("TEST_START_COUNTER") != NULL);
	if (getenv("TEST_DENY_SENDMSG") != NULL)
		deny_sendmsg();
	if (sipc_worker_open(&w) < 0)
		_exit(X_OPENFAIL);
	sipc_worker_set_cancel(w, child_cancel);
	sipc_worker_set_idle(w, child_idle);
	if (getenv("TEST_REPLY_HOLD_US") != NULL)
		sipc_worker_set_reply_hold(w,
		    (unsigned)atoi(getenv("TEST_REPLY_HOLD_US")));
	r = sipc_worker_run(w, child_handler, NULL);
	sipc_worker_close(w);
	_exit(r == 0 ? 0 : r == SIPC_E_PROTOCOL ? X_PROTOCOL :
	    r == -EPIPE ? X_EPIPE : X_OTHER);
}

/* ------------------------------------------------------ test side */

static void
peer_init(struct peer *p, int fd, pid_t pid)
{
	p->fd = fd;
	p->pid = pid;
	p->off = p->len = 0;
	sipc__decoder_init(&p->dec, SIPC_FRAME_MAX_PAYLOAD);
}

/* Socket pair; `pre` (if any) is written before the child runs, so the
 * child's first read sees all of it at once. */
static void
start_fork(struct peer *p, const char *const *env, const void *pre,
    size_t prelen)
{
	int sv[2];
	pid_t pid;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sv) == 0);
	if (prelen > 0)
		CU_ASSERT_FATAL(write(sv[0], pre, prelen) == (ssize_t)prelen);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		child_main(sv[1], env);
	}
	close(sv[1]);
	peer_init(p, sv[0], pid);
}

static void
start_fixture(struct peer *p, char *const argv[], const char *extra_env)
{
	posix_spawn_file_actions_t fa;
	char *envp[256];
	int sv[2], n = 0;
	pid_t pid;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sv) == 0);
	for (char **e = environ; *e != NULL && n < 250; e++)
		if (strncmp(*e, "SIPC_", 5) != 0)
			envp[n++] = *e;
	envp[n++] = "SIPC_FD=3";
	envp[n++] = "SIPC_FX_ACCEPT=frames";   /* fixtures/fixture.h */
	if (extra_env != NULL)
		envp[n++] = (char *)extra_env;
	envp[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	CU_ASSERT_FATAL(posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) == 0);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	peer_init(p, sv[0], pid);
}

/* Next frame, waiting up to DEADLINE_MS.  Returns 0, -ETIMEDOUT, 1 at
 * EOF, or a decode error. */
static int
recv_frame(struct peer *p, struct sipc_frame *f)
{
	int64_t end = tl_now_ms() + DEADLINE_MS;
	struct pollfd pfd = { p->fd, POLLIN, 0 };
	bool done;
	ssize_t n;
	long used;

	for (;;) {
		while (p->off < p->len) {
			used = sipc__decoder_feed(&p->dec, p->buf + p->off,
			    p->len - p->off, f, &done);
			if (used < 0)
				return (int)used;
			p->off += (size_t)used;
			if (done)
				return 0;
		}
		if (poll(&pfd, 1, (int)(end - tl_now_ms())) <= 0)
			return -ETIMEDOUT;
		n = read(p->fd, p->buf, sizeof(p->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		p->off = 0;
		p->len = (size_t)n;
	}
}

static size_t
put_frame(uint8_t *out, uint8_t type, uint64_t id, const void *pl,
    uint32_t len)
{
	struct sipc_frame_hdr h = { .type = type, .id = id, .len = len };

	sipc__frame_encode_hdr(out, &h);
	if (len > 0)
		memcpy(out + SIPC_FRAME_HDR_LEN, pl, len);
	return SIPC_FRAME_HDR_LEN + len;
}

static void
send_frame(struct peer *p, uint8_t type, uint64_t id, const void *pl,
    uint32_t len)
{
	uint8_t *b = malloc(SIPC_FRAME_HDR_LEN + (size_t)len);
	size_t n = put_frame(b, type, id, pl, len), off = 0;
	ssize_t w;

	while (off < n) {
		w = write(p->fd, b + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		CU_ASSERT_FATAL(w > 0);
		off += (size_t)w;
	}
	free(b);
}

/* Expect a frame of `type` for `id`; returns its payload (caller frees). */
static uint8_t *
expect(struct peer *p, uint8_t type, uint64_t id, uint32_t *ret_len)
{
	struct sipc_frame f = { 0 };

	CU_ASSERT_EQUAL_FATAL(recv_frame(p, &f), 0);
	CU_ASSERT_EQUAL(f.hdr.type, type);
	CU_ASSERT_EQUAL(f.hdr.id, id);
	if (ret_len != NULL)
		*ret_len = f.hdr.len;
	return f.payload;
}

static void
expect_hello(struct peer *p)
{
	struct sipc_hello h = { 0 };
	uint32_t len;
	uint8_t *pl = expect(p, SIPC_FT_HELLO, 0, &len);

	CU_ASSERT_EQUAL(sipc__hello_decode(pl, len, &h), 0);
	CU_ASSERT_EQUAL(h.proto_version, SIPC_PROTOCOL_VERSION);
	CU_ASSERT_EQUAL(h.pid, (uint32_t)p->pid);
	CU_ASSERT_EQUAL(h.flags, SIPC_HELLO_F_ACCEPTS | SIPC_HELLO_F_DEADLINES |
	    SIPC_HELLO_F_FDS);
	CU_ASSERT_EQUAL(h.max_inflight, 0);
	free(pl);
}

/* Hang up (the runtime sees EOF), then wait for the child to exit.
 * Returns its wait status, or -1 if it had to be killed. */
static int
finish(struct peer *p)
{
	int64_t end = tl_now_ms() + DEADLINE_MS;
	int st = -1;
	pid_t r;

	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && tl_now_ms() < end)
		usleep(2000);
	if (r == 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &st, 0);
		st = -1;
	}
	sipc__decoder_free(&p->dec);
	return st;
}

static bool
exited_with(int st, int code)
{
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == code;
}

/* -------------------------------------------------------------- tests */

/* rules: H1 */
static void
test_worker_rt_hello(void)
{
	char ppid[16];
	const char *env[] = { "SIPC_PARENT_PID", ppid, NULL };
	struct peer p;

	snprintf(ppid, sizeof(ppid), "%d", (int)getpid());
	start_fork(&p, env, NULL, 0);
	expect_hello(&p);
	CU_ASSERT(exited_with(finish(&p), 0)); /* our close is EOF: exit 0 */
}

/* Asleep (state S) with `want` bytes waiting on our end. */
struct idle_want {
	struct peer *p;
	int want;
};

static bool
child_asleep_with_bytes(void *arg)
{
	struct idle_want *w = arg;
	char path[64], buf[512], *q = NULL;
	int queued = 0;
	FILE *f;

	if (ioctl(w->p->fd, FIONREAD, &queued) < 0 || queued < w->want)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)w->p->pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) != NULL)
		q = strrchr(buf, ')');
	fclose(f);
	return q != NULL && q[1] == ' ' && q[2] == 'S';
}

/* The system call pid is blocked in (/proc/PID/syscall), -1 if none
 * can be read. */
static long
blocked_syscall(pid_t pid)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr;
}

static bool
is_poll(long nr)
{
#ifdef SYS_poll
	if (nr == SYS_poll)
		return true;
#endif
	return nr == SYS_ppoll;
}

/*
 * A runtime waiting for its next request sleeps through the supervisor's
 * reading of the replies it wrote.  A thread asleep in a stream socket's
 * read() is also woken whenever the peer consumes what it wrote (the
 * socket's "room to write" wake-up); the runtime waits for input in
 * poll(), which filters that out.  Each round: a request; its ACCEPT and
 * REPLY queued on our end and the child asleep again, in poll(); then we
 * read them.  How often it switched is printed, not bounded (blocked in
 * read(), the child took 129-151 switches for 100 rounds here, in poll()
 * 100-101: the peer's read woke it in about a third of the rounds).
 */
static void
test_worker_rt_sleeps_through_reply_reads(void)
{
	const int rounds = 100;
	struct peer p;
	struct idle_want w = { &p, 0 };
	long v0, v1, nr;
	int i, in_poll = 0;
	uint8_t *pl;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	CU_ASSERT_FATAL(tl_wait_until(child_asleep_with_bytes, &w,
	    DEADLINE_MS));
	v0 = tl_proc_switches(p.pid);
	CU_ASSERT_FATAL(v0 >= 0);
	/* ACCEPT (header only) and REPLY (header and one byte) */
	w.want = 2 * SIPC_FRAME_HDR_LEN + 1;
	for (i = 1; i <= rounds; i++) {
		send_frame(&p, SIPC_FT_REQUEST, (uint64_t)i, "x", 1);
		CU_ASSERT_FATAL(tl_wait_until(child_asleep_with_bytes, &w,
		    DEADLINE_MS));
		nr = blocked_syscall(p.pid);
		in_poll += is_poll(nr);
		if (!is_poll(nr) && in_poll + 1 == i)
			fprintf(stderr, "worker_rt: asleep in system call %ld, "
			    "round %d\n", nr, i);
		free(expect(&p, SIPC_FT_ACCEPT, (uint64_t)i, NULL));
		pl = expect(&p, SIPC_FT_REPLY, (uint64_t)i, NULL);
		CU_ASSERT(pl != NULL && pl[0] == 'x');
		free(pl);
	}
	w.want = 0;
	CU_ASSERT(tl_wait_until(child_asleep_with_bytes, &w, DEADLINE_MS));
	v1 = tl_proc_switches(p.pid);
	TL_EQ(in_poll, rounds);
	/* Asleep before each request: at least one switch a round. */
	CU_ASSERT(v1 - v0 >= rounds);
	fprintf(stderr, "worker_rt: %ld voluntary switches in %d rounds\n",
	    v1 - v0, rounds);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/*
 * Requests that arrive in one read: each is ACCEPTed only when its
 * handler is about to run, so on the wire ACCEPT(N+1) follows REPLY(N).
 * Request 3 keeps its id without replying (a deferred reply): it started
 * at its own ACCEPT and the next one is accepted right behind it.
 */
/* rules: A1 A8 */
static void
test_worker_rt_accepts_each_right_before_its_handler(void)
{
	uint8_t pre[5 * 64], *pl;
	size_t n = 0;
	uint32_t len;
	char msg[16];
	struct peer p;

	for (int i = 1; i <= 5; i++) {
		snprintf(msg, sizeof(msg), "msg%d", i);
		n += put_frame(pre + n, SIPC_FT_REQUEST, (uint64_t)i,
		    i == 3 ? "hold" : msg, 4);
	}
	start_fork(&p, NULL, pre, n);
	expect_hello(&p);
	for (int i = 1; i <= 5; i++) {
		free(expect(&p, SIPC_FT_ACCEPT, (uint64_t)i, NULL));
		if (i == 3)
			continue;
		snprintf(msg, sizeof(msg), "msg%d", i);
		pl = expect(&p, SIPC_FT_REPLY, (uint64_t)i, &len);
		CU_ASSERT(len == 4 && memcmp(pl, msg, 4) == 0);
		free(pl);
	}
	send_frame(&p, SIPC_FT_SHUTDOWN, 0, NULL, 0);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* Requests 1..n, "msgI" each, but "die" at k, in pre[]: their bytes. */
static size_t
crash_batch(uint8_t *pre, int n, int k)
{
	char msg[16];
	size_t len = 0;

	for (int i = 1; i <= n; i++) {
		snprintf(msg, sizeof(msg), "msg%d", i);
		len += i == k ? put_frame(pre + len, SIPC_FT_REQUEST,
		    (uint64_t)i, "die", 3) : put_frame(pre + len,
		    SIPC_FT_REQUEST, (uint64_t)i, msg, 4);
	}
	return len;
}

/*
 * A handler in the middle of one read batch crashes the worker: what
 * reached the channel is the ACCEPT and REPLY of every earlier request,
 * the ACCEPT of the crashing one, and nothing at all for the requests
 * behind it (provably never started).
 */
/* rules: A1 */
static void
test_worker_rt_crash_in_batch_accepts_only_started(void)
{
	enum { N = 8, K = 4 };
	uint8_t pre[N * 64], *pl;
	struct sipc_frame f;
	struct peer p;
	uint32_t len;
	char msg[16];
	size_t n = crash_batch(pre, N, K);

	start_fork(&p, NULL, pre, n);
	expect_hello(&p);
	for (int i = 1; i < K; i++) {
		free(expect(&p, SIPC_FT_ACCEPT, (uint64_t)i, NULL));
		snprintf(msg, sizeof(msg), "msg%d", i);
		pl = expect(&p, SIPC_FT_REPLY, (uint64_t)i, &len);
		CU_ASSERT(len == 4 && memcmp(pl, msg, 4) == 0);
		free(pl);
	}
	free(expect(&p, SIPC_FT_ACCEPT, K, NULL));
	/* Then end of stream: no frame names a request behind K. */
	memset(&f, 0, sizeof(f));
	CU_ASSERT_EQUAL(recv_frame(&p, &f), 1);
	if (f.payload != NULL)
		CU_FAIL("a frame after the crashing request's ACCEPT");
	free(f.payload);
	CU_ASSERT(exited_with(finish(&p), X_DIED));
}

/*
 * The HELLO of a runtime with a start counter: flag START_COUNTER (and
 * not ACCEPTS), and on its bytes one descriptor, taken here with
 * recvmsg() as the supervisor's reader does.  Returns the counter
 * mapped read-only, checked as CONTRACT A5 describes it: a memfd of 8
 * bytes sealed against shrinking, growing and resealing.
 */
static const _Atomic uint64_t *
expect_counter_hello(struct peer *p)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { p->buf, sizeof(p->buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct pollfd pfd = { p->fd, POLLIN, 0 };
	struct sipc_hello h = { 0 };
	struct cmsghdr *c;
	struct stat st;
	uint8_t *pl;
	uint32_t len;
	ssize_t n;
	void *m;
	int fd = -1;

	CU_ASSERT_FATAL(poll(&pfd, 1, DEADLINE_MS) == 1);
	n = recvmsg(p->fd, &mh, MSG_CMSG_CLOEXEC);
	CU_ASSERT_FATAL(n >= SIPC_FRAME_HDR_LEN + SIPC_HELLO_LEN);
	p->off = 0;
	p->len = (size_t)n;
	c = CMSG_FIRSTHDR(&mh);
	CU_ASSERT_FATAL(c != NULL && c->cmsg_level == SOL_SOCKET &&
	    c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)));
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	pl = expect(p, SIPC_FT_HELLO, 0, &len);
	CU_ASSERT_EQUAL(sipc__hello_decode(pl, len, &h), 0);
	CU_ASSERT_EQUAL(h.flags, SIPC_HELLO_F_START_COUNTER |
	    SIPC_HELLO_F_DEADLINES | SIPC_HELLO_F_FDS);
	free(pl);
	CU_ASSERT_EQUAL(fcntl(fd, F_GET_SEALS),
	    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	CU_ASSERT_FATAL(fstat(fd, &st) == 0);
	CU_ASSERT_EQUAL(st.st_size, SIPC_START_COUNTER_LEN);
	m = mmap(NULL, SIPC_START_COUNTER_LEN, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CU_ASSERT_FATAL(m != MAP_FAILED);
	return m;
}

/*
 * With a start counter, no ACCEPT frame at all: each request is counted
 * before its handler runs, so after N replies the counter says N, and
 * the worker keeps no descriptor of the memfd (only its mapping).
 */
/* rules: A6 */
static void
test_worker_rt_start_counter_counts_each_request(void)
{
	const char *env[] = { "TEST_START_COUNTER", "1", NULL };
	const _Atomic uint64_t *ctr;
	char msg[16];
	struct peer p;
	uint8_t *pl;
	uint32_t len;

	start_fork(&p, env, NULL, 0);
	ctr = expect_counter_hello(&p);
	CU_ASSERT_EQUAL(atomic_load(ctr), 0);
	for (int i = 1; i <= 5; i++) {
		snprintf(msg, sizeof(msg), "msg%d", i);
		send_frame(&p, SIPC_FT_REQUEST, (uint64_t)i, msg, 4);
		pl = expect(&p, SIPC_FT_REPLY, (uint64_t)i, &len);
		CU_ASSERT(len == 4 && memcmp(pl, msg, 4) == 0);
		free(pl);
		CU_ASSERT_EQUAL(atomic_load(ctr), (uint64_t)i);
	}
	CU_ASSERT_EQUAL(tl_count_fds_to(p.pid, "memfd:sipc-start"), 0);
	CU_ASSERT(exited_with(finish(&p), 0));
	CU_ASSERT_EQUAL(atomic_load(ctr), 5);  /* outlives the worker */
	munmap((void *)(uintptr_t)ctr, SIPC_START_COUNTER_LEN);
}

/*
 * The crash of test_worker_rt_crash_in_batch_accepts_only_started with
 * a start counter and the runtime's default (no reply hold): the
 * replies of every earlier request reached the channel, no frame names
 * the crashing request or any behind it, and the counter, read after
 * the worker is dead, names exactly K.
 */
static void
test_worker_rt_start_counter_crash_in_batch(void)
{
	enum { N = 8, K = 4 };
	const char *env[] = { "TEST_START_COUNTER", "1", NULL };
	const _Atomic uint64_t *ctr;
	uint8_t pre[N * 64], *pl;
	struct sipc_frame f;
	struct peer p;
	uint32_t len;
	char msg[16];
	size_t n = crash_batch(pre, N, K);

	start_fork(&p, env, pre, n);
	ctr = expect_counter_hello(&p);
	for (int i = 1; i < K; i++) {
		snprintf(msg, sizeof(msg), "msg%d", i);
		pl = expect(&p, SIPC_FT_REPLY, (uint64_t)i, &len);
		CU_ASSERT(len == 4 && memcmp(pl, msg, 4) == 0);
		free(pl);
	}
	memset(&f, 0, sizeof(f));
	CU_ASSERT_EQUAL(recv_frame(&p, &f), 1);
	if (f.payload != NULL)
		CU_FAIL("a frame after the last reply before the crash");
	free(f.payload);
	CU_ASSERT(exited_with(finish(&p), X_DIED));
	CU_ASSERT_EQUAL(atomic_load(ctr), K);
	munmap((void *)(uintptr_t)ctr, SIPC_START_COUNTER_LEN);
}

/* The counter's worker with `env`, requests 1..N in one read, "die" at
 * K: expect the replies of requests 1..`replied` in order (payloads in
 * pay[]), then at most the replies of the next `maybe` requests (a
 * cheap reply's hold may lapse before the crash on a loaded machine),
 * then end of stream, and the counter at exactly K. */
static void
crash_expect(const char *const *env, const char *const *pay, int n, int k,
    int replied, int maybe)
{
	const _Atomic uint64_t *ctr;
	uint8_t pre[16 * 64], *pl;
	struct sipc_frame f;
	struct peer p;
	uint32_t len;
	size_t off = 0;

	for (int i = 1; i <= n; i++)
		off += put_frame(pre + off, SIPC_FT_REQUEST, (uint64_t)i,
		    i == k ? "die" : pay[i - 1], i == k ? 3 :
		    strlen(pay[i - 1]));
	start_fork(&p, env, pre, off);
	ctr = expect_counter_hello(&p);
	for (int i = 1; i <= replied; i++) {
		pl = expect(&p, SIPC_FT_REPLY, (uint64_t)i, &len);
		CU_ASSERT(len == strlen(pay[i - 1]) &&
		    memcmp(pl, pay[i - 1], len) == 0);
		free(pl);
	}
	for (int i = replied + 1;; i++) {
		memset(&f, 0, sizeof(f));
		int r = recv_frame(&p, &f);

		if (r == 0 && i <= replied + maybe &&
		    f.hdr.type == SIPC_FT_REPLY && f.hdr.id == (uint64_t)i) {
			free(f.payload);
			continue;
		}
		CU_ASSERT_EQUAL(r, 1);
		if (f.payload != NULL)
			CU_FAIL("a reply the hold should have kept, or one "
			    "behind the crash");
		free(f.payload);
		break;
	}
	CU_ASSERT(exited_with(finish(&p), X_DIED));
	CU_ASSERT_EQUAL(atomic_load(ctr), k);
	munmap((void *)(uintptr_t)ctr, SIPC_START_COUNTER_LEN);
}

/* A hold of a second: three cheap handlers' replies are still buffered
 * when the fourth handler crashes, and die with the worker; the counter
 * still names exactly the four that started (CONTRACT A2, A5). */
static void
test_worker_rt_replies_held_die_with_the_worker(void)
{
	const char *env[] = { "TEST_START_COUNTER", "1",
	    "TEST_REPLY_HOLD_US", "1000000", NULL };
	const char *pay[] = { "msg1", "msg2", "msg3", "", "msg5", "msg6" };

	crash_expect(env, pay, 6, 4, 0, 0);
}

/* A hold of 1000 us: a handler that ran 20 ms has its reply written
 * before the next handler starts, so the crash in that one takes back
 * only the cheap reply given after it. */
static void
test_worker_rt_long_handler_reply_not_held(void)
{
	const char *env[] = { "TEST_START_COUNTER", "1",
	    "TEST_REPLY_HOLD_US", "1000", NULL };
	const char *pay[] = { "msg1", "nap", "msg3", "", "msg5" };

	/* 1 cheap (held), 2 naps 20 ms: 1 and 2 go out before 3 starts;
	 * 3 is cheap and held when 4 crashes, unless the machine was slow
	 * enough for its 1 ms hold to lapse first (a scheduling matter: the
	 * mechanism is that 2 is not held, and 5 never runs). */
	crash_expect(env, pay, 5, 4, 2, 1);
}

/*
 * A counter whose descriptor cannot be sent (sendmsg() refused, as a
 * policy on SCM_RIGHTS would) is dropped before anything went out: the
 * HELLO announces ACCEPT frames instead, and the runtime sends them.
 */
static void
test_worker_rt_start_counter_refused_falls_back_to_accept(void)
{
	const char *env[] = { "TEST_START_COUNTER", "1", "TEST_DENY_SENDMSG",
	    "1", NULL };
	struct peer p;
	uint8_t *pl;
	uint32_t len;

#if !defined(__x86_64__)
	CU_PASS("the seccomp filter of this test is written for x86_64");
	return;
#endif
	start_fork(&p, env, NULL, 0);
	expect_hello(&p);             /* flags: SIPC_HELLO_F_ACCEPTS */
	send_frame(&p, SIPC_FT_REQUEST, 3, "abc", 3);
	free(expect(&p, SIPC_FT_ACCEPT, 3, NULL));
	pl = expect(&p, SIPC_FT_REPLY, 3, &len);
	CU_ASSERT(len == 3 && memcmp(pl, "abc", 3) == 0);
	free(pl);
	CU_ASSERT_EQUAL(tl_count_fds_to(p.pid, "memfd:sipc-start"), 0);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* Interleaved traffic: for every id, ACCEPT strictly before REPLY. */
/* rules: A1 */
static void
test_worker_rt_accept_precedes_reply(void)
{
	enum { N = 200 };
	uint8_t state[N + 1] = { 0 }; /* 0 none, 1 accepted, 2 replied */
	struct sipc_frame f;
	struct peer p;
	int replies = 0;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	for (uint64_t id = 1; id <= N; id++)
		send_frame(&p, SIPC_FT_REQUEST, id, &id, sizeof(id));
	while (replies < N) {
		CU_ASSERT_EQUAL_FATAL(recv_frame(&p, &f), 0);
		CU_ASSERT_FATAL(f.hdr.id >= 1 && f.hdr.id <= N);
		if (f.hdr.type == SIPC_FT_ACCEPT) {
			CU_ASSERT_EQUAL(state[f.hdr.id], 0);
			state[f.hdr.id] = 1;
		} else {
			CU_ASSERT_EQUAL(f.hdr.type, SIPC_FT_REPLY);
			CU_ASSERT_EQUAL(state[f.hdr.id], 1);
			CU_ASSERT(f.hdr.len == 8 &&
			    memcmp(f.payload, &f.hdr.id, 8) == 0);
			state[f.hdr.id] = 2;
			replies++;
		}
		free(f.payload);
	}
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* rules: F7 */
static void
test_worker_rt_error_frame_encoding(void)
{
	struct peer p;
	uint32_t len;
	uint8_t *pl;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 77, "err", 3);
	free(expect(&p, SIPC_FT_ACCEPT, 77, NULL));
	pl = expect(&p, SIPC_FT_ERROR, 77, &len);
	CU_ASSERT_FATAL(len == 7);
	CU_ASSERT(pl[0] == 7 && pl[1] == 0 && pl[2] == 0 && pl[3] == 0);
	CU_ASSERT(memcmp(pl + 4, "bad", 3) == 0);
	free(pl);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* SHUTDOWN: what came before it is served and flushed, nothing after it
 * is accepted, and the worker exits 0. */
/* rules: D9 */
static void
test_worker_rt_shutdown_exits_0(void)
{
	uint8_t pre[3 * 64];
	size_t n = 0;
	struct sipc_frame f;
	struct peer p;

	n += put_frame(pre + n, SIPC_FT_REQUEST, 1, "one", 3);
	n += put_frame(pre + n, SIPC_FT_SHUTDOWN, 0, NULL, 0);
	n += put_frame(pre + n, SIPC_FT_REQUEST, 2, "two", 3);
	start_fork(&p, NULL, pre, n);
	expect_hello(&p);
	free(expect(&p, SIPC_FT_ACCEPT, 1, NULL));
	free(expect(&p, SIPC_FT_REPLY, 1, NULL));
	CU_ASSERT_EQUAL(recv_frame(&p, &f), 1); /* EOF: no ACCEPT for 2 */
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* rules: D9 */
static void
test_worker_rt_eof_exits_0(void)
{
	struct sipc_frame f;
	struct peer p;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 5, "x", 1);
	CU_ASSERT_EQUAL_FATAL(shutdown(p.fd, SHUT_WR), 0);
	free(expect(&p, SIPC_FT_ACCEPT, 5, NULL));
	free(expect(&p, SIPC_FT_REPLY, 5, NULL));
	CU_ASSERT_EQUAL(recv_frame(&p, &f), 1);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* rules: F9 */
static void
test_worker_rt_garbage_is_protocol_error(void)
{
	static const char junk[] = "hello from a stray printf\n";
	struct peer p;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	CU_ASSERT(write(p.fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
	CU_ASSERT(exited_with(finish(&p), X_PROTOCOL));
}

/* A frame type only a worker may send is a protocol error too. */
/* rules: F9 */
static void
test_worker_rt_wrong_direction_type_is_protocol_error(void)
{
	struct peer p;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REPLY, 3, "r", 1);
	CU_ASSERT(exited_with(finish(&p), X_PROTOCOL));
}

/* SIPC_MAX_PAYLOAD lowers the limit: exactly the limit is served, one
 * byte more is a protocol error (and is never allocated). */
/* rules: F10 */
static void
test_worker_rt_max_payload_from_env(void)
{
	const char *env[] = { "SIPC_MAX_PAYLOAD", "1000", NULL };
	uint8_t *big = calloc(1, 1001), hdr[SIPC_FRAME_HDR_LEN];
	struct sipc_frame_hdr h = { .type = SIPC_FT_REQUEST, .id = 2,
		.len = 1001 };
	struct peer p;
	uint32_t len;

	start_fork(&p, env, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 1, big, 1000);
	free(expect(&p, SIPC_FT_ACCEPT, 1, NULL));
	free(expect(&p, SIPC_FT_REPLY, 1, &len));
	CU_ASSERT_EQUAL(len, 1000);
	sipc__frame_encode_hdr(hdr, &h);
	CU_ASSERT(write(p.fd, hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr));
	CU_ASSERT(exited_with(finish(&p), X_PROTOCOL));
	free(big);
}

/* Reply lengths near SIZE_MAX / UINT32_MAX are refused, never wrapped
 * into a short frame; the worker stays healthy and answers. */
/* rules: F4 */
static void
test_worker_rt_absurd_reply_lengths_refused(void)
{
	struct peer p;
	uint32_t len = 0;
	uint8_t *pl;
	bool ok;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 5, "hugelen", 7);
	free(expect(&p, SIPC_FT_ACCEPT, 5, NULL));
	pl = expect(&p, SIPC_FT_REPLY, 5, &len);
	ok = len == 2 && pl != NULL && memcmp(pl, "ok", 2) == 0;
	CU_ASSERT(ok);
	if (!ok && pl != NULL)
		fprintf(stderr, "hugelen: %.*s\n", (int)len, (char *)pl);
	free(pl);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* Crafted request headers with absurd lengths (valid checksum): each is
 * a protocol error at the header, before any payload is awaited or
 * allocated (a runtime that believed one would wait for 4 GiB, and the
 * test would time out instead). */
/* rules: F4 */
static void
test_worker_rt_absurd_request_lengths_refused(void)
{
	static const uint32_t lens[] = { UINT32_MAX, UINT32_MAX - 23,
	    UINT32_MAX - 24, 0x80000000u, SIPC_FRAME_MAX_PAYLOAD + 1 };
	uint8_t hdr[SIPC_FRAME_HDR_LEN];
	struct sipc_frame_hdr h = { .type = SIPC_FT_REQUEST, .id = 1 };
	struct peer p;
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		h.len = lens[i];
		sipc__frame_encode_hdr(hdr, &h);
		start_fork(&p, NULL, hdr, sizeof(hdr));
		expect_hello(&p);
		CU_ASSERT(exited_with(finish(&p), X_PROTOCOL));
	}
}

/* Requests and replies far larger than the 64 KiB read and flush sizes. */
/* rules: F10 */
static void
test_worker_rt_large_payload(void)
{
	const uint32_t n = (1u << 20) + 3;
	uint8_t *big = malloc(n), *pl;
	struct peer p;
	uint32_t len;

	for (uint32_t i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 31 + (i >> 9));
	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 9, big, n);
	free(expect(&p, SIPC_FT_ACCEPT, 9, NULL));
	pl = expect(&p, SIPC_FT_REPLY, 9, &len);
	CU_ASSERT(len == n && memcmp(pl, big, n) == 0);
	free(pl);
	send_frame(&p, SIPC_FT_REQUEST, 10, "small", 5);
	free(expect(&p, SIPC_FT_ACCEPT, 10, NULL));
	free(expect(&p, SIPC_FT_REPLY, 10, NULL));
	CU_ASSERT(exited_with(finish(&p), 0));
	free(big);
}

/* rules: X3 */
static void
test_worker_rt_cancel_calls_callback(void)
{
	struct peer p;
	uint32_t len;
	uint8_t *pl;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 4, "hold", 4);
	free(expect(&p, SIPC_FT_ACCEPT, 4, NULL));
	send_frame(&p, SIPC_FT_CANCEL, 4, NULL, 0);
	pl = expect(&p, SIPC_FT_REPLY, 4, &len);
	CU_ASSERT(len == 9 && memcmp(pl, "cancelled", 9) == 0);
	free(pl);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* A reply deferred to the idle callback still goes out before the
 * runtime blocks: nothing else is sent to provoke it. */
/* rules: C2 */
static void
test_worker_rt_idle_flushes_deferred(void)
{
	struct peer p;
	uint32_t len;
	uint8_t *pl;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 6, "defer", 5);
	free(expect(&p, SIPC_FT_ACCEPT, 6, NULL));
	pl = expect(&p, SIPC_FT_REPLY, 6, &len);
	CU_ASSERT(len == 8 && memcmp(pl, "deferred", 8) == 0);
	free(pl);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* A closed channel is an EPIPE error for the worker, not a SIGPIPE. */
static void
test_worker_rt_closed_channel_is_epipe(void)
{
	struct peer p;
	int st;

	start_fork(&p, NULL, NULL, 0);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 8, "waitclose", 9);
	free(expect(&p, SIPC_FT_ACCEPT, 8, NULL));
	close(p.fd);
	p.fd = -1;
	st = finish(&p);
	CU_ASSERT(exited_with(st, X_EPIPE));
	CU_ASSERT_FALSE(st >= 0 && WIFSIGNALED(st));
}

/* rules: D8 */
static void
test_worker_rt_open_checks_parent_and_fd(void)
{
	const char *wrong_parent[] = { "SIPC_PARENT_PID", "1", NULL };
	const char *bad_fd[] = { "SIPC_FD", "garbage", NULL };
	const char *closed_fd[] = { "SIPC_FD", "900", NULL };
	const char *not_sock[] = { "SIPC_FD", "0", NULL };
	const char *const *cases[] = { wrong_parent, bad_fd, closed_fd,
		not_sock };
	struct sipc_frame f;
	struct peer p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		start_fork(&p, cases[i], NULL, 0);
		CU_ASSERT_EQUAL(recv_frame(&p, &f), 1); /* no HELLO at all */
		CU_ASSERT(exited_with(finish(&p), X_OPENFAIL));
	}
}

/* ------------------------------------------------ fixture programs */

/* Reorder fixture: a batch of 8 comes back permuted, each ACCEPT before
 * its REPLY, and the same seed gives the same order. */
static void
reorder_run(const char *seed, uint64_t order[8])
{
	char *argv[] = { (char *)tl_fixture("reorder"), (char *)seed, NULL };
	uint8_t pre[8 * 64];
	uint8_t accepted[8] = { 0 };
	struct sipc_frame f;
	struct peer p;
	size_t n = 0;
	int got = 0;

	for (uint64_t id = 0; id < 8; id++)
		n += put_frame(pre + n, SIPC_FT_REQUEST, id, &id, 8);
	start_fixture(&p, argv, NULL);
	expect_hello(&p);
	CU_ASSERT(write(p.fd, pre, n) == (ssize_t)n);
	while (got < 8) {
		CU_ASSERT_EQUAL_FATAL(recv_frame(&p, &f), 0);
		CU_ASSERT_FATAL(f.hdr.id < 8);
		if (f.hdr.type == SIPC_FT_ACCEPT) {
			accepted[f.hdr.id] = 1;
		} else {
			CU_ASSERT_EQUAL(f.hdr.type, SIPC_FT_REPLY);
			CU_ASSERT_EQUAL(accepted[f.hdr.id], 1);
			CU_ASSERT(f.hdr.len == 8 &&
			    memcmp(f.payload, &f.hdr.id, 8) == 0);
			order[got++] = f.hdr.id;
		}
		free(f.payload);
	}
	send_frame(&p, SIPC_FT_SHUTDOWN, 0, NULL, 0);
	CU_ASSERT(exited_with(finish(&p), 0));
}

/* rules: C2 */
static void
test_worker_rt_reorder_fixture_out_of_order(void)
{
	uint64_t a[8], b[8];
	bool identity = true, seen[8] = { false };

	reorder_run("42", a);
	reorder_run("42", b);
	for (int i = 0; i < 8; i++) {
		identity = identity && a[i] == (uint64_t)i;
		seen[a[i]] = true;
	}
	for (int i = 0; i < 8; i++)
		CU_ASSERT(seen[i]);
	CU_ASSERT_FALSE(identity);
	CU_ASSERT(memcmp(a, b, sizeof(a)) == 0);
}

static bool
file_has_lines(void *arg)
{
	FILE *fp = fopen(arg, "r");
	int c, n = 0;

	if (fp == NULL)
		return false;
	while ((c = fgetc(fp)) != EOF)
		n += c == '\n';
	fclose(fp);
	return n >= 2;
}

/* Echo fixture: exec log written before the reply, and commands. */
static void
test_worker_rt_echo_fixture_log_and_commands(void)
{
	char *argv[] = { (char *)tl_fixture("echo"), NULL };
	char logpath[] = "/tmp/sipc-rt-test-XXXXXX", env[64], want[96];
	char line[2][96] = { "", "" };
	uint8_t *pl;
	uint32_t len;
	struct peer p;
	FILE *fp;
	int fd = mkstemp(logpath);

	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	snprintf(env, sizeof(env), "SIPC_EXEC_LOG=%s", logpath);
	start_fixture(&p, argv, env);
	expect_hello(&p);
	send_frame(&p, SIPC_FT_REQUEST, 1, "abc", 3);
	free(expect(&p, SIPC_FT_ACCEPT, 1, NULL));
	free(expect(&p, SIPC_FT_REPLY, 1, NULL));
	send_frame(&p, SIPC_FT_REQUEST, 2, "\0CMDerror 9", 11);
	free(expect(&p, SIPC_FT_ACCEPT, 2, NULL));
	pl = expect(&p, SIPC_FT_ERROR, 2, &len);
	CU_ASSERT(len == 4 + 15 && pl[0] == 9 &&
	    memcmp(pl + 4, "requested error", 15) == 0);
	free(pl);
	send_frame(&p, SIPC_FT_REQUEST, 3, "\0CMDpid", 7);
	free(expect(&p, SIPC_FT_ACCEPT, 3, NULL));
	pl = expect(&p, SIPC_FT_REPLY, 3, &len);
	snprintf(want, sizeof(want), "%d", (int)p.pid);
	CU_ASSERT(len == strlen(want) && memcmp(pl, want, len) == 0);
	free(pl);
	CU_ASSERT(tl_wait_until(file_has_lines, logpath, DEADLINE_MS));
	fp = fopen(logpath, "r");
	CU_ASSERT_FATAL(fp != NULL);
	CU_ASSERT(fgets(line[0], sizeof(line[0]), fp) != NULL);
	fclose(fp);
	snprintf(want, sizeof(want), "%d 1 3 %08x\n", (int)p.pid,
	    sipc__crc32c(0, "abc", 3));
	CU_ASSERT_STRING_EQUAL(line[0], want);
	CU_ASSERT(exited_with(finish(&p), 0));
	unlink(logpath);
}

int
main(void)
{
	tl_suite("worker_rt", (tl_test[]){
		{ "test_worker_rt_hello", test_worker_rt_hello },
		{ "test_worker_rt_replies_held_die_with_the_worker",
		  test_worker_rt_replies_held_die_with_the_worker },
		{ "test_worker_rt_long_handler_reply_not_held",
		  test_worker_rt_long_handler_reply_not_held },
		{ "test_worker_rt_sleeps_through_reply_reads",
		  test_worker_rt_sleeps_through_reply_reads },
		{ "test_worker_rt_accepts_each_right_before_its_handler",
		  test_worker_rt_accepts_each_right_before_its_handler },
		{ "test_worker_rt_crash_in_batch_accepts_only_started",
		  test_worker_rt_crash_in_batch_accepts_only_started },
		{ "test_worker_rt_start_counter_counts_each_request",
		  test_worker_rt_start_counter_counts_each_request },
		{ "test_worker_rt_start_counter_crash_in_batch",
		  test_worker_rt_start_counter_crash_in_batch },
		{ "test_worker_rt_start_counter_refused_falls_back_to_accept",
		  test_worker_rt_start_counter_refused_falls_back_to_accept },
		{ "test_worker_rt_accept_precedes_reply",
		  test_worker_rt_accept_precedes_reply },
		{ "test_worker_rt_error_frame_encoding",
		  test_worker_rt_error_frame_encoding },
		{ "test_worker_rt_shutdown_exits_0",
		  test_worker_rt_shutdown_exits_0 },
		{ "test_worker_rt_eof_exits_0", test_worker_rt_eof_exits_0 },
		{ "test_worker_rt_garbage_is_protocol_error",
		  test_worker_rt_garbage_is_protocol_error },
		{ "test_worker_rt_wrong_direction_type_is_protocol_error",
		  test_worker_rt_wrong_direction_type_is_protocol_error },
		{ "test_worker_rt_max_payload_from_env",
		  test_worker_rt_max_payload_from_env },
		{ "test_worker_rt_absurd_reply_lengths_refused",
		  test_worker_rt_absurd_reply_lengths_refused },
		{ "test_worker_rt_absurd_request_lengths_refused",
		  test_worker_rt_absurd_request_lengths_refused },
		{ "test_worker_rt_large_payload", test_worker_rt_large_payload },
		{ "test_worker_rt_cancel_calls_callback",
		  test_worker_rt_cancel_calls_callback },
		{ "test_worker_rt_idle_flushes_deferred",
		  test_worker_rt_idle_flushes_deferred },
		{ "test_worker_rt_closed_channel_is_epipe",
		  test_worker_rt_closed_channel_is_epipe },
		{ "test_worker_rt_open_checks_parent_and_fd",
		  test_worker_rt_open_checks_parent_and_fd },
		{ "test_worker_rt_reorder_fixture_out_of_order",
		  test_worker_rt_reorder_fixture_out_of_order },
		{ "test_worker_rt_echo_fixture_log_and_commands",
		  test_worker_rt_echo_fixture_log_and_commands },
		{ NULL, NULL } });
	return tl_run();
}
