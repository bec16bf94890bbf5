// Options of every source, one plain struct each, filled by the CLI or the
// YAML config (keys source.<name>.<option>) and handed to the factories.
// Every filesystem and library path is overridable so tests can aim at
// fixture trees and stand-in libraries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/xid_ledger.h"
#include "util/http_client.h"

namespace gpulens {

struct SimOptions {
  std::string scenario = "healthy-training";  // name in scenarios/ or a path
  std::string scenario_dir;                    // where names are looked up
  uint64_t seed = 1;
  double speed = 1.0;  // scenario seconds per wall second
  std::string kernel_log;  // append the scenario's XIDs here as driver kernel-log lines ("" off)
};

struct HostOptions {
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
};

struct NvmlOptions {
  std::string library = "libnvidia-ml.so.1";
  std::string proc_root = "/proc";     // for PID -> pod attribution
  int64_t call_deadline_ms = 2000;     // a collection slower than this is reported
  std::string calibration_file;        // measured PCIe/NVLink peaks (JSON), optional
  std::string sys_root = "/sys";       // NUMA node fallback
  std::string kubelet_root = "/var/lib/kubelet";  // pod / namespace / container names
  unsigned xid_wait_ms = 200;          // XID event wait; bounds how fast the thread stops
  // Slow tier (energy, power limit, ECC, row remapping, PCIe replays, NVLink
  // link state, clock-event time counters, per-process SM share): read this often, replayed between;
  // 0 reads everything every collection. Max clocks, link maxima and
  // topology are read once at open.
  int64_t slow_interval_ms = 10000;
  // Job attribution (gpu_job_info, docs/jobs.md): Slurm's GPU -> job mapping
  // directory, dcgm-exporter's --hpc-job-mapping-dir ("" off), re-read every
  // 5 s; and the job keys of the GPU processes' environment.
  std::string hpc_job_mapping_dir;
  bool job_environ = true;
};

struct KubeletOptions {
  std::string socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  int64_t refresh_ms = 10000;  // List at most this often; scrapes read the cached answer
  int64_t timeout_ms = 2000;   // deadline of each call: a hung kubelet costs this, once per refresh
  // The pods' owner/job labels from the Kubernetes API server (pod_owners.h,
  // docs/jobs.md): off by default, needs get/list on pods.
  bool owner_labels = false;
  std::string api_url;          // "": https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
  std::string node_name;        // "": $NODE_NAME
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  int64_t owner_refresh_ms = 60000;      // the node's pods are listed at most this often
  int64_t owner_timeout_ms = 5000;       // deadline of one list
  int64_t owner_max_bytes = 16 << 20;    // a bigger answer is an error (labels absent)
};

// The scrape source (sources/scrape/scrape_source.h): endpoints on the node.
struct ScrapeOptions {
  std::vector<std::string> targets;     // http(s)://host:port/path, each scraped on its own thread
  int64_t interval_ms = 1000;           // how often each target is scraped
  int64_t timeout_ms = 2000;            // connect, send and whole answer of one scrape
  int64_t max_bytes = 16 << 20;         // a bigger answer is an error (the target is down)
  int64_t max_series = 2048;            // catalog series one target sets (within kHeldAfterRemovalMs); more dropped
  int64_t max_series_total = 4096;      // the same, all targets together
  int64_t max_labels = 64;              // labels of one scraped series; more: the series is dropped
  int64_t max_label_length = 1024;      // bytes of a scraped label name or value
  HttpClientOptions client;             // TLS and credentials (timeout and body limit set from above)
};

// The kmsg source (sources/kmsg.h): the kernel log.
struct KmsgOptions {
  std::string path = "/dev/kmsg";  // or a file / FIFO (tests, syslog copies)
  bool replay = false;             // read what is already there; default: only lines written from now on
  int64_t max_line_bytes = 65536;  // a longer line is skipped whole (and logged)
};

struct SourceOptions {
  SimOptions sim;
  HostOptions host;
  NvmlOptions nvml;
  KubeletOptions kubelet;
  ScrapeOptions scrape;
  KmsgOptions kmsg;
  // One XID count however many sources see it (nvml events, kmsg): shared by
  // the sources made from these options.
  std::shared_ptr<XidLedger> xids = std::make_shared<XidLedger>();
};

}  // namespace gpulens
