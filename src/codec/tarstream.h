/*
 * tarstream.h - tar as a stream, both ways, for tree transfers (importTree, exportTree):
 *
 *  - the reader is a push parser: bytes go in as they arrive (from the engine's archive
 *    download or from a command's output), in pieces of any size, and members come out
 *    as callbacks (header, data pieces, end), with no allocation sized from the input;
 *  - the writer appends one member's header (ustar, with a pax record when a name or a
 *    size does not fit), its padding and the end of the archive to a caller's buffer, so
 *    an upload is built as its source is read.
 *
 * The bytes read are untrusted (a sandbox controls what its tar prints, and what the
 * engine's archive holds): every header's checksum is checked, numbers are bounded,
 * long names (pax "path"/"linkpath", GNU 'L'/'K') are kept in a buffer of at most
 * TAR_STREAM_MAX_META bytes, and the archive must end with its end-of-archive block.
 * Names are handed out as the raw bytes they are: judging them (absolute, "..", links)
 * is the caller's job (codec/tree_rules.h).
 *
 * Owns: a tar_reader_t owns its header block and its long-name buffers. The writer owns
 * nothing.
 */
#ifndef SBX_TARSTREAM_H
#define SBX_TARSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"

/* Pax extended headers and GNU long names/links above this are refused. */
#define TAR_STREAM_MAX_META (64 * 1024)

typedef enum {
  TS_FILE = 0,  /* '0', '\0', '7' */
  TS_DIRECTORY, /* '5' (and GNU 'D': its data is skipped) */
  TS_SYMLINK,   /* '2' */
  TS_HARDLINK,  /* '1' */
  TS_OTHER,     /* devices, fifos, sparse and multi-volume members, unknown types */
} ts_kind_t;

typedef struct tar_member {
  const char *name; /* NUL-terminated; the bytes as stored (pax path, GNU long name, ustar prefix/name) */
  size_t name_len;  /* may be less than strlen-able length if the name holds a NUL: then refused */
  const char *link; /* link target, "" when none */
  ts_kind_t kind;
  char type;     /* the typeflag byte */
  uint64_t size; /* data bytes that follow (0 for everything but files, unless the archive says otherwise) */
  uint32_t mode; /* permission bits of the header (07777) */
} tar_member_t;

typedef struct tar_reader_cbs {
  /* A member's header. Return 0 to go on, -1 to stop (set err). */
  int (*on_member)(void *ud, const tar_member_t *m, err_t *err);
  /* A piece of the member's data (files only; other kinds' data is skipped). */
  int (*on_data)(void *ud, const uint8_t *data, size_t len, err_t *err);
  /* All the member's data was handed out. */
  int (*on_member_end)(void *ud, err_t *err);
} tar_reader_cbs_t;

typedef struct tar_reader tar_reader_t;

tar_reader_t *tar_reader_new(const tar_reader_cbs_t *cbs, void *ud);
void tar_reader_free(tar_reader_t *r);
/*
 * Feeds bytes. Returns 0 (more may come), 1 (the end-of-archive block was read: whatever
 * follows is ignored), or -1 with err set (the bytes are not a well-formed archive, or a
 * callback stopped: then err is what the callback set). After -1 every call returns -1.
 */
int tar_reader_feed(tar_reader_t *r, const uint8_t *data, size_t len, err_t *err);
/* The input ended: 0 when the end of the archive was read, else -1 with err set (the
 * archive was cut: docker_command_failed naming how far it got). */
int tar_reader_finish(tar_reader_t *r, err_t *err);

/* ---- writing ---- */

typedef struct tar_out_entry {
  const char *path; /* relative, no trailing slash; directories get one in the header */
  int is_dir;
  uint64_t size; /* files only */
  unsigned mode; /* 07777 */
  uint32_t uid, gid;
  time_t mtime;
} tar_out_entry_t;

/* Appends the header block(s) of one member: a pax record first when the name is over
 * what ustar can hold or the size is 8 GiB or more. -1 when out of memory (or the name
 * is empty or over TAR_STREAM_MAX_META). */
int tar_write_header(buf_t *out, const tar_out_entry_t *e);
/* Appends the zero bytes that complete a member of `size` bytes to its 512-byte block. */
int tar_write_padding(buf_t *out, uint64_t size);
/* Appends the end of the archive (two zero blocks). */
int tar_write_end(buf_t *out);

#endif
