/*
 * rx.h - the reader's decode state and a reading thread's view of it,
 * shared by the reader thread (reader.c) and a sipc_call() thread that
 * reads its own reply (callread.c).  Not installed.  reader.c does not
 * call callread.c: the caller reads with the reader's code.
 */
#ifndef SIPC_RX_H
#define SIPC_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fdq.h"
#include "sipc_int.h"

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
	                              * by their REPLY frames (fdq.h) */
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

#endif /* SIPC_RX_H */
