/*
 * requests.h - the runtime operations as plain C requests, read and validated from the
 * caller's options once (by the parse functions of exec_op.c, engine_files.c, listing.c
 * and engine_ports.c; startProcess's is in proc.h), so that any transport can carry them out: the
 * engine's operations are made from them, and the agent transport keeps them to fall back
 * on the engine when the agent cannot run.
 *
 * Owns: each request owns its strings and buffers (freed by its _free function).
 */
#ifndef SBX_REQUESTS_H
#define SBX_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

/* writeFile / writeTextFile: the bytes copied when the call was made. */
typedef struct file_write_req {
  char *path; /* normalized, relative, no trailing slash */
  uint8_t *data;
  size_t len;
} file_write_req_t;

void file_write_req_free(file_write_req_t *req);

/* waitForPort: a published container port, and how long and how often to look. */
typedef struct port_wait_req {
  int container_port;
  int host_port;
  int64_t timeout_ms;
  int64_t interval_ms;
} port_wait_req_t;

#endif
