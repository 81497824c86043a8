/*
 * io.h - the I/O context of one JavaScript environment: the libuv loop Node runs, the
 * libcurl transfers driven on it, and the bookkeeping every handle of ours goes through
 * so that the environment can be torn down without leaving a handle open.
 *
 * Owns: the transfer loop (xfer.h), the list of teardown hooks, and the count of libuv
 * handles and requests still open. Modules of the engine layer that keep per-context state
 * (the exec tasks of exec_task.c) keep it here and register a hook that ends it at close.
 *
 * Lifetime: io_new() when the environment starts; io_close() when it ends: `closing` is
 * set (nothing new may start), the hooks run newest first, the transfers are torn down,
 * and once the last handle is closed the context is freed and `closed` is called.
 */
#ifndef SBX_IO_H
#define SBX_IO_H

#include <uv.h>

#include "engine/xfer.h"

typedef struct io io_t;
typedef void (*io_hook_fn)(io_t *io);

typedef struct io_hook {
  io_hook_fn fn;
  struct io_hook *next;
} io_hook_t;

struct exec_task;
struct ssh_conn;
struct ssh_transport;
struct agent_image;
struct agent_conn;

struct io {
  uv_loop_t *uv;
  xfer_loop_t *xfers;
  int live_handles; /* libuv handles and requests of ours not yet closed */
  int closing;
  int xfers_closed;
  io_hook_t *hooks;
  struct exec_task *exec_tasks; /* live exec tasks: owned by engine/exec_task.c */
  struct ssh_conn *ssh_conns;           /* ssh:// processes still running: engine/sshconn.c */
  struct ssh_transport *ssh_transports; /* ssh:// endpoints' transports: engine/sshconn.c */
  char *agent_dir;                      /* owned by engine/agent_image.c */
  struct agent_image *agent_images;     /* owned by engine/agent_image.c */
  struct agent_conn *agent_conns;       /* live agent connections: engine/agent_conn.c's list */
  void (*closed)(void *arg);
  void *closed_arg;
};

/* NULL when out of memory or libcurl cannot make a multi handle. */
io_t *io_new(uv_loop_t *uv);
/* Registers `fn` to run at io_close (once: a second call with the same fn does nothing).
 * Returns 0, or -1 when out of memory. */
int io_on_close(io_t *io, io_hook_fn fn);
/* Every uv handle or request opened by the engine layer is counted. */
void io_handle_opened(io_t *io);
void io_handle_closed(io_t *io);
/* Starts the teardown described above; `closed` runs once everything is closed. */
void io_close(io_t *io, void (*closed)(void *arg), void *arg);

#endif
