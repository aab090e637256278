/*
 * journal/read.c - reading a journal back at open (journal/journal.h): every good record
 * is applied to the in-memory state, a torn tail is cut, a corrupt record
 * ends the reading and the file is kept as a copy before it is cut.
 * Open time only, on the opening thread; the caller holds no lock the
 * journal's other users need (nobody else has the journal yet).
 */
#include "journal/journal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* Are all bytes of buf[off..len) zero?  (A tail a power loss left as
 * allocated-but-unwritten blocks reads as zeros.) */
static bool
all_zero(const uint8_t *buf, size_t off, size_t len)
{
	for (; off < len; off++)
		if (buf[off] != 0)
			return false;
	return true;
}

/* Does a whole valid record start anywhere in buf[from..len)?  Appends
 * are sequential and a torn write is cut before the next instance
 * appends, so a torn record is never followed by a valid one: one found
 * after a bad or unfinished record proves corruption.  (A false match
 * needs the magic and a CRC-32C to agree by chance.) */
static bool
valid_record_after(const uint8_t *buf, size_t from, size_t len)
{
	for (size_t off = from; off + SIPC__JREC_HDR + 4 <= len; off++) {
		struct sipc__jrec rec;
		size_t used, extent;

		if (buf[off] != (SIPC__JREC_MAGIC & 0xff))
			continue;
		if (sipc__jrec_decode(buf + off, len - off, &rec, &used,
		    &extent) == 0)
			return true;
	}
	return false;
}

/*
 * Parse the journal image, applying good records; returns the length of
 * the good prefix in *good and whether reading stopped at a corrupt
 * record (as opposed to a torn tail or the clean end).  A torn tail is
 * what an interrupted append leaves: the last record unfinished (its
 * length runs past the end of the file), or the last record whole in
 * size but not in content, or zeros (blocks allocated, data lost).
 * Anything else, in particular a damaged length field that makes a
 * record near the end seem to run past it while valid records follow,
 * is corruption.
 */
static int
read_image(struct sipc__jstate *s, struct sipc__journal_stats *st,
    const uint8_t *buf, size_t len, size_t *good, bool *corrupt)
{
	size_t off = 0;
	int ctx = -1, r;

	*corrupt = false;
	while (off < len) {
		struct sipc__jrec rec;
		size_t used = 0, extent;

		r = sipc__jrec_decode(buf + off, len - off, &rec, &used, &extent);
		if (r == -EAGAIN) {
			*corrupt = valid_record_after(buf, off + 1, len);
			break;
		}
		if (r < 0) {
			if (extent == 0 || off + extent < len)
				*corrupt = !all_zero(buf, off, len) &&
				    !(extent > 0 && all_zero(buf, off + extent, len));
			*corrupt = *corrupt ||
			    valid_record_after(buf, off + 1, len);
			break;
		}
		if ((r = sipc__js_apply(s, &rec, &ctx)) < 0)
			return r;
		st->records_read++;
		off += used;
	}
	*good = off;
	return 0;
}

int
sipc__jread_load(int fd, int dirfd, struct sipc__jstate *s,
    struct sipc__journal_stats *st, uint64_t *ret_size, char *errbuf,
    size_t errlen)
{
	uint8_t *buf = NULL;
	struct stat sb;
	size_t len = 0, good;
	bool corrupt;
	int r;

	if (fstat(fd, &sb) < 0)
		return -errno;
	if (sb.st_size > (off_t)1 << 30) {
		snprintf(errbuf, errlen, "journal larger than 1 GiB");
		return SIPC_E_JOURNAL;
	}
	if (sb.st_size > 0 && (buf = malloc((size_t)sb.st_size)) == NULL)
		return -ENOMEM;
	while (len < (size_t)sb.st_size) {
		ssize_t n = pread(fd, buf + len, (size_t)sb.st_size - len,
		    (off_t)len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : SIPC_E_JOURNAL;
			snprintf(errbuf, errlen, "cannot read journal");
			goto out;
		}
		len += (size_t)n;
	}
	if ((r = read_image(s, st, buf, len, &good, &corrupt)) < 0)
		goto out;
	if (good < len) {
		if (corrupt) {
			st->corrupt = 1;
			st->corrupt_offset = good;
			st->corrupt_bytes = len - good;
			/* The evidence is kept before the journal is cut. */
			r = sipc__jdir_save_corrupt(dirfd, buf, len,
			    st->corrupt_copy, sizeof(st->corrupt_copy));
			if (r < 0) {
				snprintf(errbuf, errlen, "cannot keep a copy of "
				    "the corrupt journal: %s", strerror(-r));
				goto out;
			}
		} else
			st->torn_bytes = len - good;
		if (ftruncate(fd, (off_t)good) < 0 || fsync(fd) < 0) {
			r = -errno;
			snprintf(errbuf, errlen, "cannot cut journal tail");
			goto out;
		}
		st->syncs++;
	}
	*ret_size = good;
	r = 0;
out:
	free(buf);
	return r;
}

