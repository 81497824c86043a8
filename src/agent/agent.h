/*
 * agent.h - the in-container agent's shared types: the global state, the connection,
 * requests and their streams, typed errors; and the functions each file exports to the
 * others, file by file from the bottom layer up.
 *
 * Owns: nothing (declarations only). The agent is one thread around one poll() loop
 * (main.c). Each request is owned by the request table (req.c) from its first frame to
 * its terminal frame; each file's comment says which part of a request it owns.
 *
 * The files are layers: a file calls only functions of the layers below it, so no two
 * files call each other, even through others (scripts/check-layers.mjs reads the calls
 * from the object files and fails on a cycle). Bottom first:
 *
 *   state.c                          the global state `g`
 *   util.c procfs.c                  clocks, logs, descriptors, typed errors; /proc parsers
 *   diag.c                           the kernel's sock_diag answer: listening TCP ports
 *   ptree.c walk.c shutdown.c        process trees; paths beneath the workdir; the start
 *                                    of the exit path
 *   out.c                            the output queue, frames, flushing
 *   req.c                            the request table, credit windows
 *   exec.c files.c ports.c procs.c   the operations
 *   watch.c                          WATCH (above files.c, whose workdir descriptor it uses)
 *   keeper.c                         a terminal's keeper process (above exec.c, whose spawn
 *                                    it uses) and its protocol
 *   term.c                           the TERM_* requests: the agent's side of the keepers
 *   ops.c                            a request's type -> the operation's file; the scheduler
 *   conn.c                           reading, checking and dispatching the host's frames
 *   main.c                           the start, the poll() loop, timers, the exit
 *   init.c                           process 1 of a sandbox with limits (`init`): apart
 *                                    from the agent, called only by main.c
 *
 * One call runs upwards, through a pointer and not by name: the exit path can start below
 * every operation (a full output queue, out.c), and it ends every request, which takes
 * each type's own code; shutdown_begin (shutdown.c) does that through the function main.c
 * installs at start (op_end_all, ops.c).
 */
#ifndef ANVIA_AGENT_H
#define ANVIA_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <dirent.h>
#include <time.h>

#include "agent_wire.h"

/* ---- sizes of the agent's own buffers ---- */
#define AG_OUT_HIGH (128u * 1024u)       /* data frames are queued only below this */
#define AG_OUT_PAUSE_IN (1024u * 1024u)  /* host frames are not processed above this */
#define AG_OUT_CAP (8u * 1024u * 1024u)  /* the output queue never grows past this */
#define AG_KILL_GRACE_MS 500u            /* output kept flowing after a killed leader is reaped */
#define AG_SHUTDOWN_MS 2000u             /* the exit path's bound for flushing results */
#define AG_MAX_STDIN_BUF AW_IN_WINDOW    /* exec stdin bytes held for a child */
#define AG_MAX_TEMP_TRIES 16

/* ---- typed errors ---- */
typedef struct ag_err {
  uint16_t kind;
  uint8_t stage;
  int err;
  uint64_t value;
  size_t detail_len;
  char detail[AW_MAX_PATH + 256];
} ag_err_t;

void ag_err_set(ag_err_t *e, uint16_t kind, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* kind from an errno: ENOENT not_found, EACCES/EPERM permission, ENOMEM/EMFILE/ENFILE
 * resources, EROFS read_only, ENOSPC/EDQUOT no_space, ENOTDIR not_directory, EISDIR
 * is_directory, ELOOP symlink, ENAMETOOLONG limit, else io. */
uint16_t ag_err_kind_of(int errnum);
/* A request's payload that did not decode (rc, an AW_ERR_*): limit for a bound, invalid
 * for a value or a NUL, else protocol; detail "WHAT: reason". */
void ag_err_decode(ag_err_t *e, int rc, const char *what);
/* detail = raw bytes (a path), truncated to fit. */
void ag_err_detail_bytes(ag_err_t *e, const void *p, size_t len);

/* ---- the output queue (out.c) ---- */
typedef struct outq {
  uint8_t *buf;
  size_t head, len, cap;
} outq_t;

/* ---- paths (walk.c) ---- */
typedef struct agpath {
  char buf[AW_MAX_PATH + 1];  /* components, each NUL-terminated, in order */
  uint16_t off[AW_MAX_DEPTH]; /* start of each component in buf */
  uint16_t n;                 /* number of components; 0 is the workdir itself */
} agpath_t;

/* ---- requests ---- */
enum { ST_NONE = 0 };

typedef struct ostream {
  int active;      /* the source may still produce data */
  int fd;          /* pipe or file being read; -1 when closed */
  uint8_t stream;  /* AW_S_OUT or AW_S_ERR */
  uint32_t credit; /* bytes the host allows */
  uint64_t sent;
  int ready; /* poll said readable (pipes); files and listings are always ready */
  int hup;   /* pipes: writers gone but bytes left and no credit to read them */
} ostream_t;

typedef struct instream {
  uint32_t outstanding; /* credit the host still has */
  uint32_t to_return;   /* consumed, not yet granted back */
  uint64_t received;
  int ended; /* END seen */
  int dead;  /* consumer gone: data is dropped (and credited) */
} instream_t;

typedef struct exec_state {
  pid_t pid;
  int detached;
  int reaped;
  int status;  /* wait status once reaped */
  int killed;  /* tree ended by the agent */
  int exit_sent;
  uint8_t flags; /* AW_EXITF_* */
  int64_t start_ms, start_us, reaped_ms, reaped_us;
  int64_t deadline_ms; /* timeout, 0 none */
  int64_t grace_ms;    /* after a kill: when the output pipes are closed regardless */
  int stdin_fd;        /* -1 when closed or none */
  uint8_t *stdin_buf;
  size_t stdin_len;
} exec_state_t;

typedef struct read_state {
  uint64_t max_bytes;
  uint32_t mode;
  int64_t mtime_ns;
  int truncated;
} read_state_t;

typedef struct write_state {
  int parent_fd;
  int fd;
  uint64_t length;
  uint32_t mode, flags;
  char tmp[64];
  char *name; /* final component, malloc'd */
} write_state_t;

typedef struct list_state {
  DIR *dir;
  uint32_t max_entries, count;
  int truncated;
  uint8_t pending[AW_ENTRY_MAX]; /* a record that did not fit in the last frame */
  size_t pending_len;
} list_state_t;

/* WATCH: its state is watch.c's alone (inotify, the map of watched directories, the
 * buffers); the request holds a pointer to it. */
typedef struct watch_state watch_state_t;
/* TERM_*: the connection to a terminal's keeper and its buffers, term.c's alone. */
typedef struct term_state term_state_t;

typedef struct port_state {
  uint16_t port, flags;
  int64_t start_ms, deadline_ms, next_ms;
  uint32_t interval_ms;
} port_state_t;

typedef struct req req_t;
struct req {
  req_t *prev, *next; /* the table's list, in arrival order */
  uint32_t id;        /* 0 once the host was told the end (kept only to reap a child) */
  uint8_t type;
  int finished; /* freed by req_sweep */
  ostream_t out[2]; /* [0] AW_S_OUT, [1] AW_S_ERR */
  int nout;
  instream_t in;
  int has_in;
  union {
    exec_state_t exec;
    read_state_t read;
    write_state_t write;
    list_state_t list;
    port_state_t port;
    watch_state_t *watch;
    term_state_t *term;
  } u;
};

/* ---- global state (state.c) ---- */
typedef struct agent {
  /* the connection: the descriptors (main.c), the input (conn.c), the output (out.c) */
  int in_fd, out_fd;
  uint8_t *inbuf;
  size_t in_len;
  int in_eof;
  int in_dead; /* a framing error: nothing more is parsed */
  int hello_done;
  uint32_t caps; /* AW_CAP_SUBREAPER, AW_CAP_NET_TCP (the others from the flags below) */
  outq_t out;
  int out_broken;
  int sigfd;
  /* configuration (main.c; the workdir's descriptor files.c, the environment exec.c) */
  char *workdir;
  int workdir_fd; /* -1 until opened */
  int use_openat2;
  int proc_ok;
  uint32_t heartbeat_ms;
  char *term_dir;   /* where terminals' keepers listen (--term-dir), NULL: the default */
  char **base_env; /* inherited environment, our own variables removed */
  size_t base_envc;
  /* lifetime (conn.c the last frame's time, shutdown.c the rest) */
  int64_t last_rx_ms;
  int shutting_down;
  int exit_code;
  int64_t shutdown_deadline_ms;
  /* requests (req.c) */
  req_t *head, *tail;
  size_t nreq;     /* requests the host can still address */
  size_t nrecords; /* every record, including ones kept only to reap */
  req_t *rr;       /* where the next scheduling round starts */
  uint32_t tmp_seq;
  pid_t self;
} agent_t;

extern agent_t g;

/* ---- util.c ---- */
int64_t util_now_ms(void);
int64_t util_now_us(void);
int64_t util_realtime_ns_of(const struct timespec *ts);
void util_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int util_set_nonblock(int fd);
void util_close_fd(int *fd);
ssize_t util_write_all(int fd, const void *p, size_t len); /* blocking fd */
/* Closes every descriptor of the process but fds[0..n) (a forked child about to live on). */
void util_close_all_except(const int *fds, int n);

/* ---- procfs.c: parsers of /proc text ---- */
typedef struct proc_stat {
  pid_t pid, ppid, pgrp, session;
  char state;
} proc_stat_t;
/* Parses the text of /proc/<pid>/stat. 0 or -1. */
int procfs_stat_parse(const char *text, size_t len, proc_stat_t *out);
/* A set of TCP ports: a bit per port. */
#define PORT_MAP_BYTES 8192
static inline void procfs_port_set(uint8_t *map, uint16_t port) { map[port >> 3] |= (uint8_t)(1u << (port & 7)); }
static inline int procfs_port_has(const uint8_t *map, uint16_t port) { return (map[port >> 3] >> (port & 7)) & 1; }
/* Scans /proc/net/tcp-format text for a listening socket (state 0A) on `port`.
 * Incremental: feed chunks; partial lines are carried in `carry`. */
typedef struct tcp_scan {
  char carry[512];
  size_t carry_len;
  int overlong;
  uint16_t port;       /* the port looked for: `found` */
  int found;
  uint8_t *listening;  /* optional PORT_MAP_BYTES map: every listening port is set */
} tcp_scan_t;
void procfs_tcp_scan_init(tcp_scan_t *s, uint16_t port);
void procfs_tcp_scan_feed(tcp_scan_t *s, const char *p, size_t len);
void procfs_tcp_scan_end(tcp_scan_t *s);

/*
 * The sock_diag ABI (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h: stable, and
 * not among musl's headers): a dump request for one address family's TCP sockets in some
 * states, and the kernel's answer, one inet_diag_msg per socket.
 */
#define DIAG_NETLINK_SOCK_DIAG 4
#define DIAG_SOCK_DIAG_BY_FAMILY 20
#define DIAG_NLMSG_ERROR 2
#define DIAG_NLMSG_DONE 3
#define DIAG_NLM_F_REQUEST 0x1
#define DIAG_NLM_F_DUMP 0x300
#define DIAG_TCP_LISTEN 10
typedef struct diag_nlhdr {
  uint32_t len;
  uint16_t type, flags;
  uint32_t seq, pid;
} diag_nlhdr_t;
typedef struct diag_sockid {
  uint16_t sport, dport; /* network byte order */
  uint32_t src[4], dst[4];
  uint32_t ifindex;
  uint32_t cookie[2];
} diag_sockid_t;
typedef struct diag_req {
  uint8_t family, protocol, ext, pad;
  uint32_t states; /* bit per TCP state */
  diag_sockid_t id;
} diag_req_t;
typedef struct diag_msg {
  uint8_t family, state, timer, retrans;
  diag_sockid_t id;
  uint32_t expires, rqueue, wqueue, uid, inode;
} diag_msg_t;
/*
 * Parses one datagram of a sock_diag dump: the local port of every socket in state LISTEN
 * is set in `listening` (PORT_MAP_BYTES). 1 when the dump ended (NLMSG_DONE), 0 when
 * more is to come, -1 with *err set: the kernel's errno (NLMSG_ERROR), or EPROTO for bytes
 * that are not whole netlink messages. Pure: bounded by `len`, nothing kept.
 */
int procfs_diag_parse(const uint8_t *p, size_t len, uint8_t *listening, int *err);

/* ---- diag.c: listening TCP ports from the kernel (sock_diag) ---- */
/* Sets in `listening` (PORT_MAP_BYTES, cleared first) the port of every TCP socket in state
 * LISTEN of `family` (AF_INET or AF_INET6) in the agent's network namespace. 0, or -1
 * with *err (EPROTONOSUPPORT where the kernel or gVisor has no sock_diag, or qemu-user
 * does not carry it): the caller reads /proc/net/tcp instead. */
int diag_listening(int family, uint8_t *listening, int *err);

/* ---- ptree.c: process trees ---- */
/* Freezes (SIGSTOP) and signals the group `pgid`, every process of the session `pgid`,
 * and their descendants by parent links; continues them afterwards unless sig is
 * SIGKILL or SIGSTOP. Returns the number of processes signalled (the group counts 1 when
 * /proc cannot be read), or -1 with errno from kill(). */
int ptree_signal(pid_t pgid, int sig, int freeze);
/* Live and zombie members of a process group, by /proc; -1 if /proc cannot be read. */
int ptree_group_members(pid_t pgid, uint32_t *live, uint32_t *zombies);

/* ---- walk.c: paths beneath the workdir ---- */
int walk_path_parse(const uint8_t *p, size_t len, agpath_t *out, ag_err_t *e);
/* The directory of components [0, upto): an O_PATH fd, or -1 with e set. With `create`,
 * missing components are made with mkdirat(mode); *created says whether the last was. */
int walk_dir(int wdfd, const agpath_t *path, size_t upto, int create, mode_t mode, int use_openat2,
             int *created, ag_err_t *e);
/* Opens the whole path with `flags` (O_NOFOLLOW added), no symlink followed anywhere. */
int walk_open(int wdfd, const agpath_t *path, int flags, int use_openat2, ag_err_t *e);
/* The path's first `upto` components joined by '/', into buf (NUL-terminated). */
size_t walk_path_join(const agpath_t *path, size_t upto, char *buf, size_t cap);
int walk_openat2_probe(void);

/* ---- shutdown.c: the start of the exit path ---- */
/* Starts the exit path once (later calls do nothing): new requests are refused, every
 * request but a detached EXEC is ended (AW_E_SHUTDOWN) by the installed function, and
 * the output has AG_SHUTDOWN_MS to drain. `why` is logged unless code is 0. */
void shutdown_begin(int code, const char *why);
/* Installs what shutdown_begin calls to end the requests (main.c: op_end_all). */
void shutdown_install(void (*end_requests)(void));

/* ---- out.c: the output queue and the frames the agent sends ---- */
uint8_t *out_reserve(size_t n); /* NULL when the queue would pass AG_OUT_CAP */
void out_commit(size_t n);
int out_flush(void); /* 0, or -1 when the host side is gone */
void out_hangup(void); /* poll saw stdout hang up */
void out_hello(void);
void out_pong(uint32_t id, const uint8_t *p, size_t len);
void out_error(uint32_t id, const ag_err_t *e);
/* `rc`, a request decoder's status for request `what` ("TERM_SIGNAL"): 0 when AW_OK;
 * else the request is answered with the error it names (ag_err_decode) and 1 returned. */
int out_refused(uint32_t id, int rc, const char *what);
void out_error_simple(uint32_t id, uint16_t kind, int errnum, const char *detail);
void out_window(uint32_t id, uint8_t stream, uint32_t inc);
/* Reserves up to `max` bytes of the queue for one frame: 1, or 0 when the queue is over
 * (the connection is then being shut down). out_frame_end commits what `rc == AW_OK` wrote. */
int out_frame_begin(aw_writer_t *w, size_t max);
void out_frame_end(aw_writer_t *w, int rc);

/* ---- req.c: the request table ---- */
req_t *req_new(uint32_t id, uint8_t type);
req_t *req_find(uint32_t id);
/* The host was told this request's end: its id is free again. */
void req_detach_id(req_t *r);
/* The request is over: its id is detached and its record freed at the next sweep. */
void req_finish(req_t *r);
/* Ends a request whose type holds nothing more to undo: AW_E_CANCELLED or AW_E_SHUTDOWN
 * is reported as an ERROR, 0 reports nothing (an ERROR was already sent). */
void req_end(req_t *r, uint16_t why);
/* Unlinks and frees a finished record (its type's file has released what it held). */
void req_free(req_t *r);
void req_to_tail(req_t *r); /* the scheduler served it: last in the next round */
/* DATA from the host, checked against the request's input and credit and counted: 0, or
 * -1 with e set (the request must fail). */
int req_take_data(req_t *r, const aw_header_t *h, ag_err_t *e);
/* WINDOW from the host for one of the request's output streams: 0, or -1 with e set. */
int req_take_window(req_t *r, const aw_header_t *h, uint32_t inc, ag_err_t *e);
int req_source_ready(const req_t *r, int which); /* active, with credit, still addressed */
void req_in_consumed(req_t *r, uint32_t n, int drained);

/* ---- exec.c: EXEC ---- */
void exec_start(uint32_t id, const uint8_t *p, size_t len);
void exec_on_reaped(req_t *r, int status);
void exec_check(req_t *r); /* RESULT once reaped and the output is closed */
void exec_timer(req_t *r, int64_t now);
void exec_kill(req_t *r, uint8_t why_flag);
/* Ends an EXEC: its tree is killed and its pipes closed; AW_E_CANCELLED or AW_E_SHUTDOWN
 * is reported in the RESULT's flags, once the child is reaped; 0 reports nothing. */
void exec_cancel(req_t *r, uint16_t why);
void exec_stdin_ready(req_t *r);
void exec_stdin_data(req_t *r, const uint8_t *p, size_t len, int end);
int exec_produce(req_t *r, int which); /* one DATA frame from a pipe */
void exec_close(req_t *r);
int exec_ready(const req_t *r, int which); /* the pipe is known readable */
int64_t exec_due(const req_t *r);          /* its timeout or its grace, 0: none */
int exec_detached(const req_t *r);
int exec_env_init(char **envp);
void exec_reap_children(void);
/* At exit: a child that reads and drops the detached commands' output. */
void exec_spawn_drainer(void);
/* Starts m's command (its argv, cwd and env over the agent's environment and `preset`, a
 * NAME=value or NULL) in a session of its own, with in/out/err as its 0, 1 and 2; with
 * `tty`, in_fd is a terminal that becomes its controlling terminal. The caller's
 * descriptors stay open. The pid, or -1 with e set (spawn_failed with its stage, as for
 * an EXEC). */
pid_t exec_spawn(const aw_exec_req_t *m, const char *preset, int in_fd, int out_fd, int err_fd, int tty,
                 ag_err_t *e);

/* ---- files.c: READ, WRITE, MKDIR, LIST ---- */
int files_workdir(ag_err_t *e); /* the workdir fd, opened on first use */
void files_read_start(uint32_t id, const uint8_t *p, size_t len);
void files_write_start(uint32_t id, const uint8_t *p, size_t len);
void files_write_data(req_t *r, const uint8_t *p, size_t len, int end);
void files_mkdir_run(uint32_t id, const uint8_t *p, size_t len);
void files_list_start(uint32_t id, const uint8_t *p, size_t len);
int files_read_produce(req_t *r, int which); /* which: 0, its one stream */
int files_list_produce(req_t *r, int which);
int files_list_ready(const req_t *r, int which); /* credit for the whole record it holds */
/* Ends a READ, WRITE or LIST (a WRITE's temporary file is removed), as req_end. */
void files_cancel(req_t *r, uint16_t why);
void files_close(req_t *r);

/* ---- ports.c: PORT_WAIT ---- */
void port_start(uint32_t id, const uint8_t *p, size_t len);
void port_timer(req_t *r, int64_t now);
int64_t port_due(const req_t *r);

/* ---- procs.c: SIGNAL and GROUP_ALIVE ---- */
void procs_signal_run(uint32_t id, const uint8_t *p, size_t len);
void procs_alive_run(uint32_t id, const uint8_t *p, size_t len);

/* ---- watch.c: WATCH ---- */
void watch_start(uint32_t id, const uint8_t *p, size_t len);
int watch_produce(req_t *r, int which);
/* Records held and credit for the first, or inotify events to convert. */
int watch_ready(const req_t *r, int which);
void watch_closed(req_t *r); /* the poll loop closed its descriptor: the request fails */
void watch_cancel(req_t *r, uint16_t why); /* as req_end */
void watch_close(req_t *r);

/* ---- keeper.c: a terminal's keeper process and its protocol (term.c speaks it) ---- */
#define KW_HEADER 8u
#define KW_OUT_MAX 16384u                  /* output bytes in one OUT, input bytes in one INPUT */
#define KW_MAX_PAYLOAD (KW_OUT_MAX + 16u)  /* any keeper message */
#define KW_INFO_LEN 32u
#define KW_ATTACH_LEN 12u
#define KW_RESIZE_LEN 4u
#define KW_ACK_LEN 5u
enum {
  KW_ATTACH = 1, /* client -> keeper: u32 flags (AW_TERM_*), u64 since */
  KW_INPUT = 2,  /* bytes for the terminal, 1 ..= KW_OUT_MAX */
  KW_RESIZE = 3, /* u16 cols, u16 rows: answered by INFO */
  KW_SIGNAL = 4, /* u8 signal: answered by ACK */
  KW_SYNC = 5,   /* answered by INFO once the input before it is in the terminal */
  KW_INFO = 0x41, /* keeper -> client: keeper_info_t */
  KW_OUT = 0x42,  /* u64 offset, then 1 ..= KW_OUT_MAX bytes */
  KW_END = 0x43,  /* keeper_info_t, the terminal's last */
  KW_ACK = 0x44,  /* u8 delivered, u32 processes signalled */
  KW_FAIL = 0x45, /* the keeper could not start: u16 kind, u8 stage, u8 0, u32 errno, u64 value, detail */
};
typedef struct keeper_info {
  uint32_t pid;
  uint16_t cols, rows;
  uint64_t head, tail; /* bytes the program wrote in all; the oldest still kept */
  uint8_t ended, how, signal, core;
  int32_t code;
} keeper_info_t;
size_t keeper_msg_header(uint8_t *out, uint8_t kind, uint32_t len); /* KW_HEADER bytes */
/* A whole message at buf: 1 with kind, payload and length; 0 more bytes needed; -1 a
 * header no keeper or client sends (the connection is dropped). */
int keeper_msg_parse(const uint8_t *buf, size_t len, uint8_t *kind, const uint8_t **payload, uint32_t *plen);
/* The payloads, each layout written here alone (big-endian). */
size_t keeper_attach_put(uint8_t *out, uint32_t flags, uint64_t since); /* KW_ATTACH_LEN bytes */
size_t keeper_resize_put(uint8_t *out, uint16_t cols, uint16_t rows);   /* KW_RESIZE_LEN bytes */
void keeper_u64_put(uint8_t *out, uint64_t v);                          /* an OUT's offset */
uint64_t keeper_u64_get(const uint8_t *p);
int keeper_ack_get(const uint8_t *p, uint32_t len, uint8_t *delivered, uint32_t *count); /* 0 or -1 */
size_t keeper_info_put(uint8_t *out, const keeper_info_t *k); /* KW_INFO_LEN bytes */
int keeper_info_get(const uint8_t *p, uint32_t len, keeper_info_t *k); /* 0, or -1: not an INFO */
size_t keeper_fail_put(uint8_t *out, size_t cap, const ag_err_t *e);
int keeper_fail_get(const uint8_t *p, uint32_t len, ag_err_t *e);
/* The keeper process (term.c forks it): never returns. client_fd is its first client's
 * connection, dir_fd and dir the terminals' directory, name the terminal's id. */
void keeper_main(int client_fd, int dir_fd, const char *dir, const char *name, const aw_term_open_req_t *m)
    __attribute__((noreturn));

/* ---- term.c: TERM_OPEN, TERM_ATTACH, TERM_RESIZE, TERM_SIGNAL, TERM_LIST ---- */
void term_open_start(uint32_t id, const uint8_t *p, size_t len);
void term_attach_start(uint32_t id, const uint8_t *p, size_t len);
void term_resize_start(uint32_t id, const uint8_t *p, size_t len);
void term_signal_start(uint32_t id, const uint8_t *p, size_t len);
void term_list_run(uint32_t id, const uint8_t *p, size_t len);
void term_data(req_t *r, const uint8_t *p, size_t len, int end);
int term_produce(req_t *r, int which);
int term_ready(const req_t *r, int which);
int term_input_fd(const req_t *r);
void term_input_ready(req_t *r);
void term_closed(req_t *r); /* the keeper hung up */
void term_cancel(req_t *r, uint16_t why);
void term_close(req_t *r);

/* ---- ops.c: what depends on a request's type ---- */
/* Ends a request: AW_E_CANCELLED or AW_E_SHUTDOWN is reported (exec: as a RESULT with
 * its flag, once the child is reaped); 0 reports nothing (an ERROR was already sent). */
void op_cancel(req_t *r, uint16_t why);
/* Sends ERROR and ends the request. */
void op_fail(req_t *r, const ag_err_t *e);
/* DATA from the host, to the request's consumer (a command's stdin, a file). */
void op_data(req_t *r, const aw_header_t *h, const uint8_t *p);
/* A request's first frame, to its type's file: 1, or 0 for a type that is not a request. */
int op_start(uint32_t id, uint8_t type, const uint8_t *p, size_t len);
/* A source with credit whose type has something to send now (a pipe known readable, a
 * listing's whole next record). */
int op_source_ready(req_t *r, int which);
int op_detached(const req_t *r); /* survives the agent's exit (a detached EXEC) */
int op_polled(const req_t *r);   /* its output descriptors belong in the poll set */
/* The descriptor its input waits to be written to (a command's stdin pipe with bytes
 * held), or -1: main.c polls it for POLLOUT and calls op_input_ready when it is. */
int op_input_fd(const req_t *r);
void op_input_ready(req_t *r);
/* main.c closed one of its polled output descriptors at its end (a pipe hung up). */
void op_output_closed(req_t *r);
int64_t op_next_due(void);       /* the earliest time a request's timer wants, 0: none */
void op_run_timers(int64_t now);
void op_schedule_output(void); /* round-robin data frames into the queue */
void op_sweep(void);        /* releases and frees the finished records */
void op_end_all(void);      /* the exit path: ends every request but a detached EXEC */

/* ---- conn.c: the host's frames ---- */
void conn_read(void); /* read and dispatch what the host sent */
void conn_dispatch_pending(void);

/* ---- init.c: process 1 of a sandbox with limits ---- */
/* argv: the binary, "init", IDLE_MS, MAX_MS. Returns the exit status; never touches `g`. */
int init_main(int argc, char **argv);

#endif
