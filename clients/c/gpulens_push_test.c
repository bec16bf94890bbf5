/* Drives gpulens_push.h against a live receiver (run by
 * tests/integration/c_push_test.sh, which checks what arrived):
 *
 *   gpulens_push_test URL GPU_UUID DEAD_URL
 *
 * Pushes allocator gauges and a counter for GPU_UUID as this process, and
 * checks every error path: malformed URL and job, bad names, a GPU the node
 * does not have (the receiver's 400 and its reason), a receiver that is not
 * there (-1 within the deadline). Prints "pushed <pid>" and waits for a line
 * on stdin before it deletes its group and exits. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpulens_push.h"

static int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      ++failures;                                         \
    }                                                     \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: gpulens_push_test URL GPU_UUID DEAD_URL\n");
    return 2;
  }
  CHECK(gpulens_push_open("https://127.0.0.1:9400", "x", 0) == NULL, "https accepted");
  CHECK(gpulens_push_open("127.0.0.1", "x", 0) == NULL, "URL without a port accepted");
  CHECK(gpulens_push_open(argv[1], "a/b", 0) == NULL, "job with a slash accepted");
  CHECK(gpulens_push_open(argv[1], "", 0) == NULL, "empty job accepted");

  gpulens_push *p = gpulens_push_open(argv[1], "native_server", 0);
  CHECK(p != NULL, "open %s", argv[1]);
  if (!p) return 1;
  CHECK(gpulens_push_gauge(p, argv[2], "9starts_with_a_digit", 1) == -1, "bad name accepted");
  CHECK(strstr(gpulens_push_error(p), "not a Prometheus metric name") != NULL, "error: %s", gpulens_push_error(p));
  CHECK(gpulens_push_gauge(p, "GPU-\"x", "gpu_allocator_reserved_bytes", 1) == -1, "quote in uuid accepted");
  CHECK(gpulens_push_token(p, "a\nb") == -1, "newline in token accepted");

  /* A GPU this node does not have: refused with the receiver's reason. */
  CHECK(gpulens_push_gauge(p, "GPU-00000000-0000-0000-0000-000000000000", "gpu_allocator_reserved_bytes", 1) == 0, "stage");
  int status = gpulens_push_send(p, 2000);
  CHECK(status == 400, "unknown GPU: status %d", status);
  CHECK(strstr(gpulens_push_error(p), "is not a GPU of this node") != NULL, "error: %s", gpulens_push_error(p));
  gpulens_push_clear(p);

  CHECK(gpulens_push_gauge(p, argv[2], "gpu_allocator_reserved_bytes", 8e9) == 0, "stage");
  CHECK(gpulens_push_gauge(p, argv[2], "gpu_allocator_allocated_bytes", 5e9) == 0, "stage");
  CHECK(gpulens_push_gauge(p, argv[2], "gpu_allocator_reserved_bytes", 8.5e9) == 0, "restage");  /* replaces */
  CHECK(gpulens_push_gauge(p, argv[2], "gpu_memory_fragmentation_ratio", 1 - 5e9 / 8.5e9) == 0, "stage");
  CHECK(gpulens_push_counter(p, argv[2], "gpu_allocator_retries_total", 4) == 0, "stage");
  status = gpulens_push_send(p, 2000);
  CHECK(status == 200, "push: status %d: %s", status, gpulens_push_error(p));
  CHECK(gpulens_push_error(p)[0] == 0, "error after success: %s", gpulens_push_error(p));

  /* Nobody listening: -1, within the deadline. */
  gpulens_push *dead = gpulens_push_open(argv[3], "native_server", 0);
  CHECK(dead != NULL, "open %s", argv[3]);
  if (dead) {
    gpulens_push_gauge(dead, argv[2], "gpu_allocator_reserved_bytes", 1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    status = gpulens_push_send(dead, 500);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK(status == -1, "dead receiver: status %d", status);
    CHECK(strstr(gpulens_push_error(dead), "cannot connect") != NULL, "error: %s", gpulens_push_error(dead));
    CHECK((b.tv_sec - a.tv_sec) < 5, "send to a dead receiver took %ld s", (long)(b.tv_sec - a.tv_sec));
    gpulens_push_close(dead);
  }

  printf("pushed %ld\n", (long)getpid());
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) line[0] = 0;
  status = gpulens_push_delete(p, 2000);
  CHECK(status == 202, "delete: status %d", status);
  gpulens_push_close(p);
  return failures ? 1 : 0;
}
