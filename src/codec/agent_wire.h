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

/* ---- frame types ---- */
enum {
  /* agent -> host */
  AW_T_HELLO = 0x01,
  AW_T_PONG = 0x02,
  AW_T_STARTED = 0x03,
  AW_T_EXITED = 0x04,
  AW_T_RESULT = 0x05,
  AW_T_ERROR = 0x06,
  /* both directions */
  AW_T_DATA = 0x07,
  AW_T_WINDOW = 0x08,
  /* host -> agent */
  AW_T_HOST_HELLO = 0x20,
  AW_T_PING = 0x21,
  AW_T_CANCEL = 0x22,
  AW_T_EXEC = 0x23,
  AW_T_READ = 0x24,
  AW_T_WRITE = 0x25,
  AW_T_MKDIR = 0x26,
  AW_T_LIST = 0x27,
  AW_T_PORT_WAIT = 0x28,
  AW_T_SIGNAL = 0x29,
  AW_T_GROUP_ALIVE = 0x2A,
};

/* Header flags. */
#define AW_F_END 0x01u /* DATA only: the last frame of this stream */

/* Streams (header byte 6). 0 on every frame but DATA and WINDOW. */
enum {
  AW_S_NONE = 0,
  AW_S_IN = 1,  /* host -> agent: EXEC stdin, WRITE content */
  AW_S_OUT = 2, /* agent -> host: EXEC stdout, READ content, LIST records */
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

/* LIST record types. */
enum { AW_ENT_UNKNOWN = 0, AW_ENT_FILE = 1, AW_ENT_DIR = 2, AW_ENT_SYMLINK = 3, AW_ENT_OTHER = 4 };

/* ERROR kinds (PROTOCOL.md "Errors"). */
enum {
  AW_E_PROTOCOL = 1,         /* malformed frame or payload */
  AW_E_UNSUPPORTED = 2,      /* unknown request type or flag */
  AW_E_LIMIT = 3,            /* a bound exceeded; value = the bound */
  AW_E_INVALID = 4,          /* a field's value is not acceptable */
  AW_E_DUPLICATE_ID = 5,     /* id already in flight */
  AW_E_NOT_FOUND = 6,
  AW_E_SYMLINK = 7,          /* detail = the path up to the symlink */
  AW_E_NOT_REGULAR = 8,
  AW_E_IS_DIRECTORY = 9,
  AW_E_NOT_DIRECTORY = 10,
  AW_E_TOO_LARGE = 11,       /* value = the file's size */
  AW_E_PERMISSION = 12,
  AW_E_IO = 13,              /* any other errno */
  AW_E_SPAWN = 14,           /* stage says where; errno says why */
  AW_E_CANCELLED = 15,
  AW_E_LENGTH_MISMATCH = 16, /* value = bytes received */
  AW_E_RESOURCES = 17,       /* ENOMEM, EMFILE, ENFILE, EAGAIN from fork */
  AW_E_FLOW_CONTROL = 18,    /* more data than credit */
  AW_E_NO_WORKDIR = 19,      /* the workdir could not be opened */
  AW_E_OUTSIDE = 20,         /* absolute path or ".." */
  AW_E_READ_ONLY = 21,       /* EROFS */
  AW_E_NO_SPACE = 22,        /* ENOSPC, EDQUOT */
  AW_E_SHUTDOWN = 23,        /* the agent is exiting */
  AW_E_VERSION = 24,         /* no common protocol version */
  AW_E_KIND_MAX = 24,
};

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

/* ---- messages (PROTOCOL.md "Messages": field order there is the byte order here) ---- */

typedef struct aw_hello {
  uint32_t magic;
  uint16_t version_min, version_max;
  uint32_t max_payload, max_data, in_window, max_requests;
  uint32_t caps;
  uint32_t pid, uid, gid;
  uint32_t heartbeat_ms;
  aw_bytes_t build; /* <= AW_MAX_BUILD */
  aw_bytes_t arch;  /* <= AW_MAX_BUILD */
} aw_hello_t;

typedef struct aw_host_hello {
  uint16_t version_min, version_max;
  uint32_t flags; /* 0 */
} aw_host_hello_t;

typedef struct aw_error {
  uint16_t kind;
  uint8_t stage;
  int32_t err; /* errno (Linux numbering), 0 if none */
  uint64_t value;
  aw_bytes_t detail; /* <= AW_MAX_DETAIL, bytes (may be any bytes: path names) */
} aw_error_t;

typedef struct aw_started {
  uint32_t pid, pgid;
} aw_started_t;

/* EXITED carries how..code (8 bytes); exec RESULT carries all of it (32 bytes). */
typedef struct aw_exit {
  uint8_t how;    /* AW_EXIT_CODE or AW_EXIT_SIGNAL */
  uint8_t signal; /* 1..64 when how is AW_EXIT_SIGNAL, else 0 */
  uint8_t flags;  /* AW_EXITF_* */
  int32_t code;   /* exit status, or 128 + signal */
  uint64_t out_bytes, err_bytes, duration_us;
} aw_exit_t;

typedef struct aw_exec_req {
  uint32_t flags, timeout_ms, window;
  aw_bytes_t cwd; /* empty: the agent's workdir */
  aw_list_t argv;
  aw_list_t env;
} aw_exec_req_t;

/* The encoder's form of an EXEC request. */
typedef struct aw_exec_enc {
  uint32_t flags, timeout_ms, window;
  aw_bytes_t cwd;
  const aw_bytes_t *argv;
  uint32_t argc;
  const aw_bytes_t *env;
  uint32_t envc;
} aw_exec_enc_t;

typedef struct aw_read_req {
  uint64_t max_bytes; /* 0: no limit */
  uint32_t window, flags;
  aw_bytes_t path;
} aw_read_req_t;
typedef struct aw_read_res {
  uint64_t bytes;
  uint32_t mode, flags;
  int64_t mtime_ns;
} aw_read_res_t;

typedef struct aw_write_req {
  uint64_t length;
  uint32_t mode, flags; /* mode 0: 0644 */
  aw_bytes_t path;
} aw_write_req_t;
typedef struct aw_write_res {
  uint64_t bytes;
  uint32_t mode;
} aw_write_res_t;

typedef struct aw_mkdir_req {
  uint32_t mode, flags; /* mode 0: 0755 */
  aw_bytes_t path;
} aw_mkdir_req_t;
typedef struct aw_mkdir_res {
  uint8_t created;
} aw_mkdir_res_t;

typedef struct aw_list_req {
  uint32_t max_entries, window, flags;
  aw_bytes_t path;
} aw_list_req_t;
typedef struct aw_list_res {
  uint32_t count, flags;
} aw_list_res_t;
typedef struct aw_entry {
  uint8_t type;
  uint32_t mode;
  uint64_t size;
  int64_t mtime_ns;
  aw_bytes_t name; /* 1..AW_MAX_NAME bytes, no '/' and no NUL */
} aw_entry_t;

typedef struct aw_port_req {
  uint16_t port;
  uint16_t flags;
  uint32_t timeout_ms, interval_ms;
} aw_port_req_t;
typedef struct aw_port_res {
  uint8_t found;
  uint8_t families;
  uint32_t waited_ms;
} aw_port_res_t;

typedef struct aw_signal_req {
  int32_t pgid;
  uint8_t signal;
  uint8_t flags;
} aw_signal_req_t;
typedef struct aw_signal_res {
  uint8_t delivered;
  uint32_t count; /* processes signalled (tree mode), or 0/1 */
} aw_signal_res_t;

typedef struct aw_alive_req {
  int32_t pgid;
} aw_alive_req_t;
typedef struct aw_alive_res {
  uint8_t alive;
  uint32_t members; /* live (non-zombie) members, AW_UNKNOWN without /proc */
  uint32_t zombies;
} aw_alive_res_t;
#define AW_UNKNOWN 0xffffffffu

/*
 * Payload decoders: each returns AW_OK or a negative AW_ERR_* and checks every length and
 * count against its bound, every enum against its range, and that no byte is left over.
 * Encoders (aw_put_*) write a whole frame, header included, and return AW_OK or an error.
 */
int aw_dec_hello(const uint8_t *p, size_t len, aw_hello_t *m);
int aw_put_hello(aw_writer_t *w, const aw_hello_t *m);
int aw_dec_host_hello(const uint8_t *p, size_t len, aw_host_hello_t *m);
int aw_put_host_hello(aw_writer_t *w, const aw_host_hello_t *m);
int aw_dec_error(const uint8_t *p, size_t len, aw_error_t *m);
int aw_put_error(aw_writer_t *w, uint32_t id, const aw_error_t *m);
int aw_dec_window(const uint8_t *p, size_t len, uint32_t *increment);
int aw_put_window(aw_writer_t *w, uint32_t id, uint8_t stream, uint32_t increment);
int aw_put_data(aw_writer_t *w, uint32_t id, uint8_t stream, uint8_t flags, const void *p, size_t len);
int aw_dec_ping(const uint8_t *p, size_t len); /* PING and PONG: just the length bound */
int aw_put_ping(aw_writer_t *w, uint8_t type, uint32_t id, const void *p, size_t len);
int aw_dec_cancel(const uint8_t *p, size_t len);
int aw_put_cancel(aw_writer_t *w, uint32_t id);

int aw_dec_started(const uint8_t *p, size_t len, aw_started_t *m);
int aw_put_started(aw_writer_t *w, uint32_t id, const aw_started_t *m);
int aw_dec_exited(const uint8_t *p, size_t len, aw_exit_t *m);
int aw_put_exited(aw_writer_t *w, uint32_t id, const aw_exit_t *m);
int aw_dec_exec_result(const uint8_t *p, size_t len, aw_exit_t *m);
int aw_put_exec_result(aw_writer_t *w, uint32_t id, const aw_exit_t *m);
int aw_dec_exec(const uint8_t *p, size_t len, aw_exec_req_t *m);
int aw_put_exec(aw_writer_t *w, uint32_t id, const aw_exec_enc_t *m);

int aw_dec_read(const uint8_t *p, size_t len, aw_read_req_t *m);
int aw_put_read(aw_writer_t *w, uint32_t id, const aw_read_req_t *m);
int aw_dec_read_result(const uint8_t *p, size_t len, aw_read_res_t *m);
int aw_put_read_result(aw_writer_t *w, uint32_t id, const aw_read_res_t *m);

int aw_dec_write(const uint8_t *p, size_t len, aw_write_req_t *m);
int aw_put_write(aw_writer_t *w, uint32_t id, const aw_write_req_t *m);
int aw_dec_write_result(const uint8_t *p, size_t len, aw_write_res_t *m);
int aw_put_write_result(aw_writer_t *w, uint32_t id, const aw_write_res_t *m);

int aw_dec_mkdir(const uint8_t *p, size_t len, aw_mkdir_req_t *m);
int aw_put_mkdir(aw_writer_t *w, uint32_t id, const aw_mkdir_req_t *m);
int aw_dec_mkdir_result(const uint8_t *p, size_t len, aw_mkdir_res_t *m);
int aw_put_mkdir_result(aw_writer_t *w, uint32_t id, const aw_mkdir_res_t *m);

int aw_dec_list(const uint8_t *p, size_t len, aw_list_req_t *m);
int aw_put_list(aw_writer_t *w, uint32_t id, const aw_list_req_t *m);
int aw_dec_list_result(const uint8_t *p, size_t len, aw_list_res_t *m);
int aw_put_list_result(aw_writer_t *w, uint32_t id, const aw_list_res_t *m);
/* Records inside a LIST DATA payload: the next one from *p (advanced past it). Returns 1
 * and *e, 0 when *len is 0, or a negative AW_ERR_* (a record cut or invalid). */
int aw_entry_next(const uint8_t **p, size_t *len, aw_entry_t *e);
int aw_put_entry(aw_writer_t *w, const aw_entry_t *e); /* a record, no header */
size_t aw_entry_size(const aw_entry_t *e);

int aw_dec_port_wait(const uint8_t *p, size_t len, aw_port_req_t *m);
int aw_put_port_wait(aw_writer_t *w, uint32_t id, const aw_port_req_t *m);
int aw_dec_port_result(const uint8_t *p, size_t len, aw_port_res_t *m);
int aw_put_port_result(aw_writer_t *w, uint32_t id, const aw_port_res_t *m);

int aw_dec_signal(const uint8_t *p, size_t len, aw_signal_req_t *m);
int aw_put_signal(aw_writer_t *w, uint32_t id, const aw_signal_req_t *m);
int aw_dec_signal_result(const uint8_t *p, size_t len, aw_signal_res_t *m);
int aw_put_signal_result(aw_writer_t *w, uint32_t id, const aw_signal_res_t *m);

int aw_dec_group_alive(const uint8_t *p, size_t len, aw_alive_req_t *m);
int aw_put_group_alive(aw_writer_t *w, uint32_t id, const aw_alive_req_t *m);
int aw_dec_alive_result(const uint8_t *p, size_t len, aw_alive_res_t *m);
int aw_put_alive_result(aw_writer_t *w, uint32_t id, const aw_alive_res_t *m);

/* 1 when p[0..len) holds a NUL byte. */
int aw_has_nul(const uint8_t *p, size_t len);

#endif
