/*
 * testlib.h - helpers shared by the CUnit test binaries.
 * Tests wait on events with generous deadlines, never fixed sleeps.
 */
#ifndef SIPC_TESTLIB_H
#define SIPC_TESTLIB_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proccount.h"

/*
 * Run every registered suite, each in its own forked process, so a test
 * that changes process-wide state (signal mask and dispositions, the
 * subreaper flag, rlimits, environment) cannot affect another suite, and
 * a crash or hang-kill of one suite is reported as a failure of the test
 * that was running.  Results come from CUnit's handlers in the child
 * (per test: passed, failed with its failure records, or skipped) and
 * travel to the parent as records.  Prints each test and a summary line;
 * when $SIPC_TEST_COUNTS names a file, writes "ran passed failed
 * skipped" to it (tests/run.sh sums them); when $SIPC_TEST_XML names a
 * file, writes JUnit-style XML there.  Returns the exit status for
 * main(): 0 when every test passed or was skipped and at least one ran.
 */
int tl_run(void);

/*
 * Equality assertions that print both sides on failure (CU_ASSERT_EQUAL
 * prints only the expression): "TL_EQ(a, b): a is 3, b is 4".  Integers
 * and pointers compare as intmax_t; strings with strcmp, NULL equal
 * only to NULL.  The _FATAL forms end the test, as CUnit's do.
 */
bool tl_check_eq(intmax_t a, intmax_t b, const char *sa, const char *sb,
                 unsigned line, const char *file, bool fatal);
bool tl_check_streq(const char *a, const char *b, const char *sa,
                    const char *sb, unsigned line, const char *file,
                    bool fatal);
#define TL_EQ(a, b) tl_check_eq((intmax_t)(a), (intmax_t)(b), #a, #b, \
    __LINE__, __FILE__, false)
#define TL_EQ_FATAL(a, b) tl_check_eq((intmax_t)(a), (intmax_t)(b), #a, \
    #b, __LINE__, __FILE__, true)
#define TL_STREQ(a, b) tl_check_streq((a), (b), #a, #b, __LINE__, \
    __FILE__, false)
#define TL_STREQ_FATAL(a, b) tl_check_streq((a), (b), #a, #b, __LINE__, \
    __FILE__, true)

/* Add a suite with tests: tl_suite("frame", (tl_test[]){{"x", fn}, {0}}). */
typedef struct { const char *name; void (*fn)(void); } tl_test;
void tl_suite(const char *name, const tl_test *tests);

/* Skip the running test: it cannot run here (no root, no namespaces...).
 * Call it, then return from the test.  The reason is printed and kept
 * (XML), the test is counted as skipped, not passed.  A test that also
 * failed an assertion counts as failed. */
void tl_skip(const char *why);

/* Path of a fixture binary (from $SIPC_FIXTURES, default build/fixtures). */
const char *tl_fixture(const char *name);

/* Path of the sipc-init program of this build ($SIPC_INIT, default
 * build/libexec/sipc-init). */
const char *tl_init_path(void);

/* Monotonic milliseconds. */
int64_t tl_now_ms(void);
/* The same clock in microseconds. */
int64_t tl_now_us(void);
/* Poll `cond(arg)` every few ms until true or `timeout_ms` passes. */
bool tl_wait_until(bool (*cond)(void *), void *arg, int timeout_ms);

/* Process resource counts for leak checks: proccount.h. */
/* The thread count to take as a baseline: waits (up to timeout_ms) for
 * the threads of earlier tests to be gone, i.e. for only the calling
 * thread and the runtime's own helpers (the floor the runner set with
 * tl_set_thread_floor()) to be listed, and returns the count then.  Tests run on their
 * suite's main thread, and a thread that was joined stays listed in
 * /proc/self/task for a moment after pthread_join() returned (the
 * kernel wakes the joiner before it releases the task), longer on a
 * loaded machine; a count taken at once can be one too high. */
int tl_settled_threads(int timeout_ms);
void tl_set_thread_floor(int n);
/* Wait until the counts are back to the given baseline (or timeout). */
bool tl_wait_baseline(int fds, int threads, int children, int timeout_ms);

/* Is a process alive (exists and not a zombie)? */
bool tl_pid_alive(int pid);
/* Voluntary context switches of this process's thread named `name`
 * (its comm), -1 when there is none; tl_thread_named() is the predicate
 * "such a thread exists" for tl_wait_until (arg: the name). */
long tl_thread_switches(const char *name);
/* Voluntary context switches of process `pid` (its main thread's, from
 * /proc/PID/status), or -1. */
long tl_proc_switches(int pid);
bool tl_thread_named(void *name);

/* 1 in an ASan or TSan build (their allocators and spawn paths differ). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TL_SANITIZED 1
#endif
#endif
#ifndef TL_SANITIZED
#define TL_SANITIZED 0
#endif

/*
 * Fork a child that only waits to be killed (it ends itself after
 * 10 min should the test not), in a process group of its own when
 * `own_group`, renamed to `comm` unless NULL.  Returns once the child
 * runs: its pid, or -1.  No CUnit assertion, so a forked helper process
 * may call it too; the caller ends it with tl_kill_reap().
 */
pid_t tl_spawn_idle(const char *comm, bool own_group);
/* SIGKILL a child of this process and reap it. */
void tl_kill_reap(pid_t pid);
/* Reap `pid` (a child, or an orphan reparented to this subreaper)
 * within `timeout_ms`; true when it ended by signal `sig`. */
bool tl_reap_signaled(pid_t pid, int sig, int timeout_ms);

/* Read one line (without its newline) from fd within `ms`, a byte at
 * a time so nothing after it is consumed; false on EOF, error, overlong
 * line or timeout. */
bool tl_read_line(int fd, char *buf, size_t len, int ms);

/* The "0::" line of /proc/<pid>/cgroup: the cgroup v2 path from the
 * root of the cgroup2 mount; "" when unreadable. */
void tl_proc_cgroup(pid_t pid, char *ret, size_t len);

#endif
