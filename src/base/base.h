/*
 * base/base.h - what src/base/ exports: clocks, configuration, the log, thread names, the API gate and the one-shot event.
 */
#ifndef SIPC_SRC_BASE_H
#define SIPC_SRC_BASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "sipc.h"
#include "wire/wire.h"

struct sipc_supervisor;
struct sipc__slot;
struct sipc__req;
struct sipc__table;
struct sipc__event;
struct sipc__callread;
struct sipc__wbatch;
struct sipc__diag;
struct sipc__usage;
struct sipc__journal;
struct sipc__rx;
struct sipc_provider_ops;
struct sipc_provider_chan;

/* ---- clock */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds (CLOCK_MONOTONIC): deadlines, timeouts. */
int64_t sipc__now_ms(void);

/* Monotonic nanoseconds: short intervals (a worker's time per reply). */
int64_t sipc__now_ns(void);

/* Wall-clock milliseconds since the epoch (CLOCK_REALTIME): only for
 * what outlives the process (journal records, file names). */
int64_t sipc__wall_ms(void);

/* A condition variable that waits on CLOCK_MONOTONIC. */
void sipc__cond_init(pthread_cond_t *cv);

/* The CLOCK_MONOTONIC time `ms_from_now` ms ahead, for
 * pthread_cond_timedwait() on a sipc__cond_init() variable. */
void sipc__abstime(struct timespec *ts, int64_t ms_from_now);

/*
 * A wait with a bound that ran out: the waiting code goes on without
 * what it waited for, and says so here (what: a static string naming
 * the wait).  Counted per thread until sipc__bounds_take(), which the
 * reaper calls after each slot's pass: it logs the count and adds it
 * to sipc_stats.bounds_expired.  So no bound expires in silence.
 */
void sipc__bound_expired(const char *what);
/* How many bounds ran out on this thread since the last take (0: none),
 * the last one's name in *ret_what; resets the count. */
unsigned sipc__bounds_take(const char **ret_what);

/* ---- config */
#include <stdbool.h>
#include <stddef.h>


/*
 * Check every field of `cfg` against its documented range (the table at
 * the top of config_load.c) and the cross-field rules:
 *   ring_bytes >= max_payload + SIPC_FRAME_HDR_LEN  (one frame fits a ring)
 *   mem_ceiling >= ring_bytes                       (one ring fits memory)
 *   restart_cap_ms >= restart_base_ms
 *   cgroup != off when a limit (pids_max, memory_max, cpu_max_percent)
 *   is set
 * plus: environment, durability, containment and cgroup are known enum
 * values,
 * required_guarantees has no bit outside SIPC_G_ALL, provider and path
 * are non-NULL and non-empty, env_allow entries are variable names and
 * env_set entries are "NAME=value".
 * The environment's *meaning* (fail-closed provider selection) is not
 * judged here: that is the provider module's job.
 * Returns 0, or SIPC_E_CONFIG with a message naming the field in
 * errbuf (may be NULL).  Any thread.
 */
int sipc__config_validate(const struct sipc_config *cfg, char *errbuf,
                          size_t errlen);

/* Map a guarantee name ("pid_namespace", ...) to its bit.  Returns 0, or
 * SIPC_E_CONFIG for an unknown name (ret_bit untouched).  Any thread. */
int sipc__guarantee_parse(const char *name, unsigned *ret_bit);

/* Name of an environment value ("development", ...; "unset" for UNSET,
 * "invalid" for anything else).  Never NULL.  Any thread. */
const char *sipc__environment_name(enum sipc_environment e);

/* ------------------------------------------- shared by config*.c only */

/* The first seven kinds are integers checked against min..max (an enum's
 * names, a guarantee mask's bits); the rest are checked by kind. */
enum sipc__cfg_kind {
	SIPC__CK_NUM,            /* unsigned, uint32_t or size_t in min..max */
	SIPC__CK_ENVIRONMENT,
	SIPC__CK_DURABILITY,
	SIPC__CK_CONTAINMENT,    /* enum sipc_containment */
	SIPC__CK_CGROUP,         /* enum sipc_cgroup_mode */
	SIPC__CK_GUARANTEES,
	SIPC__CK_LIMIT,          /* size_t in min..max, or SIPC_UNLIMITED */
	SIPC__CK_BOOL,
	SIPC__CK_STRING,         /* required, non-empty */
	SIPC__CK_OPTSTRING,      /* empty = NULL */
	SIPC__CK_ARGV,
	SIPC__CK_NAMES,          /* comma-separated variable names */
	SIPC__CK_ENVSET,         /* repeatable NAME=value */
};

struct sipc__cfg_key {
	const char *name;
	enum sipc__cfg_kind kind;
	size_t off, size;
	long long min, max;
};

/* One entry per field of struct sipc_config, in the order of the format
 * description at the top of config_load.c.  Defined in config.c; the
 * count is checked there against the table.  The loader keeps a
 * uint64_t mask of keys seen. */
#define SIPC__CFG_NKEYS 61
_Static_assert(SIPC__CFG_NKEYS <= 64, "seen-key mask is a uint64_t");
extern const struct sipc__cfg_key sipc__cfg_keys[];

/* Value names indexed by enum value ("unset" is not accepted as input). */
#define SIPC__CFG_NENV 4
#define SIPC__CFG_NDURABILITY 3
extern const char *const sipc__cfg_env_names[SIPC__CFG_NENV];
extern const char *const sipc__cfg_durability_names[SIPC__CFG_NDURABILITY];

/* True when the SIPC_* variable `name` (n bytes, the name only) is one
 * that shares the prefix but is not configuration: set by the supervisor
 * for each worker, or used by the library's own build and tests (the
 * list is in config.c and sipc.conf(5)).  sipc_config_load_env() skips
 * these and refuses every other SIPC_* name that is not a key.  Any
 * thread. */
bool sipc__cfg_env_reserved(const char *name, size_t n);

/* True when the n bytes at s form a variable name: [A-Za-z_][A-Za-z0-9_]*.
 * Any thread. */
bool sipc__cfg_valid_varname(const char *s, size_t n);

/* ---- from the former pool/pool.h */
/* true in library threads (reader, writer, reaper), and on a host thread
 * while it runs a callback for an immediate outcome (supervisor.c) */
extern _Thread_local bool sipc__lib_thread;

/* api.c: public entry points count themselves against sipc_destroy():
 * 0, or SIPC_E_SHUTDOWN (nothing counted) once destroy has begun.
 * Every successful enter is paired with one leave.  Any thread. */
int sipc__api_enter(struct sipc_supervisor *s);
void sipc__api_leave(struct sipc_supervisor *s);
/* 0, or -EDEADLK on a library thread (for destroy, call, wait_ready). */
int sipc__api_blocking_ok(void);
/* Run the next callback on this host thread under a library thread's
 * rules; restore with sipc__lib_thread = <returned value>. */
bool sipc__callback_rules_begin(void);

/* A one-shot wake-up for one waiter (event.c): sipc__event_set() once,
 * from any thread; sipc__event_wait() returns once it is set, with what
 * the setter wrote before it visible. */
struct sipc__event {
	atomic_uint word;
};
void sipc__event_init(struct sipc__event *ev);
void sipc__event_set(struct sipc__event *ev);
void sipc__event_wait(struct sipc__event *ev);
/* True once set (the waiter's own check; no wait). */
bool sipc__event_is_set(struct sipc__event *ev);

void sipc__log(struct sipc_supervisor *s, enum sipc_log_level lvl,
               const struct sipc__slot *sl, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* SIPC_SRC_BASE_H */
