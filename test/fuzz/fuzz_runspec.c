/*
 * fuzz_runspec.c - the container inspection parsers and the cpus conversion
 * (src/runspec.c: configured_ports, ports_from_inspection, parse_nano_cpus).
 *
 * Input: the body of GET /containers/{id}/json. When it parses as JSON, the configured
 * ports are read from HostConfig.PortBindings (each 1..65535, no more than the keys) and
 * the published ones looked up in NetworkSettings.Ports for them and for a few fixed
 * ports; a port found is 1..65535. parse_nano_cpus runs on the input's first line
 * (as String(cpus) would give it) and on every string value of the top-level "cpus"
 * array when there is one; a value it accepts is printed back and compared.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "fuzz_common.h"
#include "codec/runspec.h"

static void check_cpus(const char *text) {
  int64_t nanos = -12345;
  int rc = parse_nano_cpus(text, &nanos);
  FUZZ_CHECK(rc == 0 || rc == -1, "parse_nano_cpus returned %d", rc);
  if (rc != 0) return;
  FUZZ_CHECK(nanos >= 0, "\"%s\" gave %" PRId64, text, nanos);
  /* The value must be text exactly: compare digit strings, nanos = text * 10^9. */
  char back[64];
  snprintf(back, sizeof(back), "%" PRId64, nanos);
  /* Normalise the text: mantissa digits, decimal exponent. */
  char digits[128];
  size_t nd = 0;
  long point = -1;
  const char *p = text;
  for (; *p && *p != 'e' && *p != 'E'; p++) {
    if (*p == '.') point = (long)nd;
    else if (nd < sizeof(digits) - 1) digits[nd++] = *p;
  }
  if (point < 0) point = (long)nd;
  long exp10 = (*p == 'e' || *p == 'E') ? strtol(p + 1, NULL, 10) : 0;
  /* value = 0.digits * 10^(point+exp10); nanos digits = digits shifted by point+exp10+9 */
  long int_len = point + exp10 + 9; /* how many of the digits are before the point in nanos */
  /* Build the expected integer text: digits[0..int_len) padded with zeros, fraction must be 0. */
  char expect[256];
  size_t e = 0;
  for (long i = 0; i < int_len && e < sizeof(expect) - 1; i++) expect[e++] = i < (long)nd ? digits[i] : '0';
  for (long i = int_len < 0 ? 0 : int_len; i < (long)nd; i++)
    FUZZ_CHECK(digits[i] == '0', "\"%s\" accepted as %" PRId64 " but has fractional nanoseconds", text, nanos);
  expect[e] = 0;
  const char *x = expect;
  while (*x == '0' && x[1]) x++; /* leading zeros */
  if (*x == 0) x = "0";
  FUZZ_CHECK(strcmp(x, back) == 0, "\"%s\" gave %s, expected %s", text, back, x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size);
  char *line = fuzz_strndup(data, nl ? (size_t)(nl - data) : size);
  check_cpus(line);
  free(line);

  uint8_t *block = fuzz_dup(data, size);
  json_t *j = json_loadb((const char *)block, size, JSON_ALLOW_NUL, NULL);
  free(block);
  if (j == NULL) return 0;

  json_t *cpus = json_object_get(j, "cpus");
  size_t i;
  json_t *v;
  json_array_foreach(cpus, i, v) {
    if (json_is_string(v)) check_cpus(json_string_value(v));
  }

  int *ports = NULL;
  size_t n = 0;
  int rc = configured_ports(j, &ports, &n);
  FUZZ_CHECK(rc == 0 || rc == -1, "configured_ports returned %d", rc);
  size_t keys = json_object_size(json_object_get(json_object_get(j, "HostConfig"), "PortBindings"));
  FUZZ_CHECK(n <= keys, "%zu ports from %zu keys", n, keys);
  for (i = 0; i < n; i++) FUZZ_CHECK(ports[i] >= 1 && ports[i] <= 65535, "configured port %d", ports[i]);

  /* The configured ports, then some fixed ones. */
  static const int fixed[] = {1, 22, 80, 3000, 8080, 65535};
  size_t total = n + sizeof(fixed) / sizeof(fixed[0]);
  int *want = malloc(total * sizeof(int));
  published_port_t *out = malloc(total * sizeof(published_port_t));
  if (want == NULL || out == NULL) abort();
  for (i = 0; i < n; i++) want[i] = ports[i];
  memcpy(want + n, fixed, sizeof(fixed));
  for (i = 0; i < total; i++) {
    err_t err;
    err_init(&err);
    published_port_t one = {0, 0};
    rc = ports_from_inspection(j, &want[i], 1, &one, &err);
    FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
    if (rc == 0)
      FUZZ_CHECK(one.container_port == want[i] && one.host_port >= 1 && one.host_port <= 65535,
                 "port %d published as %d -> %d", want[i], one.container_port, one.host_port);
    err_clear(&err);
  }
  err_t err;
  err_init(&err);
  rc = ports_from_inspection(j, want, total, out, &err);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
  err_clear(&err);
  free(want);
  free(out);
  free(ports);
  json_decref(j);
  return 0;
}
