/*
 * agent_wire.h - the wire format between the host and the in-container agent
 * (src/agent/PROTOCOL.md is the specification; this is its one implementation in C).
 *
 * Owns: nothing. Pure C11 and libc: the agent (static, inside the container) and the host
 * addon compile this same file. Decoders never allocate and never read outside the bytes
 * they are given; what they return (aw_bytes_t, aw_list_t) points into those bytes.
 * Everything a peer says is bounded here before anyone looks at it: the host must treat
 * the agent as hostile (a command in the sandbox can kill it or write to its pipes), and
 * the agent bounds what the host sends as well.
 *
 * All integers are big-endian. A frame is a 12-byte header then `len` payload bytes.
 */
#ifndef SBX_AGENT_WIRE_H
#define SBX_AGENT_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* ---- constants both sides agree on (PROTOCOL.md "Limits") ---- */

#define AW_VERSION 1u
#define AW_MAGIC 0x414E5641u          /* "ANVA" */
#define AW_HEADER_LEN 12u
#define AW_MAX_PAYLOAD 1048576u       /* any frame, either direction */
#define AW_MAX_DATA 65536u            /* a DATA frame's payload, either direction */
#define AW_IN_WINDOW 262144u          /* initial credit of every host->agent stream */
#define AW_MAX_WINDOW 0x7fffffffu     /* credit of one stream never exceeds this */
#define AW_MAX_REQUESTS 1024u         /* requests in flight at once */
#define AW_MAX_ARGC 4096u
#define AW_MAX_ENVC 4096u
#define AW_MAX_ARG_LEN 131071u        /* one argv or env string (Linux MAX_ARG_STRLEN - 1) */
#define AW_MAX_PATH 4096u             /* a path or cwd, bytes */
#define AW_MAX_DEPTH 256u             /* components of a path */
#define AW_MAX_NAME 255u              /* one component (NAME_MAX) */
#define AW_MAX_PING 64u               /* PING/PONG payload */
#define AW_MAX_DETAIL 8192u           /* ERROR detail */
#define AW_MAX_BUILD 128u             /* HELLO build and arch strings */
#define AW_MAX_LIST_ENTRIES 1048576u  /* LIST max_entries */
#define AW_ENTRY_FIXED 24u            /* a listing record without its name */
#define AW_ENTRY_MAX (AW_ENTRY_FIXED + AW_MAX_NAME)
#define AW_MAX_TIMEOUT_MS 86400000u   /* PORT_WAIT timeout and interval: one day */
#define AW_MIN_INTERVAL_MS 10u
#define AW_MAX_WATCHES 65536u       /* WATCH max_watches: directories watched by one request */
#define AW_WATCH_FIXED 4u           /* a watch record without its path */
#define AW_WATCH_MAX (AW_WATCH_FIXED + AW_MAX_PATH)
#define AW_MAX_TERM_ID 64u          /* a terminal's id: 1 ..= 64 of [A-Za-z0-9._-], not "." first */
#define AW_MAX_TERM_DIM 4096u       /* a terminal's columns and rows */
#define AW_MIN_SCROLLBACK 4096u     /* TERM_OPEN scrollback, bytes */
#define AW_MAX_SCROLLBACK 67108864u
#define AW_MAX_TERMS 4096u          /* TERM_LIST: ids in one RESULT */
#define AW_TERM_REC_FIXED 8u        /* a terminal output record: u64 offset, then the bytes */

/* ---- frame types ----
 * AW_FRAME_TYPES(T): T(NAME, code, sender), sender AGENT, HOST or BOTH. The enum, the
 * names (aw_type_name), which side may send each type (aw_frame_parse) and PROTOCOL.md's
 * "Frames" table (test/unit/agent-protocol.test.js) come from this one list. */
#define AW_FRAME_TYPES(T) \
  T(HELLO, 0x01, AGENT)   \
  T(PONG, 0x02, AGENT)    \
  T(STARTED, 0x03, AGENT) \
  T(EXITED, 0x04, AGENT)  \
  T(RESULT, 0x05, AGENT)  \
  T(ERROR, 0x06, AGENT)   \
  T(DATA, 0x07, BOTH)     \
  T(WINDOW, 0x08, BOTH)   \
  T(HOST_HELLO, 0x20, HOST) \
  T(PING, 0x21, HOST)     \
  T(CANCEL, 0x22, HOST)   \
  T(EXEC, 0x23, HOST)     \
  T(READ, 0x24, HOST)     \
  T(WRITE, 0x25, HOST)    \
  T(MKDIR, 0x26, HOST)    \
  T(LIST, 0x27, HOST)     \
  T(PORT_WAIT, 0x28, HOST) \
  T(SIGNAL, 0x29, HOST)   \
  T(GROUP_ALIVE, 0x2A, HOST) \
  T(WATCH, 0x2B, HOST)     \
  T(TERM_OPEN, 0x2C, HOST) \
  T(TERM_ATTACH, 0x2D, HOST) \
  T(TERM_RESIZE, 0x2E, HOST) \
  T(TERM_SIGNAL, 0x2F, HOST) \
  T(TERM_LIST, 0x30, HOST)

#define AW_TYPE_ENUM_(name, code, sender) AW_T_##name = code,
enum { AW_FRAME_TYPES(AW_TYPE_ENUM_) };
#undef AW_TYPE_ENUM_

/* Header flags. */
#define AW_F_END 0x01u /* DATA only: the last frame of this stream */

/* Streams (header byte 6). 0 on every frame but DATA and WINDOW. */
enum {
  AW_S_NONE = 0,
  AW_S_IN = 1,  /* host -> agent: EXEC stdin, WRITE content */
  AW_S_OUT = 2, /* agent -> host: EXEC stdout, READ content, LIST and WATCH records */
  AW_S_ERR = 3, /* agent -> host: EXEC stderr */
};

/* Who sent the bytes being decoded. */
enum { AW_FROM_AGENT = 1, AW_FROM_HOST = 2 };

/* HELLO capabilities. */
#define AW_CAP_OPENAT2 0x01u   /* paths resolved by openat2 (else the O_NOFOLLOW walk) */
#define AW_CAP_SUBREAPER 0x02u /* PR_SET_CHILD_SUBREAPER took effect */
#define AW_CAP_PROC 0x04u      /* /proc readable: tree kills follow parent links */
#define AW_CAP_NET_TCP 0x08u   /* /proc/net/tcp or tcp6 readable */

/* EXEC flags. */
#define AW_EXEC_DETACHED 0x01u /* survives host silence, end of input and the agent's exit */
#define AW_EXEC_STDIN 0x02u    /* stdin streamed as DATA on AW_S_IN (else end-of-file at once) */
#define AW_EXEC_FLAGS_ALL 0x03u

/* EXITED / exec RESULT: how, flags. */
enum { AW_EXIT_CODE = 0, AW_EXIT_SIGNAL = 1 };
#define AW_EXITF_TIMED_OUT 0x01u
#define AW_EXITF_CANCELLED 0x02u
#define AW_EXITF_OUTPUT_CUT 0x04u /* output pipes closed by the agent after the tree was ended */
#define AW_EXITF_CORE 0x08u
#define AW_EXITF_ALL 0x0Fu

/* READ flags / READ RESULT flags. */
#define AW_READF_TRUNCATED 0x01u /* the file grew past max_bytes while it was read */

/* WRITE flags. */
#define AW_WRITE_FSYNC 0x01u
#define AW_WRITE_FLAGS_ALL 0x01u

/* MKDIR flags. */
#define AW_MKDIR_PARENTS 0x01u
#define AW_MKDIR_FLAGS_ALL 0x01u

/* LIST RESULT flags. */
#define AW_LISTF_TRUNCATED 0x01u /* more entries than max_entries */

/* PORT_WAIT flags and RESULT families. */
#define AW_PORT_V4 0x01u
#define AW_PORT_V6 0x02u

/* SIGNAL flags. */
#define AW_SIGNAL_TREE 0x01u /* freeze and signal the group's whole tree, not just the group */
#define AW_SIGNAL_FLAGS_ALL 0x01u

/* WATCH flags. */
#define AW_WATCH_RECURSIVE 0x01u /* every directory beneath, including ones made later */
#define AW_WATCH_FLAGS_ALL 0x01u

/* WATCH RESULT flags (a watch ends by itself only when its directory is gone). */
#define AW_WATCHF_ROOT_GONE 0x01u /* the watched directory was deleted or moved away */
#define AW_WATCHF_LIMIT 0x02u     /* max_watches reached: directories past it were not watched */
#define AW_WATCHF_ALL 0x03u

/* TERM_OPEN and TERM_ATTACH flags. */
#define AW_TERM_OUTPUT 0x01u /* output records from `since` on stream 2 until the terminal ends */
#define AW_TERM_INPUT 0x02u  /* keystrokes on stream 1, written to the terminal in order */
#define AW_TERM_WAIT 0x04u   /* the RESULT only once the terminal has ended */
#define AW_TERM_FLAGS_ALL 0x07u

/* TERM RESULT flags. */
#define AW_TERMF_ENDED 0x01u /* the program has exited: how, signal and code say how */
#define AW_TERMF_CORE 0x02u
#define AW_TERMF_ALL 0x03u

/* WATCH record types and kinds. */
enum { AW_WEV_CREATE = 1, AW_WEV_MODIFY = 2, AW_WEV_DELETE = 3, AW_WEV_RENAME = 4, AW_WEV_OVERFLOW = 5 };
enum { AW_WKIND_NONE = 0, AW_WKIND_FILE = 1, AW_WKIND_DIR = 2 };

/* LIST record types. */
enum { AW_ENT_UNKNOWN = 0, AW_ENT_FILE = 1, AW_ENT_DIR = 2, AW_ENT_SYMLINK = 3, AW_ENT_OTHER = 4 };

/* ERROR kinds (PROTOCOL.md "Errors"): E(NAME, code, "wire name"). The enum and
 * aw_error_name come from this list, and so do the tests' names (test/agent/lib/table.js). */
#define AW_ERROR_KINDS(E)                                              \
  E(PROTOCOL, 1, "protocol")               /* malformed frame or payload */ \
  E(UNSUPPORTED, 2, "unsupported")         /* unknown request type or flag */ \
  E(LIMIT, 3, "limit")                     /* a bound exceeded; value = the bound */ \
  E(INVALID, 4, "invalid")                 /* a field's value is not acceptable */ \
  E(DUPLICATE_ID, 5, "duplicate_id")       /* id already in flight */ \
  E(NOT_FOUND, 6, "not_found")                                      \
  E(SYMLINK, 7, "symlink")                 /* detail = the path up to the symlink */ \
  E(NOT_REGULAR, 8, "not_regular")                                  \
  E(IS_DIRECTORY, 9, "is_directory")                                \
  E(NOT_DIRECTORY, 10, "not_directory")                             \
  E(TOO_LARGE, 11, "too_large")            /* value = the file's size */ \
  E(PERMISSION, 12, "permission")                                   \
  E(IO, 13, "io")                          /* any other errno */    \
  E(SPAWN, 14, "spawn_failed")             /* stage says where; errno says why */ \
  E(CANCELLED, 15, "cancelled")                                     \
  E(LENGTH_MISMATCH, 16, "length_mismatch") /* value = bytes received */ \
  E(RESOURCES, 17, "resources")            /* ENOMEM, EMFILE, ENFILE, EAGAIN from fork */ \
  E(FLOW_CONTROL, 18, "flow_control")      /* more data than credit */ \
  E(NO_WORKDIR, 19, "no_workdir")          /* the workdir could not be opened */ \
  E(OUTSIDE, 20, "outside")                /* absolute path or ".." */ \
  E(READ_ONLY, 21, "read_only")            /* EROFS */              \
  E(NO_SPACE, 22, "no_space")              /* ENOSPC, EDQUOT */     \
  E(SHUTDOWN, 23, "shutdown")              /* the agent is exiting */ \
  E(VERSION, 24, "version")                /* no common protocol version */

#define AW_ERROR_ENUM_(name, code, wire) AW_E_##name = code,
enum { AW_ERROR_KINDS(AW_ERROR_ENUM_) };
#undef AW_ERROR_ENUM_

/* ERROR stage for AW_E_SPAWN. */
enum { AW_STAGE_NONE = 0, AW_STAGE_CWD = 1, AW_STAGE_EXEC = 2, AW_STAGE_SETUP = 3, AW_STAGE_FORK = 4 };
/* ERROR value bits for AW_E_SPAWN at AW_STAGE_EXEC. */
#define AW_SPAWN_SEARCHED 0x01u /* argv[0] had no '/': PATH was searched */
#define AW_SPAWN_RESOLVED 0x02u /* detail is the path found on PATH, not argv[0] */

/* ---- decoder status ---- */
enum {
  AW_OK = 0,
  AW_ERR_SHORT = -1,      /* payload ends inside a field */
  AW_ERR_TRAILING = -2,   /* bytes after the last field */
  AW_ERR_LIMIT = -3,      /* a length or count over its bound */
  AW_ERR_VALUE = -4,      /* a field outside its range */
  AW_ERR_NUL = -5,        /* a NUL byte where none can be represented */
  AW_ERR_FRAME_SIZE = -6, /* header announces more than AW_MAX_PAYLOAD (or DATA over AW_MAX_DATA) */
  AW_ERR_RESERVED = -7,   /* header reserved byte not zero */
  AW_ERR_TYPE = -8,       /* type unknown or not sent in this direction */
  AW_ERR_FLAGS = -9,      /* unknown flag bit, or END on a frame other than DATA */
  AW_ERR_STREAM = -10,    /* stream on a frame that has none, or an unknown stream */
  AW_ERR_ID = -11,        /* id 0 where a request id is needed, or non-zero on HELLO */
  AW_ERR_OVERFLOW = -12,  /* encoder: output buffer too small */
};
const char *aw_status_str(int status);
const char *aw_error_name(unsigned kind); /* "not_found", ...; "unknown" outside the table */
const char *aw_type_name(unsigned type);  /* "EXEC", ...; "unknown" */

/* ---- frames ---- */
typedef struct aw_header {
  uint32_t len;
  uint8_t type;
  uint8_t flags;
  uint8_t stream;
  uint8_t reserved;
  uint32_t id;
} aw_header_t;

void aw_header_encode(uint8_t out[AW_HEADER_LEN], const aw_header_t *h);
/*
 * One frame at the start of buf[0..len): returns 1 with *h, *payload (inside buf) and
 * *frame_len set; 0 when more bytes are needed; a negative AW_ERR_* when the header is
 * invalid (decided as soon as its 12 bytes are there: an oversize length is refused
 * before its payload is waited for). A stream with an invalid header cannot be
 * resynchronized.
 */
int aw_frame_parse(const uint8_t *buf, size_t len, int from, aw_header_t *h, const uint8_t **payload,
                   size_t *frame_len);

/* ---- views into payloads ---- */
typedef struct aw_bytes {
  const uint8_t *p;
  uint32_t len;
} aw_bytes_t;

/* A counted list of length-prefixed strings, validated when it was decoded. */
typedef struct aw_list {
  const uint8_t *p;
  size_t len;
  uint32_t count;
} aw_list_t;
/* The next string of a validated list: 1 and *out, or 0 at the end. */
int aw_list_next(aw_list_t *it, aw_bytes_t *out);

/* ---- writer ---- */
typedef struct aw_writer {
  uint8_t *p;
  size_t cap;
  size_t len;
  int overflow;
} aw_writer_t;
void aw_w_init(aw_writer_t *w, uint8_t *buf, size_t cap);
void aw_w_u8(aw_writer_t *w, uint8_t v);
void aw_w_u16(aw_writer_t *w, uint16_t v);
void aw_w_u32(aw_writer_t *w, uint32_t v);
void aw_w_raw(aw_writer_t *w, const void *p, size_t len);
void aw_w_blob(aw_writer_t *w, const void *p, uint32_t len); /* u32 length, bytes */
/* Starts a frame (header with length 0); returns where it starts. */
size_t aw_w_begin(aw_writer_t *w, uint8_t type, uint8_t flags, uint8_t stream, uint32_t id);
/* Patches the frame's length: AW_OK, AW_ERR_OVERFLOW, or AW_ERR_FRAME_SIZE. */
int aw_w_end(aw_writer_t *w, size_t start);

/* ---- messages: the table (PROTOCOL.md "Messages") ----
 *
 * AW_MESSAGES(M) has one row per payload layout:
 *   M(name, TYPE, sender, struct, encoder's struct, FIELDS, check)
 * and FIELDS(F) lists the payload's fields in byte order, F(kind, member, a, b):
 *   U8 U16 U32 I32     a number; outside a..b: AW_ERR_VALUE
 *   U32L               a number; below a: AW_ERR_VALUE, above b: AW_ERR_LIMIT (a bound)
 *   U64 I64            a number, any value (a, b unused)
 *   MASK8 MASK16 MASK32  flag bits; a bit outside the mask a: AW_ERR_VALUE
 *   ZERO8 ZERO16       reserved bytes, no member; not zero: AW_ERR_VALUE
 *   BLOB               u32 length then the bytes: over a bytes AW_ERR_LIMIT (checked before
 *                      the bytes are looked at); with b = 1 a NUL byte is AW_ERR_NUL
 *   ARGV ENVS          u32 count (a..b: below AW_ERR_VALUE, above AW_ERR_LIMIT), then that
 *                      many blobs of at most AW_MAX_ARG_LEN bytes without NUL; ARGV's first
 *                      is not empty, each ENVS string is NAME=value with a non-empty NAME
 * `check` is what no single field can say (a relation between fields), run last.
 *
 * From each row come: the struct (members in field order, none for ZERO fields; lists as
 * aw_list_t, in the encoder's struct as an array and its `_count`), aw_dec_<name> (every
 * field read, no byte left over, then each field's rule in order, then `check`) and
 * aw_put_<name> (a whole frame, header included; for what the agent sends, BLOB lengths
 * are bounded first: AW_ERR_LIMIT). test/agent/lib/wire.js reads this table to make the
 * tests' codec, and test/unit/agent-protocol.test.js checks PROTOCOL.md's tables against
 * it. A new message is a row here, its FIELDS, and its section in PROTOCOL.md.
 *
 * DATA, WINDOW, PING/PONG and CANCEL are framing (a stream, an opaque or empty payload)
 * and are coded by hand below the table; so are LIST's records inside DATA. */

#define AW_PID_LIMIT 4194304u /* Linux PID_MAX_LIMIT */

#define AW_HELLO_FIELDS(F)                          \
  F(U32, magic, AW_MAGIC, AW_MAGIC)                 \
  F(U16, version_min, 1, 0xffff)                    \
  F(U16, version_max, 1, 0xffff)                    \
  F(U32, max_payload, 4096, AW_MAX_PAYLOAD)         \
  F(U32, max_data, 1024, AW_MAX_DATA)               \
  F(U32, in_window, 1, AW_MAX_WINDOW)               \
  F(U32, max_requests, 1, AW_MAX_REQUESTS)          \
  F(U32, caps, 0, 0xffffffff)                       \
  F(U32, pid, 0, 0xffffffff)                        \
  F(U32, uid, 0, 0xffffffff)                        \
  F(U32, gid, 0, 0xffffffff)                        \
  F(U32, heartbeat_ms, 0, 0xffffffff)               \
  F(BLOB, build, AW_MAX_BUILD, 1)                   \
  F(BLOB, arch, AW_MAX_BUILD, 1)

#define AW_HOST_HELLO_FIELDS(F)                     \
  F(U16, version_min, 1, 0xffff)                    \
  F(U16, version_max, 1, 0xffff)                    \
  F(U32, flags, 0, 0)

#define AW_ERROR_FIELDS(F)                          \
  F(U16, kind, 1, 0xffff)                           \
  F(U8, stage, 0, AW_STAGE_FORK)                    \
  F(ZERO8, reserved, 0, 0)                          \
  F(I32, err, 0, 4095)                              \
  F(U64, value, 0, 0)                               \
  F(BLOB, detail, AW_MAX_DETAIL, 0)

#define AW_STARTED_FIELDS(F)                        \
  F(U32, pid, 2, AW_PID_LIMIT)                      \
  F(U32, pgid, 2, AW_PID_LIMIT)

#define AW_EXITED_FIELDS(F)                         \
  F(U8, how, AW_EXIT_CODE, AW_EXIT_SIGNAL)          \
  F(U8, signal, 0, 64)                              \
  F(MASK8, flags, AW_EXITF_ALL, 0)                  \
  F(ZERO8, reserved, 0, 0)                          \
  F(I32, code, 0, 255)

#define AW_EXEC_RESULT_FIELDS(F)                    \
  AW_EXITED_FIELDS(F)                               \
  F(U64, out_bytes, 0, 0)                           \
  F(U64, err_bytes, 0, 0)                           \
  F(U64, duration_us, 0, 0)

#define AW_EXEC_FIELDS(F)                           \
  F(MASK32, flags, AW_EXEC_FLAGS_ALL, 0)            \
  F(U32, timeout_ms, 0, 0xffffffff)                 \
  F(U32, window, 0, AW_MAX_WINDOW)                  \
  F(BLOB, cwd, AW_MAX_PATH, 1)                      \
  F(ARGV, argv, 1, AW_MAX_ARGC)                     \
  F(ENVS, env, 0, AW_MAX_ENVC)

#define AW_READ_FIELDS(F)                           \
  F(U64, max_bytes, 0, 0)                           \
  F(U32, window, 0, AW_MAX_WINDOW)                  \
  F(U32, flags, 0, 0)                               \
  F(BLOB, path, AW_MAX_PATH, 1)

#define AW_READ_RESULT_FIELDS(F)                    \
  F(U64, bytes, 0, 0)                               \
  F(U32, mode, 0, 0xffffffff)                       \
  F(MASK32, flags, AW_READF_TRUNCATED, 0)           \
  F(I64, mtime_ns, 0, 0)

#define AW_WRITE_FIELDS(F)                          \
  F(U64, length, 0, 0)                              \
  F(U32, mode, 0, 07777)                            \
  F(MASK32, flags, AW_WRITE_FLAGS_ALL, 0)           \
  F(BLOB, path, AW_MAX_PATH, 1)

#define AW_WRITE_RESULT_FIELDS(F)                   \
  F(U64, bytes, 0, 0)                               \
  F(U32, mode, 0, 0xffffffff)

#define AW_MKDIR_FIELDS(F)                          \
  F(U32, mode, 0, 07777)                            \
  F(MASK32, flags, AW_MKDIR_FLAGS_ALL, 0)           \
  F(BLOB, path, AW_MAX_PATH, 1)

#define AW_MKDIR_RESULT_FIELDS(F)                   \
  F(U8, created, 0, 1)

#define AW_LIST_FIELDS(F)                           \
  F(U32L, max_entries, 1, AW_MAX_LIST_ENTRIES)      \
  F(U32, window, 0, AW_MAX_WINDOW)                  \
  F(U32, flags, 0, 0)                               \
  F(BLOB, path, AW_MAX_PATH, 1)

#define AW_LIST_RESULT_FIELDS(F)                    \
  F(U32, count, 0, AW_MAX_LIST_ENTRIES)             \
  F(MASK32, flags, AW_LISTF_TRUNCATED, 0)

#define AW_PORT_WAIT_FIELDS(F)                      \
  F(U16, port, 1, 0xffff)                           \
  F(MASK16, flags, AW_PORT_V4 | AW_PORT_V6, 0)      \
  F(U32L, timeout_ms, 0, AW_MAX_TIMEOUT_MS)         \
  F(U32L, interval_ms, 0, AW_MAX_TIMEOUT_MS)

#define AW_PORT_RESULT_FIELDS(F)                    \
  F(U8, found, 0, 1)                                \
  F(MASK8, families, AW_PORT_V4 | AW_PORT_V6, 0)    \
  F(ZERO16, reserved, 0, 0)                         \
  F(U32, waited_ms, 0, 0xffffffff)

#define AW_SIGNAL_FIELDS(F)                         \
  F(I32, pgid, INT32_MIN, INT32_MAX)                \
  F(U8, signal, 1, 64)                              \
  F(MASK8, flags, AW_SIGNAL_FLAGS_ALL, 0)           \
  F(ZERO16, reserved, 0, 0)

#define AW_SIGNAL_RESULT_FIELDS(F)                  \
  F(U8, delivered, 0, 1)                            \
  F(ZERO8, reserved, 0, 0)                          \
  F(ZERO16, reserved2, 0, 0)                        \
  F(U32, count, 0, AW_PID_LIMIT)

#define AW_GROUP_ALIVE_FIELDS(F)                    \
  F(I32, pgid, INT32_MIN, INT32_MAX)

/* members and zombies: live (non-zombie) members and zombies, AW_UNKNOWN without /proc */
#define AW_UNKNOWN 0xffffffffu
#define AW_ALIVE_RESULT_FIELDS(F)                   \
  F(U8, alive, 0, 1)                                \
  F(ZERO8, reserved, 0, 0)                          \
  F(ZERO16, reserved2, 0, 0)                        \
  F(U32, members, 0, 0xffffffff)                    \
  F(U32, zombies, 0, 0xffffffff)

#define AW_WATCH_FIELDS(F)                          \
  F(MASK32, flags, AW_WATCH_FLAGS_ALL, 0)           \
  F(U32, window, 0, AW_MAX_WINDOW)                  \
  F(U32L, max_watches, 1, AW_MAX_WATCHES)           \
  F(BLOB, path, AW_MAX_PATH, 1)

#define AW_WATCH_RESULT_FIELDS(F)                   \
  F(U64, events, 0, 0)                              \
  F(MASK32, flags, AW_WATCHF_ALL, 0)

#define AW_TERM_OPEN_FIELDS(F)                      \
  F(MASK32, flags, AW_TERM_FLAGS_ALL, 0)            \
  F(U32, window, 0, AW_MAX_WINDOW)                  \
  F(U16, cols, 1, AW_MAX_TERM_DIM)                  \
  F(U16, rows, 1, AW_MAX_TERM_DIM)                  \
  F(U32L, scrollback, AW_MIN_SCROLLBACK, AW_MAX_SCROLLBACK) \
  F(BLOB, term_id, AW_MAX_TERM_ID, 1)               \
  F(BLOB, cwd, AW_MAX_PATH, 1)                      \
  F(ARGV, argv, 1, AW_MAX_ARGC)                     \
  F(ENVS, env, 0, AW_MAX_ENVC)

#define AW_TERM_ATTACH_FIELDS(F)                    \
  F(MASK32, flags, AW_TERM_FLAGS_ALL, 0)            \
  F(U32, window, 0, AW_MAX_WINDOW)                  \
  F(U64, since, 0, 0)                               \
  F(BLOB, term_id, AW_MAX_TERM_ID, 1)

#define AW_TERM_RESULT_FIELDS(F)                    \
  F(MASK8, flags, AW_TERMF_ALL, 0)                  \
  F(U8, how, AW_EXIT_CODE, AW_EXIT_SIGNAL)          \
  F(U8, signal, 0, 64)                              \
  F(ZERO8, reserved, 0, 0)                          \
  F(I32, code, 0, 255)                              \
  F(U16, cols, 1, AW_MAX_TERM_DIM)                  \
  F(U16, rows, 1, AW_MAX_TERM_DIM)                  \
  F(U64, head, 0, 0)                                \
  F(U64, tail, 0, 0)

#define AW_TERM_RESIZE_FIELDS(F)                    \
  F(U16, cols, 1, AW_MAX_TERM_DIM)                  \
  F(U16, rows, 1, AW_MAX_TERM_DIM)                  \
  F(BLOB, term_id, AW_MAX_TERM_ID, 1)

#define AW_TERM_SIGNAL_FIELDS(F)                    \
  F(U8, signal, 1, 64)                              \
  F(ZERO8, reserved, 0, 0)                          \
  F(ZERO16, reserved2, 0, 0)                        \
  F(BLOB, term_id, AW_MAX_TERM_ID, 1)

#define AW_TERM_LIST_FIELDS(F)                      \
  F(U32, flags, 0, 0)

#define AW_TERM_LIST_RESULT_FIELDS(F)               \
  F(ARGV, ids, 0, AW_MAX_TERMS)

#define AW_MESSAGES(M)                                                                                \
  M(hello, HELLO, AGENT, aw_hello_t, aw_hello_t, AW_HELLO_FIELDS, aw_check_hello)                     \
  M(host_hello, HOST_HELLO, HOST, aw_host_hello_t, aw_host_hello_t, AW_HOST_HELLO_FIELDS,             \
    aw_check_host_hello)                                                                              \
  M(error, ERROR, AGENT, aw_error_t, aw_error_t, AW_ERROR_FIELDS, AW_NO_CHECK)                        \
  M(started, STARTED, AGENT, aw_started_t, aw_started_t, AW_STARTED_FIELDS, AW_NO_CHECK)              \
  M(exited, EXITED, AGENT, aw_exit_t, aw_exit_t, AW_EXITED_FIELDS, aw_check_exit)                     \
  M(exec_result, RESULT, AGENT, aw_exit_t, aw_exit_t, AW_EXEC_RESULT_FIELDS, aw_check_exit)           \
  M(exec, EXEC, HOST, aw_exec_req_t, aw_exec_enc_t, AW_EXEC_FIELDS, AW_NO_CHECK)                      \
  M(read, READ, HOST, aw_read_req_t, aw_read_req_t, AW_READ_FIELDS, AW_NO_CHECK)                      \
  M(read_result, RESULT, AGENT, aw_read_res_t, aw_read_res_t, AW_READ_RESULT_FIELDS, AW_NO_CHECK)     \
  M(write, WRITE, HOST, aw_write_req_t, aw_write_req_t, AW_WRITE_FIELDS, AW_NO_CHECK)                 \
  M(write_result, RESULT, AGENT, aw_write_res_t, aw_write_res_t, AW_WRITE_RESULT_FIELDS, AW_NO_CHECK) \
  M(mkdir, MKDIR, HOST, aw_mkdir_req_t, aw_mkdir_req_t, AW_MKDIR_FIELDS, AW_NO_CHECK)                 \
  M(mkdir_result, RESULT, AGENT, aw_mkdir_res_t, aw_mkdir_res_t, AW_MKDIR_RESULT_FIELDS, AW_NO_CHECK) \
  M(list, LIST, HOST, aw_list_req_t, aw_list_req_t, AW_LIST_FIELDS, AW_NO_CHECK)                      \
  M(list_result, RESULT, AGENT, aw_list_res_t, aw_list_res_t, AW_LIST_RESULT_FIELDS, AW_NO_CHECK)     \
  M(port_wait, PORT_WAIT, HOST, aw_port_req_t, aw_port_req_t, AW_PORT_WAIT_FIELDS, aw_check_port_wait) \
  M(port_result, RESULT, AGENT, aw_port_res_t, aw_port_res_t, AW_PORT_RESULT_FIELDS, aw_check_port_result) \
  M(signal, SIGNAL, HOST, aw_signal_req_t, aw_signal_req_t, AW_SIGNAL_FIELDS, AW_NO_CHECK)            \
  M(signal_result, RESULT, AGENT, aw_signal_res_t, aw_signal_res_t, AW_SIGNAL_RESULT_FIELDS, AW_NO_CHECK) \
  M(group_alive, GROUP_ALIVE, HOST, aw_alive_req_t, aw_alive_req_t, AW_GROUP_ALIVE_FIELDS, AW_NO_CHECK) \
  M(alive_result, RESULT, AGENT, aw_alive_res_t, aw_alive_res_t, AW_ALIVE_RESULT_FIELDS, aw_check_alive_result) \
  M(watch, WATCH, HOST, aw_watch_req_t, aw_watch_req_t, AW_WATCH_FIELDS, AW_NO_CHECK)                 \
  M(watch_result, RESULT, AGENT, aw_watch_res_t, aw_watch_res_t, AW_WATCH_RESULT_FIELDS, AW_NO_CHECK) \
  M(term_open, TERM_OPEN, HOST, aw_term_open_req_t, aw_term_open_enc_t, AW_TERM_OPEN_FIELDS, aw_check_term_open) \
  M(term_attach, TERM_ATTACH, HOST, aw_term_attach_req_t, aw_term_attach_req_t, AW_TERM_ATTACH_FIELDS,         \
    aw_check_term_attach)                                                                                      \
  M(term_result, RESULT, AGENT, aw_term_res_t, aw_term_res_t, AW_TERM_RESULT_FIELDS, aw_check_term_result)       \
  M(term_resize, TERM_RESIZE, HOST, aw_term_resize_req_t, aw_term_resize_req_t, AW_TERM_RESIZE_FIELDS,         \
    aw_check_term_resize)                                                                                      \
  M(term_signal, TERM_SIGNAL, HOST, aw_term_signal_req_t, aw_term_signal_req_t, AW_TERM_SIGNAL_FIELDS,         \
    aw_check_term_signal)                                                                                      \
  M(term_list, TERM_LIST, HOST, aw_term_list_req_t, aw_term_list_req_t, AW_TERM_LIST_FIELDS, AW_NO_CHECK)        \
  M(term_list_result, RESULT, AGENT, aw_term_list_res_t, aw_term_list_enc_t, AW_TERM_LIST_RESULT_FIELDS,         \
    aw_check_term_list_result)

/* The structs: members in field order (the C tests initialize them by position). */
#define AW_MEMBER_(kind, member, a, b) AW_MEMBER_##kind(member)
#define AW_MEMBER_U8(n) uint8_t n;
#define AW_MEMBER_MASK8(n) uint8_t n;
#define AW_MEMBER_U16(n) uint16_t n;
#define AW_MEMBER_MASK16(n) uint16_t n;
#define AW_MEMBER_U32(n) uint32_t n;
#define AW_MEMBER_U32L(n) uint32_t n;
#define AW_MEMBER_MASK32(n) uint32_t n;
#define AW_MEMBER_I32(n) int32_t n;
#define AW_MEMBER_U64(n) uint64_t n;
#define AW_MEMBER_I64(n) int64_t n;
#define AW_MEMBER_ZERO8(n)
#define AW_MEMBER_ZERO16(n)
#define AW_MEMBER_BLOB(n) aw_bytes_t n;
#define AW_MEMBER_ARGV(n) aw_list_t n;
#define AW_MEMBER_ENVS(n) aw_list_t n;
/* The encoder's struct: lists as arrays. */
#define AW_ENC_MEMBER_(kind, member, a, b) AW_ENC_MEMBER_##kind(member)
#define AW_ENC_MEMBER_U16(n) uint16_t n;
#define AW_ENC_MEMBER_U32(n) uint32_t n;
#define AW_ENC_MEMBER_U32L(n) uint32_t n;
#define AW_ENC_MEMBER_MASK32(n) uint32_t n;
#define AW_ENC_MEMBER_BLOB(n) aw_bytes_t n;
#define AW_ENC_MEMBER_ARGV(n) const aw_bytes_t *n; uint32_t n##_count;
#define AW_ENC_MEMBER_ENVS(n) const aw_bytes_t *n; uint32_t n##_count;

typedef struct aw_hello { AW_HELLO_FIELDS(AW_MEMBER_) } aw_hello_t;
typedef struct aw_host_hello { AW_HOST_HELLO_FIELDS(AW_MEMBER_) } aw_host_hello_t;
typedef struct aw_error { AW_ERROR_FIELDS(AW_MEMBER_) } aw_error_t; /* err: errno (Linux), 0 if none */
typedef struct aw_started { AW_STARTED_FIELDS(AW_MEMBER_) } aw_started_t;
typedef struct aw_exit { AW_EXEC_RESULT_FIELDS(AW_MEMBER_) } aw_exit_t; /* EXITED: the first five */
typedef struct aw_exec_req { AW_EXEC_FIELDS(AW_MEMBER_) } aw_exec_req_t;
typedef struct aw_exec_enc { AW_EXEC_FIELDS(AW_ENC_MEMBER_) } aw_exec_enc_t;
typedef struct aw_read_req { AW_READ_FIELDS(AW_MEMBER_) } aw_read_req_t;
typedef struct aw_read_res { AW_READ_RESULT_FIELDS(AW_MEMBER_) } aw_read_res_t;
typedef struct aw_write_req { AW_WRITE_FIELDS(AW_MEMBER_) } aw_write_req_t;
typedef struct aw_write_res { AW_WRITE_RESULT_FIELDS(AW_MEMBER_) } aw_write_res_t;
typedef struct aw_mkdir_req { AW_MKDIR_FIELDS(AW_MEMBER_) } aw_mkdir_req_t;
typedef struct aw_mkdir_res { AW_MKDIR_RESULT_FIELDS(AW_MEMBER_) } aw_mkdir_res_t;
typedef struct aw_list_req { AW_LIST_FIELDS(AW_MEMBER_) } aw_list_req_t;
typedef struct aw_list_res { AW_LIST_RESULT_FIELDS(AW_MEMBER_) } aw_list_res_t;
typedef struct aw_port_req { AW_PORT_WAIT_FIELDS(AW_MEMBER_) } aw_port_req_t;
typedef struct aw_port_res { AW_PORT_RESULT_FIELDS(AW_MEMBER_) } aw_port_res_t;
typedef struct aw_signal_req { AW_SIGNAL_FIELDS(AW_MEMBER_) } aw_signal_req_t;
typedef struct aw_signal_res { AW_SIGNAL_RESULT_FIELDS(AW_MEMBER_) } aw_signal_res_t;
typedef struct aw_alive_req { AW_GROUP_ALIVE_FIELDS(AW_MEMBER_) } aw_alive_req_t;
typedef struct aw_alive_res { AW_ALIVE_RESULT_FIELDS(AW_MEMBER_) } aw_alive_res_t;
typedef struct aw_watch_req { AW_WATCH_FIELDS(AW_MEMBER_) } aw_watch_req_t;
typedef struct aw_watch_res { AW_WATCH_RESULT_FIELDS(AW_MEMBER_) } aw_watch_res_t;
typedef struct aw_term_open_req { AW_TERM_OPEN_FIELDS(AW_MEMBER_) } aw_term_open_req_t;
typedef struct aw_term_open_enc { AW_TERM_OPEN_FIELDS(AW_ENC_MEMBER_) } aw_term_open_enc_t;
typedef struct aw_term_attach_req { AW_TERM_ATTACH_FIELDS(AW_MEMBER_) } aw_term_attach_req_t;
typedef struct aw_term_res { AW_TERM_RESULT_FIELDS(AW_MEMBER_) } aw_term_res_t;
typedef struct aw_term_resize_req { AW_TERM_RESIZE_FIELDS(AW_MEMBER_) } aw_term_resize_req_t;
typedef struct aw_term_signal_req { AW_TERM_SIGNAL_FIELDS(AW_MEMBER_) } aw_term_signal_req_t;
typedef struct aw_term_list_req { AW_TERM_LIST_FIELDS(AW_MEMBER_) } aw_term_list_req_t;
typedef struct aw_term_list_res { AW_TERM_LIST_RESULT_FIELDS(AW_MEMBER_) } aw_term_list_res_t;
typedef struct aw_term_list_enc { AW_TERM_LIST_RESULT_FIELDS(AW_ENC_MEMBER_) } aw_term_list_enc_t;

/* Decoders return AW_OK or a negative AW_ERR_*; encoders write a whole frame. */
#define AW_DECLARE_(name, type, sender, dec_t, enc_t, fields, check) \
  int aw_dec_##name(const uint8_t *p, size_t len, dec_t *m);         \
  int aw_put_##name(aw_writer_t *w, uint32_t id, const enc_t *m);
AW_MESSAGES(AW_DECLARE_)
#undef AW_DECLARE_

/* ---- framing, by hand ---- */
int aw_dec_window(const uint8_t *p, size_t len, uint32_t *increment); /* 1 ..= AW_MAX_WINDOW */
int aw_put_window(aw_writer_t *w, uint32_t id, uint8_t stream, uint32_t increment);
int aw_put_data(aw_writer_t *w, uint32_t id, uint8_t stream, uint8_t flags, const void *p, size_t len);
int aw_dec_ping(const uint8_t *p, size_t len); /* PING and PONG: just the length bound */
int aw_put_ping(aw_writer_t *w, uint8_t type, uint32_t id, const void *p, size_t len);
int aw_dec_cancel(const uint8_t *p, size_t len);
int aw_put_cancel(aw_writer_t *w, uint32_t id);

/* LIST records (inside DATA): type, reserved, u16 name length, mode, size, mtime, name. */
typedef struct aw_entry {
  uint8_t type;
  uint32_t mode;
  uint64_t size;
  int64_t mtime_ns;
  aw_bytes_t name; /* 1..AW_MAX_NAME bytes, no '/' and no NUL */
} aw_entry_t;
/* Records inside a LIST DATA payload: the next one from *p (advanced past it). Returns 1
 * and *e, 0 when *len is 0, or a negative AW_ERR_* (a record cut or invalid). */
int aw_entry_next(const uint8_t **p, size_t *len, aw_entry_t *e);
int aw_put_entry(aw_writer_t *w, const aw_entry_t *e); /* a record, no header */
size_t aw_entry_size(const aw_entry_t *e);

/* WATCH records (inside DATA): type, kind, u16 path length, path. The path is relative to
 * the workdir, 1..AW_MAX_PATH bytes, no NUL, no empty, "." or ".." component, no leading
 * or trailing '/'; an OVERFLOW record has kind NONE and no path (length 0). */
typedef struct aw_wevent {
  uint8_t type; /* AW_WEV_* */
  uint8_t kind; /* AW_WKIND_* */
  aw_bytes_t path;
} aw_wevent_t;
int aw_wevent_next(const uint8_t **p, size_t *len, aw_wevent_t *e); /* as aw_entry_next */
int aw_put_wevent(aw_writer_t *w, const aw_wevent_t *e);            /* a record, no header */
size_t aw_wevent_size(const aw_wevent_t *e);

/* A terminal's id: 1 ..= AW_MAX_TERM_ID bytes of [A-Za-z0-9._-], the first not '.' (so
 * it is a file name of its own, never "." or ".." or hidden). 1 or 0. */
int aw_term_id_ok(const uint8_t *p, size_t len);

/* 1 when p[0..len) holds a NUL byte. */
int aw_has_nul(const uint8_t *p, size_t len);

#endif
