/* gpulens_push.h over a blocking-with-deadline socket: text format 0.0.4 in a
 * Pushgateway PUT, the answer's status line and body read back. */
#define _POSIX_C_SOURCE 200809L
#include "gpulens_push.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct value {
  char *uuid, *name;
  int counter;
  double v;
};

struct gpulens_push {
  char host[256], port[8], path[512], token[512];
  struct value *values;
  size_t count, cap;
  char error[512];
};

static int set_error(gpulens_push *p, const char *fmt, const char *a) {
  snprintf(p->error, sizeof p->error, fmt, a);
  return -1;
}

static int valid_name(const char *n) {
  if (!n || !*n || strlen(n) > 200) return 0;
  for (const char *c = n; *c; ++c) {
    const int alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == ':';
    if (!alpha && !(c != n && *c >= '0' && *c <= '9')) return 0;
  }
  return 1;
}

static int header_safe(const char *s) {
  for (; *s; ++s) {
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
  }
  return 1;
}

gpulens_push *gpulens_push_open(const char *url, const char *job, long pid) {
  if (!url || !job || !*job) return NULL;
  for (const char *c = job; *c; ++c) {
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
          *c == '.' || *c == '-'))
      return NULL;
  }
  if (strncmp(url, "http://", 7) == 0) url += 7;
  else if (strstr(url, "://")) return NULL; /* https and others: not supported */
  const char *colon = strrchr(url, ':');
  const char *slash = strchr(url, '/');
  if (!colon || (slash && slash < colon) || colon == url) return NULL;
  size_t host_len = (size_t)(colon - url);
  size_t port_len = slash ? (size_t)(slash - colon - 1) : strlen(colon + 1);
  if (host_len >= 256 || port_len == 0 || port_len >= 8) return NULL;
  gpulens_push *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  memcpy(p->host, url, host_len);
  memcpy(p->port, colon + 1, port_len);
  for (const char *c = p->port; *c; ++c) {
    if (*c < '0' || *c > '9') {
      free(p);
      return NULL;
    }
  }
  if (p->host[0] == '[' && host_len > 2 && p->host[host_len - 1] == ']') { /* [::1]:9400 */
    memmove(p->host, p->host + 1, host_len - 2);
    p->host[host_len - 2] = 0;
  }
  snprintf(p->path, sizeof p->path, "/metrics/job/%s/pid/%ld", job, pid > 0 ? pid : (long)getpid());
  return p;
}

int gpulens_push_token(gpulens_push *p, const char *token) {
  if (!token) {
    p->token[0] = 0;
    return 0;
  }
  if (!header_safe(token) || strlen(token) >= sizeof p->token) return set_error(p, "%s", "token: not a header value");
  strcpy(p->token, token);
  return 0;
}

static int stage(gpulens_push *p, const char *uuid, const char *name, double v, int counter) {
  p->error[0] = 0;
  if (!valid_name(name)) return set_error(p, "\"%.200s\" is not a Prometheus metric name", name ? name : "");
  if (!uuid) uuid = "";
  if (strpbrk(uuid, "\"\\\n") || strlen(uuid) > 128) return set_error(p, "gpu_uuid \"%.200s\": not a UUID", uuid);
  for (size_t i = 0; i < p->count; ++i) {
    if (strcmp(p->values[i].name, name) == 0 && strcmp(p->values[i].uuid, uuid) == 0) {
      p->values[i].v = v;
      p->values[i].counter = counter;
      return 0;
    }
  }
  if (p->count == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 16;
    struct value *grown = realloc(p->values, cap * sizeof *grown);
    if (!grown) return set_error(p, "%s", "out of memory");
    p->values = grown;
    p->cap = cap;
  }
  struct value *e = &p->values[p->count];
  e->uuid = strdup(uuid);
  e->name = strdup(name);
  if (!e->uuid || !e->name) {
    free(e->uuid);
    free(e->name);
    return set_error(p, "%s", "out of memory");
  }
  e->v = v;
  e->counter = counter;
  ++p->count;
  return 0;
}

int gpulens_push_gauge(gpulens_push *p, const char *uuid, const char *name, double v) { return stage(p, uuid, name, v, 0); }
int gpulens_push_counter(gpulens_push *p, const char *uuid, const char *name, double v) { return stage(p, uuid, name, v, 1); }

void gpulens_push_clear(gpulens_push *p) {
  for (size_t i = 0; i < p->count; ++i) {
    free(p->values[i].uuid);
    free(p->values[i].name);
  }
  p->count = 0;
}

/* The body: one # TYPE line per name, before its first sample. */
static char *render(const gpulens_push *p, size_t *len) {
  size_t cap = 64 + p->count * 1024, n = 0; /* a name <= 200, a UUID <= 128, a number <= 40 */
  char *out = malloc(cap);
  if (!out) return NULL;
  for (size_t i = 0; i < p->count; ++i) {
    int first = 1;
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(p->values[j].name, p->values[i].name) == 0) first = 0;
    }
    if (!first) continue;
    n += (size_t)snprintf(out + n, cap - n, "# TYPE %s %s\n", p->values[i].name, p->values[i].counter ? "counter" : "gauge");
    for (size_t j = i; j < p->count; ++j) {
      const struct value *e = &p->values[j];
      if (strcmp(e->name, p->values[i].name) != 0) continue;
      char number[40];
      if (isnan(e->v)) strcpy(number, "NaN");
      else if (isinf(e->v)) strcpy(number, e->v > 0 ? "+Inf" : "-Inf");
      else snprintf(number, sizeof number, "%.17g", e->v);
      if (*e->uuid) n += (size_t)snprintf(out + n, cap - n, "%s{gpu_uuid=\"%s\"} %s\n", e->name, e->uuid, number);
      else n += (size_t)snprintf(out + n, cap - n, "%s %s\n", e->name, number);
    }
  }
  out[n] = 0;
  *len = n;
  return out;
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, long long deadline) {
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct pollfd pfd = {fd, events, 0};
    int r = poll(&pfd, 1, (int)left);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return 0;
  }
}

/* One request, Connection: close; returns the status or -1. */
static int request(gpulens_push *p, const char *method, const char *body, size_t body_len, int timeout_ms) {
  const long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 1000);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(p->host, p->port, &hints, &res);
  if (rc != 0) {
    snprintf(p->error, sizeof p->error, "%s: %s", p->host, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      int err = 0;
      socklen_t el = sizeof err;
      if (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, deadline) ||
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
        snprintf(p->error, sizeof p->error, "%s:%s: cannot connect: %s", p->host, p->port,
                 err ? strerror(err) : "timed out");
        close(fd);
        fd = -1;
      }
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return -1;
  char head[1200];
  int hl = snprintf(head, sizeof head,
                    "%s %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n%s%s%s\r\n",
                    method, p->path, p->host, p->port, body_len, p->token[0] ? "Authorization: Bearer " : "",
                    p->token, p->token[0] ? "\r\n" : "");
  const char *parts[2] = {head, body};
  size_t lens[2] = {(size_t)hl, body_len};
  for (int k = 0; k < 2; ++k) {
    size_t off = 0;
    while (off < lens[k]) {
      ssize_t w = send(fd, parts[k] + off, lens[k] - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += (size_t)w;
      } else if (w < 0 && (errno == EAGAIN || errno == EINTR) && wait_fd(fd, POLLOUT, deadline)) {
        continue;
      } else {
        close(fd);
        snprintf(p->error, sizeof p->error, "%s:%s: sending: %s", p->host, p->port, w < 0 ? strerror(errno) : "closed");
        return -1;
      }
    }
  }
  char answer[2048];
  size_t got = 0;
  for (;;) {
    if (got + 1 >= sizeof answer) break; /* enough for the status and the reason */
    ssize_t r = recv(fd, answer + got, sizeof answer - 1 - got, 0);
    if (r > 0) {
      got += (size_t)r;
    } else if (r == 0) {
      break;
    } else if ((errno == EAGAIN || errno == EINTR) && wait_fd(fd, POLLIN, deadline)) {
      continue;
    } else {
      break;
    }
  }
  close(fd);
  answer[got] = 0;
  int status = 0;
  if (sscanf(answer, "HTTP/1.%*d %d", &status) != 1) {
    snprintf(p->error, sizeof p->error, "%s:%s: %s", p->host, p->port, got ? "not an HTTP answer" : "no answer in time");
    return -1;
  }
  p->error[0] = 0;
  if (status >= 300) {
    const char *text = strstr(answer, "\r\n\r\n");
    snprintf(p->error, sizeof p->error, "HTTP %d: %s", status, text ? text + 4 : "");
    size_t e = strlen(p->error);
    while (e > 0 && (p->error[e - 1] == '\n' || p->error[e - 1] == '\r')) p->error[--e] = 0;
  }
  return status;
}

int gpulens_push_send(gpulens_push *p, int timeout_ms) {
  size_t len = 0;
  char *body = render(p, &len);
  if (!body) return set_error(p, "%s", "out of memory");
  int status = request(p, "PUT", body, len, timeout_ms);
  free(body);
  return status;
}

int gpulens_push_delete(gpulens_push *p, int timeout_ms) { return request(p, "DELETE", "", 0, timeout_ms); }

const char *gpulens_push_error(const gpulens_push *p) { return p->error; }

void gpulens_push_close(gpulens_push *p) {
  if (!p) return;
  gpulens_push_clear(p);
  free(p->values);
  free(p);
}
