/*
 * sipc-probe - the worker half of the isolation probes.  Run as a worker
 * (by sipc_create() at start-up, through the selected provider, and by
 * the provider conformance suite), it tries to reach what an isolating
 * provider must keep from it and reports what it got.  It decides
 * nothing: the host set the bait up and judges each reply.
 *
 * Usage: sipc-probe    (no arguments; links libsipc-worker.a only)
 *
 * Requests (payload, ASCII; one reply each):
 *   "read PATH"    open and read PATH: "read=1 DATA" (its first bytes) or
 *                  "read=0 errno=E"
 *   "unix PATH"    connect a stream socket to the unix socket PATH:
 *                  "connect=1" or "connect=0 errno=E"
 *   "abstract NAME" the same to the abstract unix socket NAME
 *   "tcp PORT"     the same to 127.0.0.1:PORT (the loopback of whatever
 *                  network namespace the worker is in)
 *   "kill PID"     kill(PID, 0): "kill=1" or "kill=0 errno=E"
 *   "env NAME"     "set=1 VALUE" or "set=0"
 *   "environ"      the whole environment, one NAME=VALUE a line
 *   "fds TOKEN"    every open descriptor (found with fcntl, so /proc is
 *                  not needed) whose target is a regular file containing
 *                  TOKEN, or whose /proc link names a path containing
 *                  TOKEN: "open=N leaks=FD,FD" (empty list: none)
 *   "uid"          "uid=U map=IN OUT COUNT", the line of
 *                  /proc/self/uid_map that maps U ("map=-" when it
 *                  cannot be read)
 *   "privilege"    "caps=I,P,E,B,A nnp=N userns=R" from /proc/self/status
 *                  (CapInh, CapPrm, CapEff, CapBnd, CapAmb in hex;
 *                  NoNewPrivs), R what unshare(CLONE_NEWUSER) in a child
 *                  got: "made", "errno=E" or "signal=S" (the filter)
 *   "write PATH"   create PATH (O_EXCL) and remove it again: "write=1"
 *                  or "write=0 errno=E"
 *   "forks N"      fork up to N children that wait, stop at the first
 *                  refusal, kill and reap them all: "forked=K errno=E"
 *                  (E 0 when all N were had)
 *   "filter"       "seccomp=M filters=N unshare=R clone=R": Seccomp and
 *                  Seccomp_filters of /proc/self/status ("?" unread), R
 *                  what unshare(CLONE_NEWUSER) and clone(CLONE_NEWUSER)
 *                  got in a child, as "privilege" says it; only calls
 *                  the filter refuses with an error, never a killing one
 *   "limits"       "as=S,H fsize=S,H nofile=S,H cpu=S,H nproc=S,H
 *                  raise=E tmp=B": getrlimit of each ("-" unlimited),
 *                  the errno of setrlimit(RLIMIT_NOFILE) one above its
 *                  hard limit (0: raised, "-": none), the size of /tmp in bytes
 *   "escape"       fork a child that calls setsid() and keeps the
 *                  channel (descriptor 3) open until the host closes its
 *                  end, or ESCAPE_TTL_MS pass: "escaped=PID" once it
 *                  runs in its new session, or "escaped=0 errno=E"
 *   other          "unknown request"
 * Single-threaded (the forked children only wait).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_worker.h"

#define REQ_MAX 1024
#define OUT_MAX 65536
#define FD_SCAN_MAX 4096         /* descriptors looked at by "fds" */
#define FORK_MAX 1024
#define FORK_TTL_MS (600 * 1000) /* a forked child waits at most this */
#define ESCAPE_TTL_MS (60 * 1000)/* an escapee's own bound */

extern char **environ;

/* A decimal in [lo, hi]; false when s is not one. */
static bool
num(const char *s, long long lo, long long hi, long long *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

static void
sleep_ms(long long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int
probe_read(const char *path, char *out, size_t cap)
{
	char data[256];
	ssize_t n;
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return snprintf(out, cap, "read=0 errno=%d", errno);
	n = read(fd, data, sizeof(data) - 1);
	e = errno;
	close(fd);
	if (n < 0)
		return snprintf(out, cap, "read=0 errno=%d", e);
	data[n] = '\0';
	return snprintf(out, cap, "read=1 %s", data);
}

static int
probe_connect(const struct sockaddr *sa, socklen_t len, char *out,
              size_t cap)
{
	int fd, r, e;

	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return snprintf(out, cap, "connect=0 errno=%d", errno);
	r = connect(fd, sa, len);
	e = errno;
	close(fd);
	return r == 0 ? snprintf(out, cap, "connect=1") :
	    snprintf(out, cap, "connect=0 errno=%d", e);
}

/* A path, or with `abstract` a name in the abstract namespace. */
static int
probe_unix(const char *name, bool abstract, char *out, size_t cap)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(name), off = abstract ? 1 : 0;

	if (n + off >= sizeof(sun.sun_path))
		return snprintf(out, cap, "connect=0 errno=%d", ENAMETOOLONG);
	memcpy(sun.sun_path + off, name, n + 1);
	return probe_connect((struct sockaddr *)&sun, abstract ?
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n) :
	    (socklen_t)sizeof(sun), out, cap);
}

static int
probe_tcp(const char *port, char *out, size_t cap)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	long long p;

	if (!num(port, 1, 65535, &p))
		return snprintf(out, cap, "bad port");
	sin.sin_port = htons((uint16_t)p);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return probe_connect((struct sockaddr *)&sin, sizeof(sin), out, cap);
}

static int
probe_kill(const char *arg, char *out, size_t cap)
{
	long long pid;

	if (!num(arg, 2, INT32_MAX, &pid))
		return snprintf(out, cap, "bad pid");
	return kill((pid_t)pid, 0) == 0 ? snprintf(out, cap, "kill=1") :
	    snprintf(out, cap, "kill=0 errno=%d", errno);
}

static int
probe_environ(char *out, size_t cap)
{
	size_t off = 0;

	out[0] = '\0';
	for (char **e = environ; e != NULL && *e != NULL; e++) {
		int n = snprintf(out + off, cap - off, "%s\n", *e);

		if (n < 0 || (size_t)n >= cap - off)
			break;
		off += (size_t)n;
	}
	return (int)off;
}

/* Does descriptor fd lead to the token: a regular file holding it (read
 * with pread, so no offset moves), or a link whose path names it? */
static bool
fd_has(int fd, const char *token)
{
	char buf[4096], path[64], tgt[4096];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((n = readlink(path, tgt, sizeof(tgt) - 1)) > 0) {
		tgt[n] = '\0';
		if (strstr(tgt, token) != NULL)
			return true;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if ((n = pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, token) != NULL;
}

static int
probe_fds(const char *token, char *out, size_t cap)
{
	char leaks[2048] = "";
	size_t off = 0;
	int fd, open_n = 0;

	for (fd = 0; fd < FD_SCAN_MAX; fd++) {
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		open_n++;
		if (fd_has(fd, token) && off < sizeof(leaks) - 16)
			off += (size_t)snprintf(leaks + off, sizeof(leaks) - off,
			    "%s%d", off ? "," : "", fd);
	}
	return snprintf(out, cap, "open=%d leaks=%s", open_n, leaks);
}

/* The value of "Name:\t..." in /proc/self/status, or "?". */
static void
status_field(const char *name, char *val, size_t cap)
{
	char line[256];
	size_t n = strlen(name);
	FILE *f = fopen("/proc/self/status", "re");

	snprintf(val, cap, "?");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			snprintf(val, cap, "%s", line + n + 1 +
			    strspn(line + n + 1, " \t"));
			val[strcspn(val, "\n")] = '\0';
			break;
		}
	if (f != NULL)
		fclose(f);
}

/* A child tries a user namespace of its own: the filter may kill it. */
static int
try_userns(char *out, size_t cap)
{
	int st = 0;
	pid_t pid = fork();

	if (pid < 0)
		return snprintf(out, cap, "fork-errno=%d", errno);
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno > 0 &&
		    errno < 200 ? errno : 200);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st))
		return snprintf(out, cap, "signal=%d", WTERMSIG(st));
	return WEXITSTATUS(st) == 0 ? snprintf(out, cap, "made") :
	    snprintf(out, cap, "errno=%d", WEXITSTATUS(st));
}

/* A child calls clone(CLONE_NEWUSER) itself (the C library's fork
 * would not pass the flag); its own child, if made, ends at once. */
static int
try_clone_userns(char *out, size_t cap)
{
	int st = 0;
	pid_t pid = fork();

	if (pid < 0)
		return snprintf(out, cap, "fork-errno=%d", errno);
	if (pid == 0) {
		long c = syscall(SYS_clone, (unsigned long)CLONE_NEWUSER |
		    SIGCHLD, NULL, NULL, NULL, NULL);

		if (c == 0)
			_exit(0);
		if (c < 0)
			_exit(errno > 0 && errno < 200 ? errno : 200);
		while (waitpid((pid_t)c, NULL, 0) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st))
		return snprintf(out, cap, "signal=%d", WTERMSIG(st));
	return WEXITSTATUS(st) == 0 ? snprintf(out, cap, "made") :
	    snprintf(out, cap, "errno=%d", WEXITSTATUS(st));
}

static int
probe_filter(char *out, size_t cap)
{
	char mode[16], count[16], un[32], cl[32];

	status_field("Seccomp", mode, sizeof(mode));
	status_field("Seccomp_filters", count, sizeof(count));
	(void)try_userns(un, sizeof(un));
	(void)try_clone_userns(cl, sizeof(cl));
	return snprintf(out, cap, "seccomp=%s filters=%s unshare=%s clone=%s",
	    mode, count, un, cl);
}

static int
lim_text(rlim_t v, char *buf, size_t len)
{
	return v == RLIM_INFINITY ? snprintf(buf, len, "-") :
	    snprintf(buf, len, "%llu", (unsigned long long)v);
}

static int
probe_limits(char *out, size_t cap)
{
	static const int res[] = { RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE,
	    RLIMIT_CPU, RLIMIT_NPROC };
	static const char *const name[] = { "as", "fsize", "nofile", "cpu",
	    "nproc" };
	char s[24], h[24];
	struct rlimit rl;
	struct statfs sf;
	size_t off = 0;
	int e = -1;     /* -1: no hard limit to raise, said "raise=-" */

	for (size_t i = 0; i < 5; i++) {
		if (getrlimit(res[i], &rl) < 0)
			rl.rlim_cur = rl.rlim_max = 0;
		lim_text(rl.rlim_cur, s, sizeof(s));
		lim_text(rl.rlim_max, h, sizeof(h));
		off += (size_t)snprintf(out + off, cap - off, "%s=%s,%s ",
		    name[i], s, h);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY) {
		rl.rlim_max++;
		rl.rlim_cur = rl.rlim_max;
		e = setrlimit(RLIMIT_NOFILE, &rl) < 0 ? errno : 0;
		if (e == 0) {     /* raised: put it back for later requests */
			rl.rlim_max--;
			rl.rlim_cur = rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (e < 0)
		off += (size_t)snprintf(out + off, cap - off, "raise=- ");
	else
		off += (size_t)snprintf(out + off, cap - off, "raise=%d ", e);
	if (statfs("/tmp", &sf) == 0)
		return snprintf(out + off, cap - off, "tmp=%llu",
		    (unsigned long long)sf.f_blocks *
		    (unsigned long long)sf.f_bsize) + (int)off;
	return snprintf(out + off, cap - off, "tmp=-") + (int)off;
}

static int
probe_privilege(char *out, size_t cap)
{
	static const char *const caps[] = { "CapInh", "CapPrm", "CapEff",
	    "CapBnd", "CapAmb" };
	char v[5][40], nnp[16], ns[32];

	for (size_t i = 0; i < 5; i++)
		status_field(caps[i], v[i], sizeof(v[i]));
	status_field("NoNewPrivs", nnp, sizeof(nnp));
	(void)try_userns(ns, sizeof(ns));
	return snprintf(out, cap, "caps=%s,%s,%s,%s,%s nnp=%s userns=%s", v[0],
	    v[1], v[2], v[3], v[4], nnp, ns);
}

static int
probe_write(const char *path, char *out, size_t cap)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return snprintf(out, cap, "write=0 errno=%d", errno);
	close(fd);
	(void)unlink(path);
	return snprintf(out, cap, "write=1");
}

static int
probe_uid(char *out, size_t cap)
{
	unsigned long in, outer, count, uid = (unsigned long)getuid();
	FILE *f = fopen("/proc/self/uid_map", "re");
	int n = -1;

	while (f != NULL && fscanf(f, "%lu %lu %lu", &in, &outer, &count) == 3)
		if (uid >= in && uid - in < count) {
			n = snprintf(out, cap, "uid=%lu map=%lu %lu %lu", uid,
			    in, outer, count);
			break;
		}
	if (f != NULL)
		fclose(f);
	return n >= 0 ? n : snprintf(out, cap, "uid=%lu map=-", uid);
}

static int
probe_forks(const char *arg, char *out, size_t cap)
{
	static pid_t kids[FORK_MAX];
	long long want;
	int k, e = 0;

	if (!num(arg, 1, FORK_MAX, &want))
		return snprintf(out, cap, "bad count");
	for (k = 0; k < want; k++) {
		if ((kids[k] = fork()) < 0) {
			e = errno;
			break;
		}
		if (kids[k] == 0) {
			/* Waits to be killed; never outlives the probe. */
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
			sleep_ms(FORK_TTL_MS);
			_exit(0);
		}
	}
	for (int i = 0; i < k; i++)
		(void)kill(kids[i], SIGKILL);
	for (int i = 0; i < k; i++)
		while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
			;
	return snprintf(out, cap, "forked=%d errno=%d", k, e);
}

/* The escapee: a new session, the channel kept open (the host sees its
 * end hang up only once every copy is closed), gone when the host
 * closes its end or after ESCAPE_TTL_MS, whichever comes first. */
static void __attribute__((noreturn))
escapee(int chan_fd, int ready_fd)
{
	struct pollfd pf = { .fd = chan_fd, .events = 0 };
	char ok = 1;

	if (setsid() < 0)
		_exit(1);
	(void)!write(ready_fd, &ok, 1);
	close(ready_fd);
	/* No events asked: only POLLHUP / POLLERR end the wait. */
	(void)poll(&pf, 1, ESCAPE_TTL_MS);
	_exit(0);
}

static int
probe_escape(int chan_fd, char *out, size_t cap)
{
	int p[2], e;
	char ok = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return snprintf(out, cap, "escaped=0 errno=%d", errno);
	if ((pid = fork()) < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		return snprintf(out, cap, "escaped=0 errno=%d", e);
	}
	if (pid == 0) {
		close(p[0]);
		escapee(chan_fd, p[1]);
	}
	close(p[1]);
	while (read(p[0], &ok, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (ok != 1)
		return snprintf(out, cap, "escaped=0 errno=%d", ECHILD);
	return snprintf(out, cap, "escaped=%d", (int)pid);
}

static int
dispatch(sipc_worker *w, char *req, char *out, size_t cap)
{
	const char *v;

	if (strncmp(req, "read ", 5) == 0)
		return probe_read(req + 5, out, cap);
	if (strncmp(req, "unix ", 5) == 0)
		return probe_unix(req + 5, false, out, cap);
	if (strncmp(req, "abstract ", 9) == 0)
		return probe_unix(req + 9, true, out, cap);
	if (strncmp(req, "tcp ", 4) == 0)
		return probe_tcp(req + 4, out, cap);
	if (strncmp(req, "kill ", 5) == 0)
		return probe_kill(req + 5, out, cap);
	if (strncmp(req, "env ", 4) == 0)
		return (v = getenv(req + 4)) != NULL ?
		    snprintf(out, cap, "set=1 %s", v) : snprintf(out, cap, "set=0");
	if (strcmp(req, "environ") == 0)
		return probe_environ(out, cap);
	if (strncmp(req, "fds ", 4) == 0)
		return probe_fds(req + 4, out, cap);
	if (strcmp(req, "uid") == 0)
		return probe_uid(out, cap);
	if (strcmp(req, "privilege") == 0)
		return probe_privilege(out, cap);
	if (strncmp(req, "write ", 6) == 0)
		return probe_write(req + 6, out, cap);
	if (strncmp(req, "forks ", 6) == 0)
		return probe_forks(req + 6, out, cap);
	if (strcmp(req, "filter") == 0)
		return probe_filter(out, cap);
	if (strcmp(req, "limits") == 0)
		return probe_limits(out, cap);
	if (strcmp(req, "escape") == 0)
		return probe_escape(sipc_worker_fd(w), out, cap);
	return snprintf(out, cap, "unknown request");
}

static void
handle(sipc_worker *w, uint64_t id, const uint8_t *p, size_t len, void *arg)
{
	static char out[OUT_MAX];
	char req[REQ_MAX];
	int n;

	if (len >= sizeof(req)) {
		sipc_worker_reply(w, id, "too long", 8);
		return;
	}
	memcpy(req, p, len);
	req[len] = '\0';
	if ((n = dispatch(w, req, out, sizeof(out))) < 0)
		n = 0;
	sipc_worker_reply(w, id, out, (size_t)n < sizeof(out) ? (size_t)n :
	    sizeof(out) - 1);
}

int
main(int argc, char **argv)
{
	sipc_worker *w = NULL;
	int r;

	if ((r = sipc_worker_open(&w)) < 0) {
		fprintf(stderr, "sipc-probe: sipc_worker_open: %s\n",
		    sipc_strerror(r));
		return 1;
	}
	if ((r = sipc_worker_run(w, handle, NULL)) < 0)
		fprintf(stderr, "sipc-probe: sipc_worker_run: %s\n",
		    sipc_strerror(r));
	sipc_worker_close(w);
	return r < 0 ? 1 : 0;
}
