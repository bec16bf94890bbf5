// remote_write_driver: pushes synthetic series through a RemoteWriter.
//
// The integration tests run it against real receivers and query every sample
// back; the throughput benchmark runs it flat out. Series are
// gpu_power_watts{gpu="<i>", instance="<--instance>"} with the value
// i * 1000 + step at time base + step * step_ms, so a checker can tell exactly
// which samples arrived. Prints one JSON line of results on stdout.
//
//   remote_write_driver --url http://127.0.0.1:8428/api/v1/write --series 50 --steps 60 --interval-ms 100
//   remote_write_driver --free-port          # prints a free loopback TCP port
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "export/remote_write/remote_write.h"

namespace {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) return -1;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpulens;
  using Clock = std::chrono::steady_clock;
  RemoteWriteOptions o;
  o.interval_ms = 0;  // the driver snapshots after each publish
  o.max_backoff_ms = 500;
  o.flush_timeout_ms = 30000;
  int series = 10, steps = 10;
  int64_t interval_ms = 100, step_ms = -1, base_ms = 0;
  std::string instance = "rwtest";
  bool want_port = false;

  CLI::App app{"Push synthetic series through the remote_write queue."};
  app.add_option("--url", o.url, "receiver URL");
  app.add_option("--series", series, "series per step");
  app.add_option("--steps", steps, "samples per series");
  app.add_option("--interval-ms", interval_ms, "wall time between steps; 0: as fast as the queue allows");
  app.add_option("--step-ms", step_ms, "timestamp step (default: interval, or 1000 when interval is 0)");
  app.add_option("--base-ms", base_ms, "timestamp of step 0 (default: now, or now - steps*step when flat out)");
  app.add_option("--instance", instance, "value of the instance external label");
  app.add_option("--queue", o.queue_max_samples, "queue capacity in samples");
  app.add_option("--batch", o.max_samples_per_send, "max samples per request");
  app.add_option("--max-backoff-ms", o.max_backoff_ms, "retry backoff cap");
  app.add_option("--flush-timeout-ms", o.flush_timeout_ms, "how long stop() keeps sending");
  app.add_flag("--free-port", want_port, "print a free loopback port and exit");
  CLI11_PARSE(app, argc, argv);
  if (want_port) {
    std::printf("%d\n", free_port());
    return 0;
  }
  if (step_ms < 0) step_ms = interval_ms > 0 ? interval_ms : 1000;
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  if (base_ms == 0) base_ms = interval_ms > 0 ? now_ms : now_ms - int64_t{steps} * step_ms;
  o.external_labels = {{"instance", instance}};

  SeriesRegistry reg;
  LiveStore live;
  int source = live.add_source("driver", true);
  RemoteWriter writer(o, reg, live);
  if (Status s = writer.start(); !s.is_ok()) {
    std::fprintf(stderr, "remote_write_driver: %s\n", s.message().c_str());
    return 2;
  }

  Frame frame(reg);
  double producer_cpu = 0;
  auto t0 = Clock::now();
  for (int k = 0; k < steps; ++k) {
    if (interval_ms > 0) {
      std::this_thread::sleep_until(t0 + std::chrono::milliseconds(interval_ms * k));
    } else {  // flat out, but never so fast that the queue drops
      while (writer.stats().queued + static_cast<size_t>(series) > o.queue_max_samples) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    double c0 = thread_cpu_seconds();
    int64_t ts = base_ms + int64_t{k} * step_ms;
    frame.clear(ts);
    for (int i = 0; i < series; ++i) frame.set(FieldId::kGpuPower, i, i * 1000.0 + k);
    live.publish(source, frame);
    producer_cpu += thread_cpu_seconds() - c0;  // the synthetic source; the snapshot is the writer's
    writer.enqueue_snapshot(ts);
  }
  writer.stop();
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  RemoteWriteStats s = writer.stats();
  std::printf(
      "{\"sent\":%llu,\"failed\":%llu,\"dropped\":%llu,\"retries\":%llu,\"requests\":%llu,\"queued\":%zu,"
      "\"wall_s\":%.3f,\"cpu_s\":%.3f,\"producer_cpu_s\":%.3f,\"last_error\":\"%s\"}\n",
      static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.failed),
      static_cast<unsigned long long>(s.dropped), static_cast<unsigned long long>(s.retries),
      static_cast<unsigned long long>(s.requests), s.queued, wall, seconds(ru.ru_utime) + seconds(ru.ru_stime),
      producer_cpu, s.last_error.substr(0, s.last_error.find('"')).c_str());
  return s.queued == 0 ? 0 : 1;
}
