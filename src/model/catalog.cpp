// The catalog table itself. One row per FieldId, in enum order (checked by a
// test), grouped by layer.
#include "model/catalog.h"

#include <array>

namespace gpulens {
namespace {

using enum MetricType;
using enum Layer;
using enum Scope;

constexpr std::array<FieldDef, kFieldCount> kCatalog{{
    // ---- compute -------------------------------------------------------
    {FieldId::kGpuUtilization, "gpu_utilization_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of the last period in which any kernel ran (nvidia-smi utilization; coarse)."},
    {FieldId::kGpuSmActive, "gpu_sm_active_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of cycles with at least one warp resident on an SM, averaged over SMs."},
    {FieldId::kGpuSmOccupancy, "gpu_sm_occupancy_ratio", kGauge, "ratio", kCompute, kGpu,
     "Resident warps over the theoretical maximum, averaged over SMs and cycles."},
    {FieldId::kGpuGraphicsEngineActive, "gpu_graphics_engine_active_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of time the graphics/compute engine was active."},
    {FieldId::kGpuTensorActive, "gpu_tensor_core_util_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of cycles any tensor pipe was active."},
    {FieldId::kGpuFp64Active, "gpu_fp64_pipe_active_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of cycles the FP64 pipe was active."},
    {FieldId::kGpuFp32Active, "gpu_fp32_pipe_active_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of cycles the FP32 pipe was active."},
    {FieldId::kGpuFp16Active, "gpu_fp16_pipe_active_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of cycles the FP16 pipe was active (excluding tensor cores)."},
    {FieldId::kGpuEncoderUtil, "gpu_encoder_util_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of the last sampling period the video encoder was busy."},
    {FieldId::kGpuDecoderUtil, "gpu_decoder_util_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of the last sampling period the video decoder was busy."},
    {FieldId::kGpuSmClock, "gpu_sm_clock_hertz", kGauge, "hertz", kCompute, kGpu,
     "Current SM clock."},
    {FieldId::kGpuSmClockMax, "gpu_sm_clock_max_hertz", kGauge, "hertz", kCompute, kGpu,
     "Maximum SM clock."},
    {FieldId::kGpuMemClock, "gpu_memory_clock_hertz", kGauge, "hertz", kCompute, kGpu,
     "Current memory clock."},
    {FieldId::kGpuMemClockMax, "gpu_memory_clock_max_hertz", kGauge, "hertz", kCompute, kGpu,
     "Maximum memory clock."},
    // ---- memory --------------------------------------------------------
    {FieldId::kGpuMemoryTotal, "gpu_memory_total_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory size."},
    {FieldId::kGpuMemoryUsed, "gpu_memory_used_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory in use."},
    {FieldId::kGpuMemoryFree, "gpu_memory_free_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory free."},
    {FieldId::kGpuMemoryReserved, "gpu_memory_reserved_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory reserved by the driver."},
    {FieldId::kGpuMemoryUtil, "gpu_memory_util_ratio", kGauge, "ratio", kMemory, kGpu,
     "Fraction of the last period in which device memory was read or written (coarse)."},
    {FieldId::kGpuDramActive, "gpu_mem_bandwidth_util_ratio", kGauge, "ratio", kMemory, kGpu,
     "Fraction of cycles the DRAM interface was busy: memory bandwidth utilisation."},
    {FieldId::kGpuMemoryFragmentation, "gpu_memory_fragmentation_ratio", kGauge, "ratio", kMemory, kGpu,
     "1 - allocated/reserved of the in-process caching allocator: cached but unallocated memory (pushed by the "
     "process, label pid)."},
    {FieldId::kGpuAllocatorAllocated, "gpu_allocator_allocated_bytes", kGauge, "bytes", kMemory, kGpu,
     "Bytes handed out by the in-process caching allocator."},
    {FieldId::kGpuAllocatorReserved, "gpu_allocator_reserved_bytes", kGauge, "bytes", kMemory, kGpu,
     "Bytes reserved from the driver by the in-process caching allocator."},
    {FieldId::kGpuAllocatorRetries, "gpu_allocator_retries_total", kCounter, "", kMemory, kGpu,
     "Allocations that had to free cached blocks and retry (a sign of memory pressure)."},
    {FieldId::kGpuAllocatorActive, "gpu_allocator_active_bytes", kGauge, "bytes", kMemory, kGpu,
     "Bytes in active blocks of the in-process allocator: allocated or still awaiting stream events."},
    {FieldId::kGpuAllocatorInactiveSplit, "gpu_allocator_inactive_split_bytes", kGauge, "bytes", kMemory, kGpu,
     "Free bytes inside split segments: cached memory that empty_cache() cannot release (non-releasable)."},
    {FieldId::kGpuAllocatorRequested, "gpu_allocator_requested_bytes", kGauge, "bytes", kMemory, kGpu,
     "Bytes the program asked the in-process allocator for, before rounding."},
    {FieldId::kGpuAllocatorExternalFragmentation, "gpu_allocator_external_fragmentation_ratio", kGauge, "ratio",
     kMemory, kGpu,
     "1 - largest free block / free bytes inside reserved segments, per pool and stream (labels pid, pool, "
     "stream): what predicts a failed large allocation."},
    {FieldId::kGpuAllocatorLargestFreeBlock, "gpu_allocator_largest_free_block_bytes", kGauge, "bytes", kMemory,
     kGpu, "Largest free block inside reserved segments, per pool and stream (labels pid, pool, stream)."},
    {FieldId::kGpuAllocatorOoms, "gpu_allocator_ooms_total", kCounter, "", kMemory, kGpu,
     "Out-of-memory errors the in-process allocator raised."},
    {FieldId::kGpuAllocatorExpandableSegments, "gpu_allocator_expandable_segments", kGauge, "", kMemory, kGpu,
     "1 when the allocator runs with expandable segments (as the allocator reports it, not the environment)."},
    {FieldId::kGpuAllocatorSnapshotDuration, "gpu_allocator_snapshot_duration_seconds", kGauge, "seconds",
     kMemory, kGpu, "Time the process spent taking its last allocator snapshot (it holds the allocator lock)."},
    {FieldId::kGpuProcessMemoryUsed, "gpu_process_memory_used_bytes", kGauge, "bytes", kMemory, kGpu,
     "Device memory used by one process (labels pid, namespace, pod, container)."},
    {FieldId::kGpuProcessSmUtil, "gpu_process_sm_util_ratio", kGauge, "ratio", kCompute, kGpu,
     "SM utilisation attributed to one process."},
    // ---- io ------------------------------------------------------------
    {FieldId::kGpuPcieTxBytes, "gpu_pcie_tx_bytes_total", kCounter, "bytes", kIo, kGpu,
     "Bytes sent by the GPU over PCIe (device to host)."},
    {FieldId::kGpuPcieRxBytes, "gpu_pcie_rx_bytes_total", kCounter, "bytes", kIo, kGpu,
     "Bytes received by the GPU over PCIe (host to device)."},
    {FieldId::kGpuPcieTxRate, "gpu_pcie_tx_bytes_per_second", kGauge, "bytes", kIo, kGpu,
     "PCIe transmit throughput.", false},
    {FieldId::kGpuPcieRxRate, "gpu_pcie_rx_bytes_per_second", kGauge, "bytes", kIo, kGpu,
     "PCIe receive throughput.", false},
    {FieldId::kGpuPcieTxUtil, "gpu_pcie_tx_bandwidth_util_ratio", kGauge, "ratio", kIo, kGpu,
     "PCIe transmit throughput over the link's measured (or nominal) peak."},
    {FieldId::kGpuPcieRxUtil, "gpu_pcie_rx_bandwidth_util_ratio", kGauge, "ratio", kIo, kGpu,
     "PCIe receive throughput over the link's measured (or nominal) peak."},
    {FieldId::kGpuPciePeak, "gpu_pcie_peak_bytes_per_second", kGauge, "bytes", kIo, kGpu,
     "Per-direction PCIe peak used as denominator (label basis: calibrated, link or model)."},
    {FieldId::kGpuPcieLinkGen, "gpu_pcie_link_generation", kGauge, "", kIo, kGpu,
     "Current PCIe link generation."},
    {FieldId::kGpuPcieLinkGenMax, "gpu_pcie_link_generation_max", kGauge, "", kIo, kGpu,
     "Maximum PCIe link generation of GPU and slot."},
    {FieldId::kGpuPcieLinkWidth, "gpu_pcie_link_width", kGauge, "", kIo, kGpu,
     "Current PCIe link width in lanes."},
    {FieldId::kGpuPcieLinkWidthMax, "gpu_pcie_link_width_max", kGauge, "", kIo, kGpu,
     "Maximum PCIe link width in lanes."},
    {FieldId::kGpuPcieLinkGenCalibrated, "gpu_pcie_link_generation_calibrated", kGauge, "", kIo, kGpu,
     "PCIe link generation when `gpulens calibrate` measured the peak (with a calibration file)."},
    {FieldId::kGpuPcieLinkWidthCalibrated, "gpu_pcie_link_width_calibrated", kGauge, "", kIo, kGpu,
     "PCIe link width in lanes when `gpulens calibrate` measured the peak (with a calibration file)."},
    {FieldId::kGpuPcieReplays, "gpu_pcie_replays_total", kCounter, "", kIo, kGpu,
     "PCIe replay events (link-level retransmissions)."},
    {FieldId::kGpuNvlinkTxBytes, "gpu_nvlink_tx_bytes_total", kCounter, "bytes", kIo, kGpu,
     "Bytes sent over NVLink (label link)."},
    {FieldId::kGpuNvlinkRxBytes, "gpu_nvlink_rx_bytes_total", kCounter, "bytes", kIo, kGpu,
     "Bytes received over NVLink (label link)."},
    {FieldId::kGpuNvlinkTxRate, "gpu_nvlink_tx_bytes_per_second", kGauge, "bytes", kIo, kGpu,
     "NVLink transmit throughput, all links.", false},
    {FieldId::kGpuNvlinkRxRate, "gpu_nvlink_rx_bytes_per_second", kGauge, "bytes", kIo, kGpu,
     "NVLink receive throughput, all links.", false},
    {FieldId::kGpuNvlinkUtil, "gpu_nvlink_bandwidth_util_ratio", kGauge, "ratio", kIo, kGpu,
     "NVLink throughput (max of TX, RX) over the peak of the active links."},
    {FieldId::kGpuNvlinkLinkUp, "gpu_nvlink_link_up", kGauge, "", kIo, kGpu,
     "1 when the NVLink link is active (label link)."},
    {FieldId::kGpuTopology, "gpu_topology_info", kInfo, "", kIo, kGpu,
     "Connection to a peer GPU (labels peer, path: NVLINK, PIX, PXB, PHB, NODE, SYS)."},
    {FieldId::kGpuNumaNode, "gpu_numa_node", kGauge, "", kIo, kGpu,
     "NUMA node the GPU is attached to."},
    {FieldId::kGpuCpuAffinity, "gpu_cpu_affinity_info", kInfo, "", kIo, kGpu,
     "CPUs close to the GPU, in kernel list syntax (label cpus)."},
    // ---- dcgm-exporter's own families (DCGM_EXP_*), read by the scrape source alone
    {FieldId::kGpuP2pStatus, "gpu_p2p_status", kGauge, "", kIo, kGpu,
     "NVML peer-to-peer status towards the GPU in label peer_gpu, 0 OK (label status: OK, ChipsetNotSupported, "
     "GPUNotSupported, TopologyNotSupported, DisabledByRegKey, NotSupported, Unknown; dcgm-exporter's "
     "DCGM_EXP_P2P_STATUS)."},
    // ---- health --------------------------------------------------------
    {FieldId::kGpuUp, "gpu_up", kGauge, "", kHealth, kGpu,
     "1 when the GPU answers, 0 when it is lost or failing."},
    {FieldId::kGpuInfo, "gpu_info", kInfo, "", kHealth, kGpu,
     "Identity of the GPU (labels pci_bus_id, driver, serial; the model is gpu_name)."},
    {FieldId::kGpuPower, "gpu_power_watts", kGauge, "watts", kHealth, kGpu,
     "Board power draw."},
    {FieldId::kGpuPowerLimit, "gpu_power_limit_watts", kGauge, "watts", kHealth, kGpu,
     "Enforced power limit."},
    {FieldId::kGpuEnergy, "gpu_energy_joules_total", kCounter, "joules", kHealth, kGpu,
     "Energy consumed since the driver loaded."},
    {FieldId::kGpuTemperature, "gpu_temperature_celsius", kGauge, "celsius", kHealth, kGpu,
     "GPU die temperature."},
    {FieldId::kGpuMemoryTemperature, "gpu_memory_temperature_celsius", kGauge, "celsius", kHealth, kGpu,
     "Memory (HBM) temperature."},
    {FieldId::kGpuClockEventActive, "gpu_clock_event_active", kGauge, "", kHealth, kGpu,
     "1 while the clock-event (throttle) reason in label reason holds."},
    {FieldId::kGpuClockEventReasons, "gpu_clock_event_reasons", kGauge, "", kHealth, kGpu,
     "Bitmask of active clock-event (throttle) reasons, NVML bit values.", false},
    {FieldId::kGpuClockEventSeconds, "gpu_clock_event_seconds_total", kCounter, "seconds", kHealth, kGpu,
     "Time clocks were held down by the reason in label reason."},
    {FieldId::kGpuXidErrors, "gpu_xid_errors_total", kCounter, "", kHealth, kGpu,
     "XID error events by code (label xid)."},
    {FieldId::kGpuLastXid, "gpu_last_xid", kGauge, "", kHealth, kGpu,
     "Code of the most recent XID error."},
    {FieldId::kGpuLastXidTime, "gpu_last_xid_timestamp_seconds", kGauge, "seconds", kHealth, kGpu,
     "Unix time of the most recent XID error."},
    {FieldId::kGpuEccErrors, "gpu_ecc_errors_total", kCounter, "", kHealth, kGpu,
     "ECC errors (label type: corrected, uncorrected) since the driver loaded."},
    {FieldId::kGpuRemappedRows, "gpu_remapped_rows_total", kCounter, "", kHealth, kGpu,
     "Memory rows remapped (label cause: correctable, uncorrectable)."},
    {FieldId::kGpuRowRemapFailure, "gpu_row_remap_failure", kGauge, "", kHealth, kGpu,
     "1 when a row remapping failed: the GPU needs service."},
    {FieldId::kGpuPstate, "gpu_pstate", kGauge, "", kHealth, kGpu,
     "Performance state (0 fastest .. 15 slowest)."},
    {FieldId::kGpuXidErrorsRecent, "gpu_xid_errors_recent", kGauge, "", kHealth, kGpu,
     "XID errors of the code in label xid within dcgm-exporter's window (DCGM_EXP_XID_ERRORS_COUNT; "
     "--xid-count-window-size, 5 minutes by default): a count in a sliding window, not a running total; "
     "without xid: none in the window."},
    {FieldId::kGpuClockEventsRecent, "gpu_clock_events_recent", kGauge, "", kHealth, kGpu,
     "Samples with the clock-event reason in label reason set, within dcgm-exporter's window "
     "(DCGM_EXP_CLOCK_EVENTS_COUNT; --clock-events-count-window-size, 5 minutes by default); without reason: "
     "none in the window."},
    {FieldId::kGpuHealthStatus, "gpu_health_status", kGauge, "", kHealth, kGpu,
     "Result of the DCGM health watch in label watch, with its DCGM_FR_* code in label error: 0 pass, 10 warn, "
     "20 fail (dcgm-exporter's DCGM_EXP_GPU_HEALTH_STATUS)."},
    {FieldId::kGpuRecoveryAction, "gpu_recovery_action", kGauge, "", kHealth, kGpu,
     "Recovery the driver asks for: 0 none, 1 reset the GPU, 2 reboot the node, 3 drain peer-to-peer traffic, "
     "4 drain and reset (NVML field 230, drivers with CUDA 12.8+; absent on older ones)."},
    {FieldId::kGpuRowRemapPending, "gpu_row_remap_pending", kGauge, "", kHealth, kGpu,
     "1 when a row remapping waits for the next GPU reset."},
    {FieldId::kGpuLastXidInfo, "gpu_last_xid_info", kInfo, "", kHealth, kGpu,
     "The most recent XID with its text (labels xid, message; path: nvml or kernel_log, where it was seen first)."},
    {FieldId::kGpuPcieAerErrors, "gpu_pcie_aer_errors_total", kCounter, "", kHealth, kGpu,
     "PCIe AER errors the kernel logged for the GPU (label severity: corrected, nonfatal, fatal)."},
    {FieldId::kNvswitchSxidErrors, "nvswitch_sxid_errors_total", kCounter, "", kHealth, kNode,
     "NVSwitch SXid errors from the kernel log (labels nvswitch: its PCI bus id, sxid, severity)."},
    {FieldId::kGpuNvlinkRecoveries, "gpu_nvlink_link_recoveries_total", kCounter, "", kHealth, kGpu,
     "NVLink recoveries by outcome, all links (label result: successful, the link came back up; failed, the link "
     "was declared down). NVLink5 (Blackwell) with CUDA 12.6+ drivers; absent elsewhere."},
    {FieldId::kGpuNvlinkRecoveryEvents, "gpu_nvlink_link_recovery_events_total", kCounter, "", kHealth, kGpu,
     "Times an NVLink link went from up into recovery, whatever the outcome, all links (NVLink5, CUDA 12.6+ "
     "drivers; absent elsewhere)."},
    {FieldId::kGpuRepairPending, "gpu_repair_pending", kGauge, "", kHealth, kGpu,
     "1 when the driver holds a repair pending (label repair: channel, a memory channel; tpc, a TPC), from "
     "nvmlDeviceGetRepairStatus (drivers 580+; absent on older ones)."},
    // ---- MIG instances -------------------------------------------------
    {FieldId::kGpuMigMode, "gpu_mig_mode", kGauge, "", kHealth, kGpu,
     "1 when MIG mode is enabled (label state: current, or pending until the next GPU reset)."},
    {FieldId::kGpuMigInfo, "gpu_mig_info", kInfo, "", kHealth, kGpu,
     "One MIG instance of the GPU (labels mig_uuid, mig_profile, gpu_instance_id, compute_instance_id)."},
    {FieldId::kGpuMigMemoryTotal, "gpu_mig_memory_total_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory of one MIG instance (MIG labels)."},
    {FieldId::kGpuMigMemoryUsed, "gpu_mig_memory_used_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory in use in one MIG instance (MIG labels)."},
    {FieldId::kGpuMigMemoryFree, "gpu_mig_memory_free_bytes", kGauge, "bytes", kMemory, kGpu,
     "Framebuffer memory free in one MIG instance (MIG labels)."},
    {FieldId::kGpuMigGraphicsEngineActive, "gpu_mig_graphics_engine_active_ratio", kGauge, "ratio", kCompute,
     kGpu, "Fraction of time the graphics/compute engine of one MIG instance was active (GPM, MIG labels)."},
    {FieldId::kGpuMigSmActive, "gpu_mig_sm_active_ratio", kGauge, "ratio", kCompute, kGpu,
     "SM active of one MIG instance, over its own SMs (GPM, MIG labels)."},
    {FieldId::kGpuMigSmOccupancy, "gpu_mig_sm_occupancy_ratio", kGauge, "ratio", kCompute, kGpu,
     "SM occupancy of one MIG instance (GPM, MIG labels)."},
    {FieldId::kGpuMigTensorActive, "gpu_mig_tensor_core_util_ratio", kGauge, "ratio", kCompute, kGpu,
     "Fraction of cycles any tensor pipe of one MIG instance was active (GPM, MIG labels)."},
    {FieldId::kGpuMigDramActive, "gpu_mig_mem_bandwidth_util_ratio", kGauge, "ratio", kMemory, kGpu,
     "DRAM bandwidth utilisation of one MIG instance (GPM, MIG labels)."},
    // ---- host ----------------------------------------------------------
    {FieldId::kHostCpuSeconds, "host_cpu_seconds_total", kCounter, "seconds", kHost, kNode,
     "CPU time summed over CPUs, by mode (label mode)."},
    {FieldId::kHostCpuCount, "host_cpus", kGauge, "", kHost, kNode, "Online CPUs."},
    {FieldId::kHostPressureCpuWaiting, "host_pressure_cpu_waiting_seconds_total", kCounter, "seconds",
     kHost, kNode, "PSI: time some task waited for a CPU."},
    {FieldId::kHostPressureIoWaiting, "host_pressure_io_waiting_seconds_total", kCounter, "seconds",
     kHost, kNode, "PSI: time some task waited for IO."},
    {FieldId::kHostPressureIoStalled, "host_pressure_io_stalled_seconds_total", kCounter, "seconds",
     kHost, kNode, "PSI: time all non-idle tasks were stalled on IO."},
    {FieldId::kHostPressureMemoryWaiting, "host_pressure_memory_waiting_seconds_total", kCounter, "seconds",
     kHost, kNode, "PSI: time some task waited for memory."},
    {FieldId::kHostDiskIoTime, "host_disk_io_time_seconds_total", kCounter, "seconds", kHost, kNode,
     "Time the disk was busy with IO (label device)."},
    {FieldId::kHostDiskReadBytes, "host_disk_read_bytes_total", kCounter, "bytes", kHost, kNode,
     "Bytes read from the disk (label device)."},
    {FieldId::kHostDiskWrittenBytes, "host_disk_written_bytes_total", kCounter, "bytes", kHost, kNode,
     "Bytes written to the disk (label device)."},
    {FieldId::kHostNetworkReceiveBytes, "host_network_receive_bytes_total", kCounter, "bytes", kHost, kNode,
     "Bytes received by the network interface (label device)."},
    {FieldId::kHostNetworkTransmitBytes, "host_network_transmit_bytes_total", kCounter, "bytes", kHost,
     kNode, "Bytes sent by the network interface (label device)."},
    {FieldId::kHostNetworkSpeed, "host_network_speed_bytes", kGauge, "bytes", kHost, kNode,
     "Link speed of the network interface in bytes per second (label device)."},
    {FieldId::kHostInfinibandReceiveBytes, "host_infiniband_receive_bytes_total", kCounter, "bytes", kHost,
     kNode, "Bytes received by the InfiniBand/RoCE port (labels device, port)."},
    {FieldId::kHostInfinibandTransmitBytes, "host_infiniband_transmit_bytes_total", kCounter, "bytes",
     kHost, kNode, "Bytes sent by the InfiniBand/RoCE port (labels device, port)."},
    {FieldId::kHostInfinibandRate, "host_infiniband_rate_bytes", kGauge, "bytes", kHost, kNode,
     "Link rate of the InfiniBand/RoCE port in bytes per second (labels device, port)."},
    {FieldId::kHostProcessCpuAffinity, "host_gpu_process_affinity_info", kInfo, "", kHost, kNode,
     "CPUs and NUMA nodes a GPU process may run on (labels pid, gpu, cpus, numa_nodes)."},
    {FieldId::kGpuPodInfo, "gpu_pod_info", kInfo, "", kHost, kNode,
     "Kubernetes container the kubelet gave a GPU or MIG device (labels resource, device, gpu_uuid, namespace, "
     "pod, container)."},
    {FieldId::kGpuJobInfo, "gpu_job_info", kInfo, "", kHost, kGpu,
     "Training job holding the GPU, from the Slurm job mapping directory or its processes' environment (labels "
     "job_id, source, rank, local_rank, world_size, group_rank)."},
    {FieldId::kKubeletAllocatableDevices, "gpu_kubelet_allocatable_devices", kGauge, "", kHost, kNode,
     "Devices of the resource (label resource) the kubelet can hand to pods."},
    // ---- serving -------------------------------------------------------
    {FieldId::kServingLatency, "serving_request_latency_seconds", kHistogram, "seconds", kServing, kNode,
     "End-to-end request latency of the inference server on this node."},
    {FieldId::kServingLatencyP99, "serving_request_latency_p99_seconds", kGauge, "seconds", kServing, kNode,
     "99th percentile of end-to-end request latency as the inference server computes it over its own sliding "
     "window, worst model (Triton's nv_inference_request_summary_us with summary_latencies=true)."},
    {FieldId::kServingRequestsRunning, "serving_requests_running", kGauge, "", kServing, kNode,
     "Requests being processed by the inference server."},
    {FieldId::kServingRequestsWaiting, "serving_requests_waiting", kGauge, "", kServing, kNode,
     "Requests queued in the inference server."},
    {FieldId::kServingRequestDuration, "serving_request_duration_seconds_total", kCounter, "seconds", kServing, kNode,
     "Time the inference server spent on its successful requests, summed (Triton's only latency by default: "
     "over serving_requests_succeeded_total, the mean)."},
    {FieldId::kServingRequestsSucceeded, "serving_requests_succeeded_total", kCounter, "", kServing, kNode,
     "Requests the inference server finished successfully."},
    {FieldId::kServingTimeToFirstToken, "serving_time_to_first_token_seconds", kHistogram, "seconds", kServing, kNode,
     "Time from a request's arrival to its first output token, per engine (label engine; vLLM, SGLang)."},
    {FieldId::kServingInterTokenLatency, "serving_inter_token_latency_seconds", kHistogram, "seconds", kServing,
     kNode,
     "Time between two output tokens of a request, per engine (vLLM V1 inter_token_latency, V0 and SGLang "
     "time_per_output_token)."},
    {FieldId::kServingQueueTime, "serving_queue_time_seconds", kHistogram, "seconds", kServing, kNode,
     "Time a request waited in the engine's queue before it was scheduled, per engine (vLLM V1, TGI)."},
    {FieldId::kServingKvCacheUsage, "serving_kv_cache_usage_ratio", kGauge, "ratio", kServing, kNode,
     "Fraction of the engine's KV cache in use, per engine (vLLM kv_cache_usage_perc, V0 gpu_cache_usage_perc; "
     "SGLang token_usage); 1 is full."},
    {FieldId::kServingPreemptions, "serving_preemptions_total", kCounter, "", kServing, kNode,
     "Requests the engine preempted (their KV cache freed, to be recomputed) for lack of KV-cache space (vLLM)."},
    {FieldId::kServingPromptTokens, "serving_prompt_tokens_total", kCounter, "", kServing, kNode,
     "Prompt (prefill) tokens the engine processed."},
    {FieldId::kServingGenerationTokens, "serving_generation_tokens_total", kCounter, "", kServing, kNode,
     "Tokens the engine generated."},
    {FieldId::kServingRequestsWaitingByReason, "serving_requests_waiting_by_reason", kGauge, "", kServing, kNode,
     "Requests queued in the engine, by why they wait (label reason, the engine's own: vLLM V1 capacity, for "
     "KV-cache space or a batch slot; deferred)."},
    {FieldId::kServingPrefixCacheHitRatio, "serving_prefix_cache_hit_ratio", kGauge, "ratio", kServing, kNode,
     "Fraction of the prompt tokens looked up in the engine's prefix cache that it found there (vLLM V1 "
     "prefix_cache_hits_total over prefix_cache_queries_total, their increase since the previous scrape; "
     "SGLang cache_hit_rate); absent while nothing was looked up."},
    {FieldId::kServingBatchMaxTokens, "serving_batch_max_tokens", kGauge, "", kServing, kNode,
     "Tokens the engine's running batch may grow to: its prompts and their new-token budgets (TGI "
     "batch_current_max_tokens; the engine adds requests while this is below its --max-batch-total-tokens)."},
    {FieldId::kServingEngineInfo, "serving_engine_info", kInfo, "", kServing, kNode,
     "One serving engine and the model it serves (labels engine, endpoint, model; pid where known), from the "
     "engine's own labels (vLLM and SGLang model_name, Triton model)."},
    // ---- agent ---------------------------------------------------------
    {FieldId::kAgentSourceUp, "gpulens_source_up", kGauge, "", kAgent, kNode,
     "1 when the source's last collection succeeded (label source)."},
    {FieldId::kAgentSourceDownReason, "gpulens_source_down_reason", kGauge, "", kAgent, kNode,
     "1 while a scrape target is down, why in label reason: timeout, refused, unreachable, tls, http_status, "
     "too_large, too_many_series, parse_error, bad_values, error (labels source, target); absent while it is up."},
    {FieldId::kAgentCollectionDuration, "gpulens_collection_duration_seconds", kGauge, "seconds", kAgent,
     kNode, "Duration of the source's last collection (label source)."},
    {FieldId::kAgentSourceAge, "gpulens_sample_age_seconds", kGauge, "seconds", kAgent, kNode,
     "Age of the last complete sample of the source (label source)."},
    {FieldId::kAgentSeries, "gpulens_series", kGauge, "", kAgent, kNode, "Series the agent exports."},
    {FieldId::kAgentBuildInfo, "gpulens_build_info", kInfo, "", kAgent, kNode,
     "Build of the agent (label version)."},
    {FieldId::kAgentSimulated, "gpulens_simulated", kGauge, "", kAgent, kNode,
     "1 when the GPU data is simulated (scenario in label scenario)."},
    {FieldId::kAgentFinding, "gpulens_finding", kGauge, "", kAgent, kGpu,
     "1 while the cause of a firing finding holds (labels cause, severity)."},
    {FieldId::kAgentWasteGpuSeconds, "gpulens_waste_gpu_seconds_total", kCounter, "seconds", kAgent, kGpu,
     "GPU-seconds lost to the cause in label cause (1 - SM active while it holds)."},
    {FieldId::kAgentRemoteWriteSamples, "gpulens_remote_write_samples_total", kCounter, "", kAgent, kNode,
     "Samples that left the remote_write queue, by result (sent, failed: rejected with 4xx, dropped: "
     "queue full)."},
    {FieldId::kAgentRemoteWriteQueueSamples, "gpulens_remote_write_queue_samples", kGauge, "", kAgent, kNode,
     "Samples waiting in the remote_write queue, including the batch in flight."},
    {FieldId::kAgentRemoteWriteQueueCapacity, "gpulens_remote_write_queue_capacity_samples", kGauge, "",
     kAgent, kNode, "Samples the remote_write queue holds before it drops the oldest."},
    {FieldId::kAgentRemoteWriteRetries, "gpulens_remote_write_retries_total", kCounter, "", kAgent, kNode,
     "Remote_write requests retried after a network error, 5xx or 429."},
    {FieldId::kAgentRemoteWriteLastSuccess, "gpulens_remote_write_last_success_timestamp_seconds", kGauge,
     "seconds", kAgent, kNode, "Unix time of the last request the remote_write receiver accepted."},
    {FieldId::kAgentPushGroups, "gpulens_push_groups", kGauge, "", kAgent, kNode,
     "Push groups the receiver holds (Pushgateway grouping keys and OTLP resources)."},
    {FieldId::kAgentPushSeries, "gpulens_push_series", kGauge, "", kAgent, kNode,
     "Pushed series the receiver exports."},
    {FieldId::kAgentPushRejected, "gpulens_push_rejected_total", kCounter, "", kAgent, kNode,
     "Pushes refused, by reason (label reason); expired groups count under reason=\"expired\"."},
    {FieldId::kAgentSeriesDropped, "gpulens_series_dropped_total", kCounter, "", kAgent, kNode,
     "Series a pusher or a scrape target sent that the agent refused or dropped, by source and reason (a series "
     "budget, an invalid label or value, a duplicate); docs/limits.md."},
    {FieldId::kAgentHistoryBytes, "gpulens_history_bytes", kGauge, "bytes", kAgent, kNode,
     "Memory the in-memory history (diagnosis, /api/v1/history) takes: compressed values, chunk and ring "
     "overhead, record times."},
    {FieldId::kAgentHistoryBytesPerSample, "gpulens_history_bytes_per_sample", kGauge, "bytes", kAgent, kNode,
     "gpulens_history_bytes over the values the history holds (every record of every kept series)."},
}};

constexpr bool catalog_in_enum_order() {
  for (size_t i = 0; i < kCatalog.size(); ++i) {
    if (static_cast<size_t>(kCatalog[i].id) != i) return false;
  }
  return true;
}
static_assert(catalog_in_enum_order(), "catalog rows must follow FieldId order");


// dcgm-exporter rows. The first block is etc/default-counters.csv in its own
// order, types and help text; the second the other DCGM fields gpulens can
// give (types from dcgm-exporter's dcp-metrics-included.csv where it lists
// them). DCGM_FI_DEV_VGPU_LICENSE_STATUS (vGPU guests only) is not given.
constexpr double kToMiB = 1.0 / (1024.0 * 1024.0);
constexpr double kToMHz = 1e-6;
constexpr double kToPercent = 100.0;
using enum DcgmValue;
using F = FieldId;

// A row under DCGM 4.6/4.7's name that dcgm-exporter 4.9 writes instead of `renames`.
constexpr DcgmRow N49(std::string_view name, uint16_t id, MetricType type, DcgmValue value, FieldId f, double scale,
                      DcgmLabel extra, std::string_view help, bool default_counter, std::string_view renames,
                      FieldId field2 = FieldId::kCount) {
  return {name, id, type, value, f, scale, extra, help, default_counter, field2, DcgmGeneration::kDcgm49, renames};
}
// A profiling byte rate under dcgm-exporter 4.10's name (same unit, B/s).
constexpr DcgmRow N410(std::string_view name, uint16_t id, FieldId f, std::string_view renames) {
  return {name, id, kGauge, kInt, f, 1.0, {}, "Bytes per second.", false, FieldId::kCount, DcgmGeneration::kDcgm410,
          renames};
}

constexpr DcgmRow kDcgm[] = {
    {"DCGM_FI_DEV_SM_CLOCK", 100, kGauge, kInt, F::kGpuSmClock, kToMHz, {}, "SM clock frequency (in MHz).", true},
    {"DCGM_FI_DEV_MEM_CLOCK", 101, kGauge, kInt, F::kGpuMemClock, kToMHz, {}, "Memory clock frequency (in MHz).",
     true},
    {"DCGM_FI_DEV_MEMORY_TEMP", 140, kGauge, kInt, F::kGpuMemoryTemperature, 1.0, {}, "Memory temperature (in C).",
     true},
    {"DCGM_FI_DEV_GPU_TEMP", 150, kGauge, kInt, F::kGpuTemperature, 1.0, {}, "GPU temperature (in C).", true},
    {"DCGM_FI_DEV_POWER_USAGE", 155, kGauge, kDouble, F::kGpuPower, 1.0, {}, "Power draw (in W).", true},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156, kCounter, kInt, F::kGpuEnergy, 1000.0, {},
     "Total energy consumption since boot (in mJ).", true},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 202, kCounter, kInt, F::kGpuPcieReplays, 1.0, {},
     "Total number of PCIe retries.", true},
    {"DCGM_FI_DEV_GPU_UTIL", 203, kGauge, kInt, F::kGpuUtilization, kToPercent, {}, "GPU utilization (in %).", true},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", 204, kGauge, kInt, F::kGpuMemoryUtil, kToPercent, {},
     "Memory utilization (in %).", true},
    {"DCGM_FI_DEV_ENC_UTIL", 206, kGauge, kInt, F::kGpuEncoderUtil, kToPercent, {}, "Encoder utilization (in %).",
     true},
    {"DCGM_FI_DEV_DEC_UTIL", 207, kGauge, kInt, F::kGpuDecoderUtil, kToPercent, {}, "Decoder utilization (in %).",
     true},
    // 0 on a GPU that had no XID (the exporter fills it in).
    {"DCGM_FI_DEV_XID_ERRORS", 230, kGauge, kInt, F::kGpuLastXid, 1.0, {},
     "Value of the last XID error encountered.", true},
    {"DCGM_FI_DEV_FB_FREE", 251, kGauge, kInt, F::kGpuMemoryFree, kToMiB, {}, "Framebuffer memory free (in MiB).",
     true},
    {"DCGM_FI_DEV_FB_USED", 252, kGauge, kInt, F::kGpuMemoryUsed, kToMiB, {}, "Framebuffer memory used (in MiB).",
     true},
    {"DCGM_FI_DEV_FB_RESERVED", 253, kGauge, kInt, F::kGpuMemoryReserved, kToMiB, {},
     "Framebuffer memory reserved (in MiB).", true},
    // NVML's NVLink data counters in KiB, both directions, every link.
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449, kCounter, kInt, F::kGpuNvlinkTxBytes, 1.0 / 1024.0, {},
     "Total number of NVLink bandwidth counters for all lanes.", true, F::kGpuNvlinkRxBytes},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 393, kCounter, kInt, F::kGpuRemappedRows, 1.0,
     {"cause", "uncorrectable"}, "Number of remapped rows for uncorrectable errors", true},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 394, kCounter, kInt, F::kGpuRemappedRows, 1.0, {"cause", "correctable"},
     "Number of remapped rows for correctable errors", true},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", 395, kGauge, kInt, F::kGpuRowRemapFailure, 1.0, {},
     "Whether remapping of rows has failed", true},
    {"DCGM_FI_DEV_ROW_REMAP_PENDING", 396, kGauge, kInt, F::kGpuRowRemapPending, 1.0, {},
     "Whether remapping of rows is pending", false},
    // NVLink5 recovery counts (NVML fields 213-215, summed over the links).
    {"DCGM_FI_DEV_NVLINK_RECOVERY_SUCCESSFUL_TOTAL", 1211, kCounter, kInt, F::kGpuNvlinkRecoveries, 1.0,
     {"result", "successful"}, "Number of times link went from Up to recovery, succeeded and link came back up",
     false},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_FAILED_TOTAL", 1212, kCounter, kInt, F::kGpuNvlinkRecoveries, 1.0,
     {"result", "failed"}, "Number of times link went from Up to recovery, failed and link was declared down",
     false},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_EVENT_TOTAL", 1213, kCounter, kInt, F::kGpuNvlinkRecoveryEvents, 1.0, {},
     "Number of times link went from Up to recovery, irrespective of the result", false},
    {"DCGM_FI_DRIVER_VERSION", 1, kGauge, kLabel, F::kGpuInfo, 1.0, {}, "Driver Version", true},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001, kGauge, kDouble, F::kGpuGraphicsEngineActive, 1.0, {},
     "Ratio of time the graphics engine is active.", true},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004, kGauge, kDouble, F::kGpuTensorActive, 1.0, {},
     "Ratio of cycles the tensor (HMMA) pipe is active.", true},
    {"DCGM_FI_PROF_DRAM_ACTIVE", 1005, kGauge, kDouble, F::kGpuDramActive, 1.0, {},
     "Ratio of cycles the device memory interface is active sending or receiving data.", true},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", 1009, kGauge, kInt, F::kGpuPcieTxRate, 1.0, {},
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in "
     "bytes per second.",
     true},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", 1010, kGauge, kInt, F::kGpuPcieRxRate, 1.0, {},
     "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes "
     "per second.",
     true},
    // ---- beyond the default counters ----
    {"DCGM_FI_PROF_SM_ACTIVE", 1002, kGauge, kDouble, F::kGpuSmActive, 1.0, {},
     "The ratio of cycles an SM has at least 1 warp assigned."},
    {"DCGM_FI_PROF_SM_OCCUPANCY", 1003, kGauge, kDouble, F::kGpuSmOccupancy, 1.0, {},
     "The ratio of number of warps resident on an SM."},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1006, kGauge, kDouble, F::kGpuFp64Active, 1.0, {},
     "Ratio of cycles the fp64 pipes are active."},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1007, kGauge, kDouble, F::kGpuFp32Active, 1.0, {},
     "Ratio of cycles the fp32 pipes are active."},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1008, kGauge, kDouble, F::kGpuFp16Active, 1.0, {},
     "Ratio of cycles the fp16 pipes are active."},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", 1011, kGauge, kInt, F::kGpuNvlinkTxRate, 1.0, {},
     "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second."},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", 1012, kGauge, kInt, F::kGpuNvlinkRxRate, 1.0, {},
     "The rate of data received over NVLink, not including protocol headers, in bytes per second."},
    {"DCGM_FI_DEV_MAX_SM_CLOCK", 110, kGauge, kInt, F::kGpuSmClockMax, kToMHz, {},
     "Maximum supported SM clock (in MHz)."},
    {"DCGM_FI_DEV_MAX_MEM_CLOCK", 111, kGauge, kInt, F::kGpuMemClockMax, kToMHz, {},
     "Maximum supported memory clock (in MHz)."},
    {"DCGM_FI_DEV_FB_TOTAL", 250, kGauge, kInt, F::kGpuMemoryTotal, kToMiB, {}, "Framebuffer memory total (in MiB)."},
    {"DCGM_FI_DEV_PCIE_LINK_GEN", 237, kGauge, kInt, F::kGpuPcieLinkGen, 1.0, {}, "PCIe current link generation."},
    {"DCGM_FI_DEV_PCIE_MAX_LINK_GEN", 235, kGauge, kInt, F::kGpuPcieLinkGenMax, 1.0, {},
     "PCIe maximum link generation."},
    {"DCGM_FI_DEV_PCIE_LINK_WIDTH", 238, kGauge, kInt, F::kGpuPcieLinkWidth, 1.0, {}, "PCIe current link width."},
    {"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 236, kGauge, kInt, F::kGpuPcieLinkWidthMax, 1.0, {},
     "PCIe maximum link width."},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 164, kGauge, kDouble, F::kGpuPowerLimit, 1.0, {},
     "Effective power limit that the driver enforces (in W)."},
    // Field 112 under its DCGM 4 name and under the older one dashboards use.
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112, kGauge, kInt, F::kGpuClockEventReasons, 1.0, {},
     "Current clock event reasons (bitmask)."},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112, kGauge, kInt, F::kGpuClockEventReasons, 1.0, {},
     "Current clock throttle reasons (bitmask; older name of DCGM_FI_DEV_CLOCKS_EVENT_REASONS)."},
    {"DCGM_FI_DEV_PSTATE", 190, kGauge, kInt, F::kGpuPstate, 1.0, {}, "Performance state (P-State) 0-15."},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 310, kCounter, kInt, F::kGpuEccErrors, 1.0, {"type", "corrected"},
     "Total number of single-bit volatile ECC errors."},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 311, kCounter, kInt, F::kGpuEccErrors, 1.0, {"type", "uncorrected"},
     "Total number of double-bit volatile ECC errors."},
    // ---- the names of DCGM 4.6/4.7 that dcgm-exporter 4.9 writes by default (units changed where DCGM's did:
    // Hz, J, 0..1 ratios, bytes, B/s), then dcgm-exporter 4.10's profiling byte rates (read, never written).
    N49("DCGM_FI_DEV_SM_CLOCK_HERTZ", 1603, kGauge, kInt, F::kGpuSmClock, 1.0, {}, "SM clock frequency (in Hz).", true,
        "DCGM_FI_DEV_SM_CLOCK"),
    N49("DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", 1604, kGauge, kInt, F::kGpuMemClock, 1.0, {},
        "Memory clock frequency (in Hz).", true, "DCGM_FI_DEV_MEM_CLOCK"),
    N49("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", 140, kGauge, kInt, F::kGpuMemoryTemperature, 1.0, {},
        "Memory temperature (in C).", true, "DCGM_FI_DEV_MEMORY_TEMP"),
    N49("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 150, kGauge, kInt, F::kGpuTemperature, 1.0, {}, "GPU temperature (in C).",
        true, "DCGM_FI_DEV_GPU_TEMP"),
    N49("DCGM_FI_DEV_BOARD_POWER_WATTS", 155, kGauge, kDouble, F::kGpuPower, 1.0, {}, "Power draw (in W).", true,
        "DCGM_FI_DEV_POWER_USAGE"),
    N49("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", 1611, kCounter, kDouble, F::kGpuEnergy, 1.0, {},
        "Total energy consumption since boot (in J).", true, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
    N49("DCGM_FI_DEV_PCIE_REPLAY_TOTAL", 202, kCounter, kInt, F::kGpuPcieReplays, 1.0, {},
        "Total number of PCIe retries.", true, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"),
    N49("DCGM_FI_DEV_GPU_UTIL_RATIO", 1613, kGauge, kDouble, F::kGpuUtilization, 1.0, {},
        "GPU utilization (ratio 0-1).", true, "DCGM_FI_DEV_GPU_UTIL"),
    N49("DCGM_FI_DEV_MEMORY_UTIL_RATIO", 1614, kGauge, kDouble, F::kGpuMemoryUtil, 1.0, {},
        "Memory utilization (ratio 0-1).", true, "DCGM_FI_DEV_MEM_COPY_UTIL"),
    N49("DCGM_FI_DEV_ENC_UTIL_RATIO", 1615, kGauge, kDouble, F::kGpuEncoderUtil, 1.0, {},
        "Encoder utilization (ratio 0-1).", true, "DCGM_FI_DEV_ENC_UTIL"),
    N49("DCGM_FI_DEV_DEC_UTIL_RATIO", 1616, kGauge, kDouble, F::kGpuDecoderUtil, 1.0, {},
        "Decoder utilization (ratio 0-1).", true, "DCGM_FI_DEV_DEC_UTIL"),
    N49("DCGM_FI_DEV_XID_ERROR", 230, kGauge, kInt, F::kGpuLastXid, 1.0, {}, "Value of the last XID error encountered.",
        true, "DCGM_FI_DEV_XID_ERRORS"),
    N49("DCGM_FI_DEV_FB_CAPACITY_BYTES", 1625, kGauge, kInt, F::kGpuMemoryTotal, 1.0, {},
        "Framebuffer memory total (in bytes).", true, "DCGM_FI_DEV_FB_TOTAL"),
    N49("DCGM_FI_DEV_FB_FREE_BYTES", 1626, kGauge, kInt, F::kGpuMemoryFree, 1.0, {},
        "Framebuffer memory free (in bytes).", true, "DCGM_FI_DEV_FB_FREE"),
    N49("DCGM_FI_DEV_FB_USED_BYTES", 1627, kGauge, kInt, F::kGpuMemoryUsed, 1.0, {},
        "Framebuffer memory used (in bytes).", true, "DCGM_FI_DEV_FB_USED"),
    N49("DCGM_FI_DEV_FB_RESERVED_BYTES", 1628, kGauge, kInt, F::kGpuMemoryReserved, 1.0, {},
        "Framebuffer memory reserved (in bytes).", true, "DCGM_FI_DEV_FB_RESERVED"),
    N49("DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND", 1648, kGauge, kInt, F::kGpuNvlinkTxRate, 1.0, {},
        "NVLink throughput over all links, both directions (in B/s).", true, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        F::kGpuNvlinkRxRate),
    N49("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", 393, kCounter, kInt, F::kGpuRemappedRows, 1.0,
        {"cause", "uncorrectable"}, "Number of remapped rows for uncorrectable errors", true,
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
    N49("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", 394, kCounter, kInt, F::kGpuRemappedRows, 1.0,
        {"cause", "correctable"}, "Number of remapped rows for correctable errors", true,
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
    N49("DCGM_FI_DEV_ROW_REMAP_FAILED", 395, kGauge, kInt, F::kGpuRowRemapFailure, 1.0, {},
        "Whether remapping of rows has failed", true, "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
    N49("DCGM_FI_SYSTEM_DRIVER_VERSION", 1, kGauge, kLabel, F::kGpuInfo, 1.0, {}, "Driver Version", true,
        "DCGM_FI_DRIVER_VERSION"),
    N49("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", 1001, kGauge, kDouble, F::kGpuGraphicsEngineActive, 1.0, {},
        "Ratio of time the graphics engine is active.", true, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
    N49("DCGM_FI_PROF_SM_UTIL_RATIO", 1002, kGauge, kDouble, F::kGpuSmActive, 1.0, {},
        "The ratio of cycles an SM has at least 1 warp assigned.", false, "DCGM_FI_PROF_SM_ACTIVE"),
    N49("DCGM_FI_PROF_SM_OCCUPANCY_RATIO", 1003, kGauge, kDouble, F::kGpuSmOccupancy, 1.0, {},
        "The ratio of number of warps resident on an SM.", false, "DCGM_FI_PROF_SM_OCCUPANCY"),
    N49("DCGM_FI_PROF_TENSOR_UTIL_RATIO", 1004, kGauge, kDouble, F::kGpuTensorActive, 1.0, {},
        "Ratio of cycles the tensor (HMMA) pipe is active.", true, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
    N49("DCGM_FI_PROF_DRAM_UTIL_RATIO", 1005, kGauge, kDouble, F::kGpuDramActive, 1.0, {},
        "Ratio of cycles the device memory interface is active sending or receiving data.", true,
        "DCGM_FI_PROF_DRAM_ACTIVE"),
    N49("DCGM_FI_PROF_FP64_UTIL_RATIO", 1006, kGauge, kDouble, F::kGpuFp64Active, 1.0, {},
        "Ratio of cycles the fp64 pipes are active.", false, "DCGM_FI_PROF_PIPE_FP64_ACTIVE"),
    N49("DCGM_FI_PROF_FP32_UTIL_RATIO", 1007, kGauge, kDouble, F::kGpuFp32Active, 1.0, {},
        "Ratio of cycles the fp32 pipes are active.", false, "DCGM_FI_PROF_PIPE_FP32_ACTIVE"),
    N49("DCGM_FI_PROF_FP16_UTIL_RATIO", 1008, kGauge, kDouble, F::kGpuFp16Active, 1.0, {},
        "Ratio of cycles the fp16 pipes are active.", false, "DCGM_FI_PROF_PIPE_FP16_ACTIVE"),
    N410("DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", 1009, F::kGpuPcieTxRate, "DCGM_FI_PROF_PCIE_TX_BYTES"),
    N410("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", 1010, F::kGpuPcieRxRate, "DCGM_FI_PROF_PCIE_RX_BYTES"),
    N410("DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", 1011, F::kGpuNvlinkTxRate, "DCGM_FI_PROF_NVLINK_TX_BYTES"),
    N410("DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND", 1012, F::kGpuNvlinkRxRate, "DCGM_FI_PROF_NVLINK_RX_BYTES"),
};

}  // namespace

MigRead mig_read(FieldId f, FieldId& own) {
  using F = FieldId;
  struct Own {
    F gpu, mig;
  };
  static constexpr Own kOwnFields[] = {
      {F::kGpuMemoryUsed, F::kGpuMigMemoryUsed},       {F::kGpuMemoryFree, F::kGpuMigMemoryFree},
      {F::kGpuGraphicsEngineActive, F::kGpuMigGraphicsEngineActive}, {F::kGpuSmActive, F::kGpuMigSmActive},
      {F::kGpuSmOccupancy, F::kGpuMigSmOccupancy},     {F::kGpuTensorActive, F::kGpuMigTensorActive},
      {F::kGpuDramActive, F::kGpuMigDramActive},
  };
  for (const Own& o : kOwnFields) {
    if (o.gpu == f) {
      own = o.mig;
      return MigRead::kOwn;
    }
  }
  switch (f) {
    case F::kGpuMemoryTotal:
    case F::kGpuMemoryReserved:
    case F::kGpuUtilization:
    case F::kGpuMemoryUtil:
    case F::kGpuEncoderUtil:
    case F::kGpuDecoderUtil:
    case F::kGpuFp64Active:
    case F::kGpuFp32Active:
    case F::kGpuFp16Active:
    case F::kGpuPcieTxRate:
    case F::kGpuPcieRxRate:
    case F::kGpuNvlinkTxRate:
    case F::kGpuNvlinkRxRate: return MigRead::kNone;
    default: return MigRead::kDevice;
  }
}

std::span<const DcgmRow> dcgm_rows() { return kDcgm; }

const DcgmRow* find_dcgm_row(std::string_view name) {
  for (const DcgmRow& r : kDcgm) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

bool dcgm_written(const DcgmRow& row, DcgmGeneration naming) {
  if (row.since > naming || row.since == DcgmGeneration::kDcgm410) return false;
  for (const DcgmRow& r : kDcgm) {
    if (r.renames == row.name && r.since <= naming && r.since != DcgmGeneration::kDcgm410) return false;
  }
  return true;
}

std::string_view dcgm_driver_row(DcgmGeneration naming) {
  for (const DcgmRow& r : kDcgm) {
    if (r.value == DcgmValue::kLabel && dcgm_written(r, naming)) return r.name;
  }
  return "DCGM_FI_DRIVER_VERSION";
}

bool dcgm_percent_or_ratio(const DcgmRow& row) {
  if (row.renames.empty() || row.scale != 1.0) return false;
  const DcgmRow* old = find_dcgm_row(row.renames);
  return old != nullptr && old->scale == kToPercent;
}

std::string_view dcgm_name(FieldId id) {
  for (const DcgmRow& r : kDcgm) {
    if (r.field == id && r.value != DcgmValue::kLabel && r.since == DcgmGeneration::kClassic) return r.name;
  }
  return {};
}

std::string dcgm_names_of(FieldId id) {
  std::string out;
  for (const DcgmRow& r : kDcgm) {
    if (r.field != id || r.value == DcgmValue::kLabel || r.since != DcgmGeneration::kClassic) continue;
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

std::span<const FieldDef> catalog() { return kCatalog; }

const FieldDef& field(FieldId id) { return kCatalog[static_cast<size_t>(id)]; }

std::optional<FieldId> find_field(std::string_view name) {
  for (const auto& f : kCatalog) {
    if (f.name == name) return f.id;
  }
  return std::nullopt;
}

std::string_view layer_name(Layer layer) {
  switch (layer) {
    case kCompute: return "compute";
    case kMemory: return "memory";
    case kIo: return "io";
    case kHealth: return "health";
    case kHost: return "host";
    case kServing: return "serving";
    case kAgent: return "agent";
  }
  return "?";
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case kGauge: return "gauge";
    case kCounter: return "counter";
    case kHistogram: return "histogram";
    case kInfo: return "info";
  }
  return "untyped";
}

std::string_view family_name(const FieldDef& f, bool openmetrics) {
  std::string_view n = f.name;
  if (!openmetrics) return n;
  if (f.type == kCounter && n.ends_with("_total")) n.remove_suffix(6);
  if (f.type == kInfo && n.ends_with("_info")) n.remove_suffix(5);
  return n;
}

std::span<const ClockReason> clock_reasons() {
  static constexpr std::array kReasons{
      ClockReason{0x1, "gpu_idle"},      ClockReason{0x2, "applications_clocks"},
      ClockReason{0x4, "sw_power_cap"},  ClockReason{0x8, "hw_slowdown"},
      ClockReason{0x10, "sync_boost"},   ClockReason{0x20, "sw_thermal"},
      ClockReason{0x40, "hw_thermal"},   ClockReason{0x80, "hw_power_brake"},
      ClockReason{0x100, "display_clocks"},
  };
  return kReasons;
}

std::span<const double> latency_buckets() {
  static constexpr std::array kBuckets{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                       0.3,   0.5,  0.75,  1.0,  2.5,   5.0, 10.0};
  return kBuckets;
}

}  // namespace gpulens
