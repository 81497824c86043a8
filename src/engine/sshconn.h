/*
 * sshconn.h - connections to an engine behind an ssh:// endpoint, made as the docker CLI
 * makes them: one `ssh` process per connection (found on PATH, so the user's ssh config,
 * keys, agent and known hosts apply) running `docker system dial-stdio` on the remote
 * side, whose stdin and stdout are a connected stream socket: one end of a socketpair
 * for an exec's hijacked connection (hijack.c), whose other end the exec owns; for
 * libcurl, the connection it made to a private unix socket (below). Closing the other
 * end ends the process (ssh sees end of file, the remote dial-stdio ends its connection).
 *
 * A new ssh session costs a login (measured here at 0.45-0.8 s, notes/engines.md), while a
 * request on an open one costs ~0.5 ms: libcurl keeps its connections (processes) open
 * for reuse, and since every exec consumes a connection of its own (the engine hijacks and
 * then closes it), a few spare connections are kept started ahead of use once the engine
 * has answered through this transport (ssh_transport_warm), replaced as they are taken and
 * ended after SSH_SPARE_IDLE_MS without use. ANVIA_SANDBOX_SSH_SPARES sets how many
 * (0 to 32; default SSH_SPARES_DEFAULT).
 *
 * A failed connection is explained by its process: when ssh (or the remote command) exits
 * with a failure, its stderr (the last SSH_STDERR_MAX bytes) becomes the message of a
 * docker_unavailable error ("host unreachable", "Permission denied (publickey)", "docker:
 * command not found").
 *
 * Owns: a transport owns its argument vector and its spare connections; a connection
 * owns its process, its stderr pipe and its timer, and is reference counted (the process
 * holds one reference until it has exited and its handles are closed; whoever keeps a
 * connection to explain a failure holds another). Every process, pipe and timer handle is
 * counted with io_handle_opened/closed; the I/O context's teardown ends every process
 * still running (io->ssh_conns). Processes are started in their own session (no terminal,
 * so ssh never prompts and a Ctrl-C aimed at the application does not reach them) and do
 * not keep Node's loop alive by themselves. No N-API here.
 */
#ifndef SBX_SSHCONN_H
#define SBX_SSHCONN_H

#include <stdint.h>

#include "base/err.h"
#include "engine/endpoint.h"
#include "engine/io.h"

#define SSH_SPARES_DEFAULT 2
#define SSH_SPARES_MAX 32
#define SSH_SPARE_IDLE_MS 30000
#define SSH_STDERR_MAX 2048
#define SSH_EXPLAIN_WAIT_MS 3000

typedef struct ssh_transport ssh_transport_t;
typedef struct ssh_conn ssh_conn_t;

/* NULL with err set (out of memory). Spawns nothing yet. */
ssh_transport_t *ssh_transport_new(io_t *io, const endpoint_t *ep, err_t *err);
/* Ends the spares; connections handed out live on until their sockets close. NULL is fine. */
void ssh_transport_free(ssh_transport_t *t);
/* The engine answered through this transport: keep spares from now on. */
void ssh_transport_warm(ssh_transport_t *t);
/*
 * libcurl's connections: the private unix socket libcurl is pointed at
 * (CURLOPT_UNIX_SOCKET_PATH). Each connection accepted there gets an ssh process of its
 * own, whose stdin and stdout are that connection: libcurl 7.88 cannot take an
 * already-connected socket (CURL_SOCKOPT_ALREADY_CONNECTED regressed in 7.88.0 and was
 * fixed in 8.0, curl/curl#10648; Debian 12 ships 7.88.1), and this way no byte of the
 * engine's traffic passes through this process either. The directory (0700, under
 * $TMPDIR or /tmp) is removed with the transport.
 */
const char *ssh_transport_socket_path(const ssh_transport_t *t);
/* The last ssh process started for libcurl if it started at or after `since_ns`
 * (uv_hrtime), with a reference; else NULL. What explains a libcurl failure. */
ssh_conn_t *ssh_transport_recent(ssh_transport_t *t, uint64_t since_ns);
/* 1 with err set when the last ssh for libcurl could not even be started (no `ssh`). */
int ssh_transport_spawn_failure(const ssh_transport_t *t, err_t *err);

/*
 * A connected stream socket to the engine: a spare if one is there, else a new ssh.
 * Returns the descriptor (the caller owns it and closes it when done), or -1 with err set.
 * When `conn` is not NULL it receives a reference to the connection (ssh_conn_unref).
 */
int ssh_transport_connect(ssh_transport_t *t, ssh_conn_t **conn, err_t *err);

void ssh_conn_unref(ssh_conn_t *c);

/* Waiting for a connection's process to end (it does once its socket is closed; after
 * SSH_EXPLAIN_WAIT_MS it is ended). fn runs from the loop, once, unless cancelled. */
typedef struct ssh_exit_waiter ssh_exit_waiter_t;
struct ssh_exit_waiter {
  void (*fn)(ssh_exit_waiter_t *w);
  ssh_exit_waiter_t *next;
  ssh_conn_t *conn;
};
/* 1 when the process has ended and all of its stderr is in (nothing to wait for). */
int ssh_conn_ended(const ssh_conn_t *c);
void ssh_conn_when_ended(ssh_conn_t *c, ssh_exit_waiter_t *w);
void ssh_conn_cancel_wait(ssh_exit_waiter_t *w);
/*
 * When the connection's process ended with a failure (a non-zero status or a signal it
 * was not sent by us), fills err with docker_unavailable "Docker engine is not reachable
 * at <display>: <ssh's stderr>" (details: endpoint, exitStatus, stderr) and returns 1;
 * else 0 (the connection ended normally or has not ended).
 */
int ssh_conn_failure(const ssh_conn_t *c, const char *display, err_t *err);

#endif
