/*
 * conn/conn.h - what src/conn/ exports: a worker's connection: reader and writer threads, a caller's direct write and read, diagnostics, start counter, figures, the slot's state.
 */
#ifndef SIPC_SRC_CONN_H
#define SIPC_SRC_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "sipc.h"
#include "request/request.h"
#include "os/os.h"

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

/* ---- from the former pool/pool.h */
enum sipc__sender {
	SIPC__SEND_NONE = 0,
	SIPC__SEND_WRITER,
	SIPC__SEND_CALLER,
	SIPC__SEND_READER,            /* refilling after replies (writer.c) */
};

enum sipc__rd_owner {
	SIPC__RD_READER = 0,
	SIPC__RD_CALLER,
	/* Nobody: the last caller left the socket out of the reader's
	 * interest set with nothing in flight, undecoded or to send, so
	 * that the next call takes it without two epoll_ctl() calls.  Any
	 * other need gives it back to the reader first (unpark). */
	SIPC__RD_PARKED,
};

struct sipc__rx;
/* The protocol socket's tag in the reader's interest set. */
#define SIPC__RX_PROTO 0u

/* A sipc_call() whose thread took its slot's protocol socket to read
 * its own reply (callread.c): the slot, or NULL; the request's deadline. */
struct sipc__callread {
	struct sipc__slot *sl;
	int64_t deadline_ms;
};
/* A worker's start counter (conn/start_counter.c; CONTRACT A5).  recv() of the
 * bytes before HELLO, taking the one descriptor they may carry (*fdp:
 * -1 or the caller's); the counter checked and mapped read-only (NULL
 * and *why if it is unfit; fd consumed); its mapping dropped. */
ssize_t sipc__recv_hello(int sock, void *buf, size_t len, int *fdp);
const _Atomic uint64_t *sipc__start_ctr_map(int fd, const char **why);
void sipc__start_ctr_unmap(const _Atomic uint64_t *ctr);

/* Per-request figures (figures.c): the sender of a request written
 * while nothing was in flight, before its bytes, no lock held; the
 * decoder of a reply, before the table lock (true: read); and under the
 * table lock, the answered request's figures if it was alone. */
void sipc__fig_begin(struct sipc__slot *sl, const struct sipc__req *q);
bool sipc__fig_end(struct sipc__slot *sl, uint64_t id,
                   struct sipc__usage *ret);
void sipc__fig_note(struct sipc__slot *sl, struct sipc__req *q,
                    const struct sipc__usage *u);

/* worker threads (reader.c) */
/* Bound on a dead worker's final drain past what it left: the bytes
 * buffered when it was seen gone are all decoded (reader.c), and then a
 * surviving descendant's new bytes are read for at most this long (the
 * time completion callbacks take is not counted; they run after the
 * drain).  A stop with bytes unread marks the stream cut. */
#define SIPC__FINAL_DRAIN_MS 100
/* How long a provider's sweep may keep answering "not yet" (1) before
 * the reaper gives up on it, logs an error and settles the worker's end
 * anyway (the local and sandbox providers finish within 2 s). */
#define SIPC__SWEEP_MAX_MS 10000
int sipc__worker_threads_start(struct sipc__slot *sl);
/* writer.c: the writer thread's body (started by reader.c) */
void *sipc__writer_main(void *arg);
/* Name the calling thread "<what><slot index>" (base.c). */
void sipc__thread_name(const char *what, const struct sipc__slot *sl);
/* Watch (EPOLL_CTL_ADD) or stop watching (EPOLL_CTL_DEL) `fd` for input
 * in the interest set `epfd` under `tag`, level-triggered: an fd added
 * back with bytes pending is reported at once.  0 or -1 (errno); base.c.
 * The reader's set: the caller holds the slot lock (or the threads have
 * not started). */
int sipc__epoll_in(int epfd, int op, int fd, uint32_t tag);
/*
 * The direct path: a submitting thread writes its own request when the
 * slot's worker is ready and idle, its ring empty, nobody else sending
 * and the pool lightly loaded (writer.c), instead of waking the writer
 * for it.  sipc__direct_claim(): slot lock held;
 * true when `q` is now written to this generation (as the writer's take
 * does) and the channel is the caller's; then the caller drops the slot
 * lock and calls sipc__direct_send(), which journals it (CONTRACT J7:
 * not sent if that fails), writes without blocking and hands what did
 * not fit to the writer.  Consumes the ring's reference.
 */
bool sipc__direct_claim(struct sipc__slot *sl, struct sipc__req *q);
void sipc__direct_send(struct sipc__slot *sl, struct sipc__req *q);
/*
 * Caller reads (callread.c).  sipc__callread_take(): slot lock held, just
 * after sipc__direct_claim() for a sipc_call(): true when the socket is
 * now the caller's (the reader is not reading, holds no partial frame,
 * no bytes wait for reply room, the stream is sound).
 * sipc__callread_run(): that caller, no lock held: reads and handles
 * frames with the reader's code until `ev` is set, the deadline passes
 * or the socket is asked back, then gives it back to the reader.
 * sipc__callread_revoke() (writer.c): slot lock held, any library
 * thread: ask the caller for the socket (no-op when the reader has it;
 * a parked socket goes back to the reader at once); true when the
 * caller has it (the one asking waits for cv_read or cv_writer, which
 * the caller broadcasts when it gives it back).
 * sipc__callread_unpark(): slot lock held: a parked socket back into
 * the reader's interest set (no-op otherwise).
 */
bool sipc__callread_take(struct sipc__slot *sl);
void sipc__callread_run(struct sipc__slot *sl, struct sipc__event *ev,
                        int64_t deadline_ms);
bool sipc__callread_revoke(struct sipc__slot *sl);
void sipc__callread_unpark(struct sipc__slot *sl);
/*
 * The reader's refill (writer.c): replies gave a writer that had no room
 * some.  Reader thread, no lock held.  When the channel is free and
 * nothing but the ring waits to be sent, the reader (awake anyway) sends
 * what fits in the room itself, without blocking, instead of waking the
 * writer for it; what the socket did not take is handed to the writer.
 * Otherwise the writer is woken.
 */
void sipc__reader_refill(struct sipc__slot *sl);
/* reader.c, start/stop of a generation: the reader's batch buffer. */
struct sipc__wbatch *sipc__wbatch_new(void);
/* After the writer is joined: drop the references of a batch left
 * unsent (its requests are settled with the generation's others). */
void sipc__wbatch_drop(struct sipc__slot *sl);
void sipc__worker_threads_stop(struct sipc__slot *sl);
void sipc__slot_diag_tail(struct sipc__slot *sl, char **ret);

/* diag.c: one worker's diagnostics cut into escaped pieces (reader
 * thread only). */
struct sipc__diag {
	char *line;                   /* max bytes: the piece being cut */
	size_t len, max;
	bool cut;                     /* the last piece was cut at max: a
	                               * '\n' right after it ends it */
	char *vis;                    /* 4 * max + 1 */
};
int sipc__diag_init(struct sipc__diag *d, size_t line_max);
void sipc__diag_free(struct sipc__diag *d);
void sipc__diag_feed(struct sipc__diag *d, struct sipc__slot *sl,
                     const uint8_t *p, size_t n);
void sipc__diag_flush(struct sipc__diag *d, struct sipc__slot *sl);
/* A serving slot's place goes to a ready spare (slot_state.c). */
int sipc__slot_hand_over(struct sipc__slot *sl);
/*
 * A slot's state (slot_state.c).  sipc__slot_set_state() is the only
 * writer of sl->state: any thread, slot lock held.  It allows only the
 * changes sipc__slot_state_allowed() names (its table is in
 * slot_state.c); any other is a library bug and aborts the process.
 */
bool sipc__slot_state_allowed(enum sipc_worker_state from,
                              enum sipc_worker_state to);
void sipc__slot_set_state(struct sipc__slot *sl, enum sipc_worker_state to);

/* ---- rx */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"
#include "pool/pool.h"

/* The protocol socket's decode state: the reader thread's, or while a
 * sipc_call() thread holds the socket (sl->rd_owner), that thread's.
 * Only the owner touches it; a hand-over is made under the slot lock. */
struct sipc__rx {
	struct sipc_decoder dec;
	uint8_t *buf;                 /* READ_BUF bytes (reader.c) */
	bool ready;                   /* HELLO seen */
	int hello_fd;                 /* a descriptor sent with the bytes
	                               * before HELLO (its start counter),
	                               * or -1 */
	struct sipc__fdq fdq;         /* descriptors read, not yet claimed
	                              * by their REPLY frames (wire/wire.h) */
	bool proto_done;              /* EOF, error or violation */
	bool at_eof;                  /* the whole stream was decoded */
	bool final;                   /* final drain: never wait for room */
	size_t held;                  /* ceiling bytes taken for the frame
	                               * being decoded (0: none) */
	const uint8_t *pend;          /* bytes of buf read, not decoded: */
	size_t pend_len;              /* a frame a caller left to the reader
	                               * (no room, or a large payload) */
	int epfd;                     /* the reader's interest set */
	int give_fd;                  /* eventfd: the caller must give the
	                               * socket back (rd_revoke) */
};

/* A reply decoded in the final drain, its callback still to run: the
 * table's reference and the reply's mem_ceiling bytes go with it. */
struct sipc__later {
	struct sipc__req *q;
	struct sipc_result res;
	size_t held;
};

/* One thread's view: the reader thread's, or a reading caller's. */
struct reader {
	struct sipc__slot *sl;
	struct sipc__rx *rx;
	bool caller;                  /* a sipc_call() thread */
	int64_t now_ns;               /* when the bytes being decoded were read */
	uint8_t *dbuf;                /* reader: diagnostics, READ_BUF */
	struct sipc__diag diag;       /* reader: the line being cut */
	bool diag_done;
	int64_t wake_at_ms;           /* ... since then (monotonic) */
	bool wake_writer;             /* a reply gave a writer without room
	                               * some: wake it once the bytes of
	                               * this read are handled */
	/* reader, final drain: outcomes decoded whose callbacks run after
	 * it (reader.c, later_run()), and the time those took so far */
	struct sipc__later *later;
	size_t nlater, later_cap;
	int64_t later_ms;
};

/* Tags in the reader's interest set (epoll data.u32). */
enum { RX_PROTO = SIPC__RX_PROTO, RX_DIAG, RX_WAKE };

/* The thread that holds the socket (r->rx's owner), no lock held: read
 * `fd` (the socket when `proto`, else the diagnostics pipe), once or
 * (`all`) until it has no more, and handle what was read.  Never blocks.
 * false at EOF or error. */
bool sipc__reader_drain(struct reader *r, int fd, bool proto, bool all);

#endif /* SIPC_SRC_CONN_H */
