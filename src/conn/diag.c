/*
 * diag.c - a worker's diagnostics (its stdout and stderr): cut into
 * pieces at '\n' and every diag_line_max bytes, escaped (strnvisx), and
 * given to the log callback and to the slot's crash-report tail
 * (CONTRACT G1-G4).  A '\n' right after a piece cut at diag_line_max
 * ends that piece; it does not make an empty one.
 *
 * Threads: the slot's reader thread feeds and flushes its own cutter;
 * the tail ring is read by whoever settles the slot's end.  The slot
 * lock guards the tail; the log callback runs with no lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LIBBSD_OPENBSD_VIS 1
#include <bsd/vis.h>

#include "pool/pool.h"

#define VIS_FLAGS (VIS_CSTYLE | VIS_OCTAL | VIS_TAB | VIS_NL)

int
sipc__diag_init(struct sipc__diag *d, size_t line_max)
{
	memset(d, 0, sizeof(*d));
	d->max = line_max;
	d->line = malloc(line_max);
	d->vis = malloc(4 * line_max + 1);
	if (d->line == NULL || d->vis == NULL) {
		sipc__diag_free(d);
		return -ENOMEM;
	}
	return 0;
}

void
sipc__diag_free(struct sipc__diag *d)
{
	free(d->line);
	free(d->vis);
	d->line = d->vis = NULL;
}

/* Append escaped text to the slot's tail ring (slot lock held). */
static void
tail_append(struct sipc__slot *sl, const char *txt, size_t n)
{
	size_t cap = sl->sup->cfg.diag_tail_bytes;

	if (cap == 0 || sl->diag_tail == NULL)
		return;
	while (n-- > 0) {
		sl->diag_tail[sl->diag_tail_pos] = *txt++;
		sl->diag_tail_pos = (sl->diag_tail_pos + 1) % cap;
		if (sl->diag_tail_len < cap)
			sl->diag_tail_len++;
	}
}

void
sipc__slot_diag_tail(struct sipc__slot *sl, char **ret)
{
	size_t cap = sl->sup->cfg.diag_tail_bytes, len, start, i;
	char *out;

	pthread_mutex_lock(&sl->lock);
	len = sl->diag_tail_len;
	if (len == 0 || (out = malloc(len + 1)) == NULL) {
		pthread_mutex_unlock(&sl->lock);
		*ret = NULL;
		return;
	}
	start = (sl->diag_tail_pos + cap - len) % cap;
	for (i = 0; i < len; i++)
		out[i] = sl->diag_tail[(start + i) % cap];
	out[len] = '\0';
	pthread_mutex_unlock(&sl->lock);
	*ret = out;
}

/* One piece out: escaped, into the tail, to the log callback. */
static void
emit(struct sipc__diag *d, struct sipc__slot *sl)
{
	struct sipc_supervisor *s = sl->sup;
	int n;

	/* strnvisx: explicit length, so NUL bytes are escaped too */
	n = strnvisx(d->vis, 4 * d->max + 1, d->line, d->len, VIS_FLAGS);
	if (n < 0)
		n = (int)strlen(d->vis);
	d->len = 0;
	pthread_mutex_lock(&sl->lock);
	tail_append(sl, d->vis, (size_t)n);
	tail_append(sl, "\n", 1);
	pthread_mutex_unlock(&sl->lock);
	if (s->cfg.log != NULL)
		s->cfg.log(s->cfg.log_arg, SIPC_LOG_DIAG, sl->idx,
		    sl->generation, sl->pid, d->vis);
}

void
sipc__diag_feed(struct sipc__diag *d, struct sipc__slot *sl,
                const uint8_t *p, size_t n)
{
	for (; n > 0; p++, n--) {
		if (*p == '\n') {
			if (d->len > 0 || !d->cut)
				emit(d, sl);
			d->cut = false;
			continue;
		}
		d->cut = false;
		d->line[d->len++] = (char)*p;
		if (d->len == d->max) {
			emit(d, sl);
			d->cut = true;
		}
	}
}

void
sipc__diag_flush(struct sipc__diag *d, struct sipc__slot *sl)
{
	if (d->len > 0)
		emit(d, sl);
	d->cut = false;
}
