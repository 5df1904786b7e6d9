#include "tpu/serial_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "tpu/isa.hpp"
#include "tpu/regs.hpp"

namespace tpu {

namespace {

unsigned field(std::uint32_t value, std::uint32_t mask, unsigned lsb) {
  return (value & mask) >> lsb;
}

}  // namespace

HardwareConfig config_from_registers(std::uint32_t hw_array, std::uint32_t hw_memory,
                                     std::uint32_t hw_core) {
  HardwareConfig config;
  config.dim = field(hw_array, regs::kHwArrayDimMask, regs::kHwArrayDimLsb);
  config.mul_stages = field(hw_array, regs::kHwArrayMulStagesMask, regs::kHwArrayMulStagesLsb);
  config.add_stages = field(hw_array, regs::kHwArrayAddStagesMask, regs::kHwArrayAddStagesLsb);
  config.act_lanes = field(hw_array, regs::kHwArrayActLanesMask, regs::kHwArrayActLanesLsb);
  const unsigned ub_log2 =
      field(hw_memory, regs::kHwMemoryUbDepthLog2Mask, regs::kHwMemoryUbDepthLog2Lsb);
  const unsigned acc_log2 =
      field(hw_memory, regs::kHwMemoryAccDepthLog2Mask, regs::kHwMemoryAccDepthLog2Lsb);
  const unsigned bus_log2 =
      field(hw_memory, regs::kHwMemoryBusBytesLog2Mask, regs::kHwMemoryBusBytesLog2Lsb);
  if (ub_log2 > 16 || acc_log2 > 16 || bus_log2 > 6) {
    throw std::invalid_argument(
        fmt::format("HW_MEMORY 0x{:08X} describes no core: memories of 2^{} and 2^{} rows, "
                    "a bus of 2^{} bytes",
                    hw_memory, ub_log2, acc_log2, bus_log2));
  }
  config.ub_depth = 1u << ub_log2;
  config.acc_depth = 1u << acc_log2;
  config.bus_bytes = 1u << bus_log2;
  config.weight_tiles =
      field(hw_memory, regs::kHwMemoryWeightTilesMask, regs::kHwMemoryWeightTilesLsb);
  config.sequential = field(hw_core, regs::kHwCoreSequentialMask, regs::kHwCoreSequentialBit) != 0;
  if (field(hw_core, regs::kHwCoreLinksMask, regs::kHwCoreLinksBit) != 0) {
    config.link_lanes = field(hw_core, regs::kHwCoreLinkLanesMask, regs::kHwCoreLinkLanesLsb);
  }
  config.int8 = field(hw_core, regs::kHwCoreInt8Mask, regs::kHwCoreInt8Bit) != 0;
  config.float_datapath = field(hw_core, regs::kHwCoreInt8OnlyMask, regs::kHwCoreInt8OnlyBit) == 0;
  config.vector_lanes = field(hw_core, regs::kHwCoreVectorLanesMask, regs::kHwCoreVectorLanesLsb);
  isa::validate_config(config);
  return config;
}

SerialBackend::SerialBackend(std::unique_ptr<link::SerialPort> port,
                             const link::LinkOptions& link_options, std::size_t memory_bytes,
                             const SerialRunOptions& run_options)
    : port_(std::move(port)), link_(*port_, link_options), run_options_(run_options) {
  const std::uint32_t id = link_.read_register(regs::kId);
  if (id != regs::kIdReset) {
    throw std::invalid_argument(
        fmt::format("{}: the board's core identifies as 0x{:08X}, not a TPU core (0x{:08X})",
                    port_->name(), id, regs::kIdReset));
  }
  config_ = config_from_registers(link_.read_register(regs::kHwArray),
                                  link_.read_register(regs::kHwMemory),
                                  link_.read_register(regs::kHwCore));
  if (memory_bytes > board().mem_bytes) {
    throw std::invalid_argument(fmt::format("{} bytes of host memory are needed; the board has {}",
                                            memory_bytes, board().mem_bytes));
  }
  memory_.resize(memory_bytes);
}

RunResult SerialBackend::run(std::uint32_t prog_addr, std::uint32_t count) {
  if (memory_.size() > board().mem_bytes) {
    throw std::invalid_argument(fmt::format("{} bytes of host memory are needed; the board has {}",
                                            memory_.size(), board().mem_bytes));
  }
  try {
    return run_on_board(prog_addr, count);
  } catch (const link::LinkError&) {
    // The board may hold anything now: send everything next time.
    known_.clear();
    throw;
  }
}

RunResult SerialBackend::run_on_board(std::uint32_t prog_addr, std::uint32_t count) {
  upload_changes();
  link_.write_register(regs::kProgAddr, prog_addr);
  link_.write_register(regs::kProgCount, count);
  // START is not repeatable: a lost reply must not start the program twice.
  link_.write_register(regs::kCtrl, regs::kCtrlStartMask | regs::kCtrlIrqEnableMask, false);

  const double deadline = port_->elapsed_ms() + run_options_.run_timeout_ms;
  std::uint32_t status = 0;
  while (true) {
    status = link_.read_register(regs::kStatus);
    if (!(status & regs::kStatusBusyMask)) break;
    if (port_->elapsed_ms() > deadline) {
      throw link::LinkError(fmt::format("{}: the program was still running after {:.0f} ms",
                                        port_->name(), run_options_.run_timeout_ms));
    }
  }

  RunResult result;
  result.done = status & regs::kStatusDoneMask;
  if (status & regs::kStatusErrorMask) {
    result.error = static_cast<regs::Error>(link_.read_register(regs::kErrorCode));
    result.error_pc = link_.read_register(regs::kErrorPc);
  }
  Counters counters{};
  for (std::size_t c = 0; c < counters.size(); ++c) {
    const std::uint32_t lo = link_.read_register(regs::kCounters[c].offset);
    const std::uint32_t hi = link_.read_register(regs::kCounters[c].offset + 4);
    counters[c] = (std::uint64_t{hi} << 32) | lo;
  }
  result.counters = counters;
  result.instructions = counters[regs::kCntInstructionsIndex];

  for (const auto& [begin, end] : written_ranges(prog_addr, count)) download(begin, end);
  return result;
}

void SerialBackend::upload_changes() {
  const std::size_t size = memory_.size();
  const std::uint8_t* bytes = memory_.data();
  auto send = [&](std::size_t begin, std::size_t end) {
    link_.write_memory(static_cast<std::uint32_t>(begin), bytes + begin, end - begin);
    uploaded_ += end - begin;
  };
  // Runs of chunks that differ from what the board holds, or that it has never been sent.
  const std::size_t chunk = board().max_payload;
  std::size_t run_begin = 0;
  bool in_run = false;
  for (std::size_t at = 0; at < size; at += chunk) {
    const std::size_t end = std::min(at + chunk, size);
    const bool changed =
        end > known_.size() ||
        !std::equal(bytes + at, bytes + end, known_.begin() + static_cast<std::ptrdiff_t>(at));
    if (changed && !in_run) run_begin = at;
    if (!changed && in_run) send(run_begin, at);
    in_run = changed;
  }
  if (in_run) send(run_begin, size);
  known_.assign(bytes, bytes + size);
}

void SerialBackend::download(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end) return;
  link_.read_memory(static_cast<std::uint32_t>(begin), memory_.data() + begin, end - begin);
  std::copy(memory_.data() + begin, memory_.data() + end,
            known_.begin() + static_cast<std::ptrdiff_t>(begin));
  downloaded_ += end - begin;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> SerialBackend::written_ranges(
    std::uint32_t prog_addr, std::uint32_t count) const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = prog_addr + i * isa::kInstrBytes;
    if (!memory_.contains(at, isa::kInstrBytes)) break;
    const isa::Instruction in = isa::decode(memory_.data() + at);
    if (isa::find_opcode(in.opcode_value()) == nullptr) continue;
    const isa::Footprint fp = isa::footprint(in, config_.dim);
    if (!fp.writes_host) continue;
    const std::uint64_t begin = std::min<std::uint64_t>(in.host_addr(), memory_.size());
    const std::uint64_t end = std::min<std::uint64_t>(fp.host_end, memory_.size());
    if (begin < end) ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& range : ranges) {
    if (!merged.empty() && range.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

}  // namespace tpu
