/*
 * requests.c - freeing the runtime's plain requests (see requests.h).
 */
#include "runtime/requests.h"

#include <stdlib.h>
#include <string.h>

void file_write_req_free(file_write_req_t *req) {
  free(req->path);
  free(req->data);
  memset(req, 0, sizeof(*req));
}
