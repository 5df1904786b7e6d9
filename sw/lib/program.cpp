#include "tpu/program.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tpu::isa {
namespace {

// Builds one instruction with `fill`, naming the instruction in any error a setter throws.
template <typename Fill>
Instruction build(Opcode opcode, std::size_t index, Fill&& fill) {
  Instruction instruction(opcode);
  try {
    fill(instruction);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(
        fmt::format("instruction {} ({}): {}", index,
                    find_opcode(static_cast<std::uint8_t>(opcode))->mnemonic, error.what()));
  }
  return instruction;
}

}  // namespace

ProgramBuilder::ProgramBuilder(const HardwareConfig& config) : config_(config) {
  validate_config(config_);
}

ProgramBuilder& ProgramBuilder::read_host(const ReadHostArgs& args) {
  return append(build(Opcode::ReadHost, size(), [&](Instruction& in) {
    in.set_flag(kReadHostFlagAcc, args.acc)
        .set_flag(kReadHostFlagI8, args.i8)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_addr_b(args.addr_b)
        .set_step_b(args.step_b)
        .set_host_addr(args.host_addr)
        .set_host_stride(args.host_stride)
        .set_host_step(args.host_step);
  }));
}

ProgramBuilder& ProgramBuilder::read_weights(const ReadWeightsArgs& args) {
  return append(build(Opcode::ReadWeights, size(), [&](Instruction& in) {
    in.set_flag(kReadWeightsFlagI8, args.i8)
        .set_flag(kReadWeightsFlagT, args.transposed)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_host_addr(args.host_addr)
        .set_host_stride(args.host_stride)
        .set_host_step(args.host_step);
  }));
}

ProgramBuilder& ProgramBuilder::matmul(const MatmulArgs& args) {
  return append(build(Opcode::Matmul, size(), [&](Instruction& in) {
    in.set_flag(kMatmulFlagAcc0, args.acc0)
        .set_flag(kMatmulFlagAccn, args.accn)
        .set_flag(kMatmulFlagFetch, args.fetch)
        .set_flag(kMatmulFlagI8, args.i8)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_addr_a(args.addr_a)
        .set_addr_b(args.addr_b)
        .set_step_a(args.step_a)
        .set_step_b(args.step_b)
        .set_host_addr(args.host_addr)
        .set_host_stride(args.host_stride)
        .set_host_step(args.host_step)
        .set_k_valid(args.k_valid.value_or(config_.dim))
        .set_n_valid(args.n_valid.value_or(config_.dim));
  }));
}

ProgramBuilder& ProgramBuilder::activate(const ActivateArgs& args) {
  return append(build(Opcode::Activate, size(), [&](Instruction& in) {
    in.set_flag(kActivateFlagBias, args.bias)
        .set_flag(kActivateFlagF32, args.f32)
        .set_flag(kActivateFlagReq, args.req)
        .set_func(args.func)
        .set_alpha(args.alpha)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_addr_a(args.addr_a)
        .set_addr_b(args.addr_b)
        .set_step_a(args.step_a)
        .set_step_b(args.step_b)
        .set_bias_addr(args.bias_addr)
        .set_bias_step(args.bias_step)
        .set_zero_point(args.zero_point)
        .set_clamp_lo(args.clamp_lo)
        .set_clamp_hi(args.clamp_hi);
  }));
}

ProgramBuilder& ProgramBuilder::write_host(const WriteHostArgs& args) {
  return append(build(Opcode::WriteHost, size(), [&](Instruction& in) {
    in.set_flag(kWriteHostFlagAcc, args.acc)
        .set_flag(kWriteHostFlagI8, args.i8)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_addr_a(args.addr_a)
        .set_step_a(args.step_a)
        .set_host_addr(args.host_addr)
        .set_host_stride(args.host_stride)
        .set_host_step(args.host_step);
  }));
}

ProgramBuilder& ProgramBuilder::allreduce(const AllreduceArgs& args) {
  return append(build(Opcode::Allreduce, size(), [&](Instruction& in) {
    in.set_flag(kAllreduceFlagPs, args.parameter_server)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_addr_a(args.addr_a)
        .set_step_a(args.step_a)
        .set_total(args.total)
        .set_offset(args.offset)
        .set(kOffsetStep, args.offset_step);
  }));
}

ProgramBuilder& ProgramBuilder::eltwise(const EltwiseArgs& args) {
  return append(build(Opcode::Eltwise, size(), [&](Instruction& in) {
    in.set_flag(kEltwiseFlagRow, args.row)
        .set_flag(kEltwiseFlagI32, args.int32)
        .set_flag(kEltwiseFlagLanes, args.lanes)
        .set_flag(kEltwiseFlagUb, args.ub)
        .set_vop(args.op)
        .set_count(args.count)
        .set_rows(args.rows)
        .set_addr_a(args.addr_a)
        .set_addr_b(args.addr_b)
        .set_step_a(args.step_a)
        .set_step_b(args.step_b)
        .set_bias_addr(args.bias_addr)
        .set_bias_step(args.bias_step);
  }));
}

ProgramBuilder& ProgramBuilder::sync() {
  return append(Instruction(Opcode::Sync));
}

ProgramBuilder& ProgramBuilder::halt() {
  return append(Instruction(Opcode::Halt));
}

ProgramBuilder& ProgramBuilder::append(const Instruction& instruction) {
  const CheckResult result = diagnose(instruction, config_);
  if (!result.ok()) {
    const OpcodeInfo* info = find_opcode(instruction.opcode_value());
    throw std::invalid_argument(fmt::format("instruction {} ({}): {}: {}", size(),
                                            info != nullptr ? info->mnemonic : "unknown opcode",
                                            regs::error_name(result.error), result.reason));
  }
  instructions_.push_back(instruction);
  return *this;
}

}  // namespace tpu::isa
