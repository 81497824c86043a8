/*
 * diag.c - the listening TCP ports of the agent's network namespace, asked of the kernel
 * through a NETLINK_SOCK_DIAG dump of the sockets in state LISTEN (what `ss -lt` does).
 * The kernel answers from its listening hash; /proc/net/tcp walks every TCP socket of
 * every namespace to print this one's, which is what made PORT_WAIT cost milliseconds.
 *
 * Owns: one netlink socket for the length of a call (closed before it returns) and a
 * static receive buffer of DIAG_BUF bytes. The answer's datagrams are parsed by
 * procfs_diag_parse (pure, bounded by each datagram's length); a dump is read for at most
 * DIAG_MAX_ROUNDS datagrams, each wait for one bounded by DIAG_WAIT_US, so a kernel (or
 * a runtime emulating one) that never ends its dump cannot hold the agent's loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent.h"

#define DIAG_BUF 32768
#define DIAG_MAX_ROUNDS 4096
#define DIAG_WAIT_US 200000

int diag_listening(int family, uint8_t *listening, int *err) {
  static uint8_t buf[DIAG_BUF] __attribute__((aligned(4)));
  memset(listening, 0, PORT_MAP_BYTES);
  int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, DIAG_NETLINK_SOCK_DIAG);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  int rc = -1;
  struct timeval tv = {0, DIAG_WAIT_US};
  struct {
    diag_nlhdr_t h;
    diag_req_t r;
  } q;
  memset(&q, 0, sizeof(q));
  q.h.len = sizeof(q);
  q.h.type = DIAG_SOCK_DIAG_BY_FAMILY;
  q.h.flags = DIAG_NLM_F_REQUEST | DIAG_NLM_F_DUMP;
  q.h.seq = 1;
  q.r.family = (uint8_t)family;
  q.r.protocol = IPPROTO_TCP;
  q.r.states = 1u << DIAG_TCP_LISTEN;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) goto fail_errno;
  for (;;) {
    ssize_t n = send(fd, &q, sizeof(q), 0); /* unconnected: to the kernel */
    if (n == (ssize_t)sizeof(q)) break;
    if (n < 0 && errno == EINTR) continue;
    if (n >= 0) errno = EPROTO;
    goto fail_errno;
  }
  for (int round = 0; round < DIAG_MAX_ROUNDS; round++) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) goto fail_errno;
    if (n == 0) {
      *err = EPROTO;
      goto out;
    }
    int done = procfs_diag_parse(buf, (size_t)n, listening, err);
    if (done != 0) {
      rc = done == 1 ? 0 : -1;
      goto out;
    }
  }
  *err = E2BIG; /* a dump that does not end */
  goto out;
fail_errno:
  *err = errno;
out:
  close(fd);
  return rc;
}
