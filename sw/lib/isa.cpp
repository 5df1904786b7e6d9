#include "tpu/isa.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpu::isa {
namespace {

using regs::Error;

constexpr std::uint64_t kHostSpace = std::uint64_t{1} << 32;

bool is_power_of_two(unsigned value) {
  return value != 0 && (value & (value - 1)) == 0;
}

bool flag_set(const Instruction& in, unsigned bit) { return bit != kNoFlag && in.flag(bit); }

// The entry of a generated table (opcodes, functions, vector operations) with that mnemonic.
template <typename Info, std::size_t N>
const Info* find_mnemonic(const std::array<Info, N>& table, std::string_view mnemonic) {
  const auto found = std::find_if(table.begin(), table.end(),
                                  [&](const Info& info) { return mnemonic == info.mnemonic; });
  return found == table.end() ? nullptr : &*found;
}

const char* find_flag_mnemonic(const OpcodeInfo& info, unsigned bit) {
  for (const FlagSpec& flag : info.flags) {
    if (flag.bit == bit) return flag.mnemonic;
  }
  return "?";
}

// Rows base + i * step + r for i < count, r < rows: [base, base + (count-1)*step + rows).
RowSpan span(Memory memory, std::uint32_t base, std::uint32_t step, std::uint32_t count,
             std::uint32_t rows) {
  const std::uint64_t iterations = count == 0 ? 0 : count - 1;
  return {true, memory, base, base + iterations * step + rows};
}

const char* memory_name(Memory memory) {
  return memory == Memory::Ub ? "unified buffer" : "accumulators";
}

std::uint64_t depth(Memory memory, const HardwareConfig& config) {
  return memory == Memory::Ub ? config.ub_depth : config.acc_depth;
}

Error range_error(Memory memory) {
  return memory == Memory::Ub ? Error::UbRange : Error::AccRange;
}

// Step 2 of "Errors": encoding and field-value rules (the opcode's rules in rtl/defs/isa.toml,
// which the cores' decoder is generated from too), and the datapaths the core was built with.
std::string field_problem(const Instruction& in, const OpcodeInfo& info,
                          const HardwareConfig& config) {
  const unsigned dim = config.dim;
  for (unsigned w = 0; w < kInstrWords; ++w) {
    const std::uint32_t stray = in.words[w] & ~info.used_bits[w];
    if (stray != 0) {
      return fmt::format("{} does not use bits 0x{:08x} of word {}", info.mnemonic, stray, w);
    }
  }
  const OpcodeRules& rules = *info.rules;
  if (rules.repeats) {
    if (in.count() == 0) return "count is 0";
    if (in.rows() == 0) return "rows is 0";
  }
  for (const FieldLimit& limit : rules.limits) {
    const std::uint32_t value = in.get(*limit.field);
    if (limit.limit == Limit::OneToDim && (value == 0 || value > dim)) {
      return fmt::format("{} {} is outside 1..{}", limit.field->name, value, dim);
    }
    if (limit.limit == Limit::Function && value >= kFuncCount) {
      return fmt::format("function code {} is above {}", value, kFuncCount - 1);
    }
    if (limit.limit == Limit::Function && value >= kFuncBaseCount && config.vector_lanes == 0) {
      return fmt::format("function {} needs a core with a vector unit; {} has none",
                         kFuncTable[value].mnemonic, config.name());
    }
    if (limit.limit == Limit::VectorOp && value >= kVectorOpCount) {
      return fmt::format("vector operation code {} is above {}", value, kVectorOpCount - 1);
    }
    if (limit.limit == Limit::NonZero && value == 0) {
      return fmt::format("{} is 0", limit.field->name);
    }
  }
  for (const ZeroUnless& rule : rules.zero_unless) {
    const bool allowed = rule.function ? in.func() == rule.condition : in.flag(rule.condition);
    const bool set = std::any_of(rule.fields.begin(), rule.fields.end(),
                                 [&](const FieldSpec* field) { return in.get(*field) != 0; });
    if (allowed || !set) continue;
    std::vector<std::string> names;
    for (const FieldSpec* field : rule.fields) names.emplace_back(field->name);
    return rule.function ? fmt::format("{} must be 0 for a function other than {}",
                                       fmt::join(names, ", "), rule.name)
                         : fmt::format("{} must be 0 without {}", fmt::join(names, ", "), rule.name);
  }
  for (const FlagRequires& rule : rules.requires) {
    if (in.flag(rule.flag) && !in.flag(rule.needed)) return rule.text;
  }
  for (const FlagExcludes& rule : rules.excludes) {
    if (!in.flag(rule.flag)) continue;
    if (flag_set(in, rule.other_flag) ||
        (rule.other_field != nullptr && in.get(*rule.other_field) != 0)) {
      return rule.text;
    }
  }
  // The decoder's datapath rules: an int8 flag needs the int8 datapath, a vector flag the vector
  // unit, and an opcode without its float_unless flag needs the float one.
  if (!config.int8) {
    for (const FlagSpec& flag : info.flags) {
      if (flag.int8 && in.flag(flag.bit)) {
        return fmt::format("{} {} needs a core with the int8 datapath; {} has none", info.mnemonic,
                           flag.mnemonic, config.name());
      }
    }
  }
  if (config.vector_lanes == 0) {
    for (const FlagSpec& flag : info.flags) {
      if (flag.vector && in.flag(flag.bit)) {
        return fmt::format("{} {} needs a core with a vector unit; {} has none", info.mnemonic,
                           flag.mnemonic, config.name());
      }
    }
  }
  if (!config.float_datapath && rules.float_unless != kNoFlag && !in.flag(rules.float_unless)) {
    return fmt::format("{} without {} needs the float datapath; {} is an int8-only core",
                       info.mnemonic, find_flag_mnemonic(info, rules.float_unless), config.name());
  }
  return {};
}

}  // namespace

Instruction& Instruction::set(const FieldSpec& field, std::uint64_t value) {
  const std::uint32_t mask = field_mask(field);
  if (value > mask) {
    throw std::invalid_argument(
        fmt::format("value {} does not fit in field {} ({} bits)", value, field.name, field.width));
  }
  words[field.word] =
      (words[field.word] & ~(mask << field.lsb)) | (static_cast<std::uint32_t>(value) << field.lsb);
  return *this;
}

Instruction& Instruction::set_flag(unsigned bit, bool on) {
  if (bit >= kFlags.width) {
    throw std::invalid_argument(fmt::format("flag bit {} is outside the flags field", bit));
  }
  const unsigned mask = 1u << bit;
  return set_flags(on ? (flags() | mask) : (flags() & ~mask));
}

Instruction& Instruction::set_int8(const FieldSpec& field, int value) {
  if (value < -128 || value > 127) {
    throw std::invalid_argument(
        fmt::format("value {} does not fit in field {} (int8, -128..127)", value, field.name));
  }
  return set(field, static_cast<std::uint32_t>(value) & 0xFFu);
}

const OpcodeInfo* find_opcode(std::uint8_t value) {
  for (const OpcodeInfo& info : kOpcodeTable) {
    if (static_cast<std::uint8_t>(info.opcode) == value) return &info;
  }
  return nullptr;
}

const OpcodeInfo* find_opcode(std::string_view mnemonic) {
  return find_mnemonic(kOpcodeTable, mnemonic);
}

const FuncInfo* find_func(unsigned value) {
  return value < kFuncTable.size() ? &kFuncTable[value] : nullptr;
}

const FuncInfo* find_func(std::string_view mnemonic) {
  return find_mnemonic(kFuncTable, mnemonic);
}

const VectorOpInfo* find_vector_op(unsigned value) {
  return value < kVectorOpTable.size() ? &kVectorOpTable[value] : nullptr;
}

const VectorOpInfo* find_vector_op(std::string_view mnemonic) {
  return find_mnemonic(kVectorOpTable, mnemonic);
}

std::array<std::uint8_t, kInstrBytes> encode(const Instruction& instruction) {
  std::array<std::uint8_t, kInstrBytes> bytes{};
  for (unsigned w = 0; w < kInstrWords; ++w) {
    for (unsigned b = 0; b < 4; ++b) {
      bytes[4 * w + b] = static_cast<std::uint8_t>(instruction.words[w] >> (8 * b));
    }
  }
  return bytes;
}

Instruction decode(const std::uint8_t* bytes) {
  Instruction instruction;
  for (unsigned w = 0; w < kInstrWords; ++w) {
    std::uint32_t word = 0;
    for (unsigned b = 0; b < 4; ++b) word |= std::uint32_t{bytes[4 * w + b]} << (8 * b);
    instruction.words[w] = word;
  }
  return instruction;
}

std::vector<std::uint8_t> encode_program(const std::vector<Instruction>& program) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(program.size() * kInstrBytes);
  for (const Instruction& instruction : program) {
    const auto encoded = encode(instruction);
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
  }
  return bytes;
}

std::vector<Instruction> decode_program(const std::uint8_t* bytes, std::size_t size) {
  if (size % kInstrBytes != 0) {
    throw std::invalid_argument(fmt::format(
        "a program of {} bytes is not a whole number of {}-byte instructions", size, kInstrBytes));
  }
  std::vector<Instruction> program;
  program.reserve(size / kInstrBytes);
  for (std::size_t offset = 0; offset < size; offset += kInstrBytes) {
    program.push_back(decode(bytes + offset));
  }
  return program;
}

std::vector<Instruction> decode_program(const std::vector<std::uint8_t>& bytes) {
  return decode_program(bytes.data(), bytes.size());
}

void validate_config(const HardwareConfig& config) {
  const auto fail = [](const std::string& what) {
    throw std::invalid_argument("hardware configuration: " + what);
  };
  if (!is_power_of_two(config.dim) || config.dim > 256) {
    fail(fmt::format("dim {} is not a power of two in 1..256", config.dim));
  }
  if (!is_power_of_two(config.ub_depth) || config.ub_depth < 4 || config.ub_depth > 65536) {
    fail(fmt::format("ub_depth {} is not a power of two in 4..65536", config.ub_depth));
  }
  if (!is_power_of_two(config.acc_depth) || config.acc_depth < 4 || config.acc_depth > 65536) {
    fail(fmt::format("acc_depth {} is not a power of two in 4..65536", config.acc_depth));
  }
  if (!is_power_of_two(config.bus_bytes) || config.bus_bytes < 4 || config.bus_bytes > 64) {
    fail(fmt::format("bus_bytes {} is not a power of two in 4..64", config.bus_bytes));
  }
  if (config.weight_tiles < 2 || config.weight_tiles > 16) {
    fail(fmt::format("weight_tiles {} is not in 2..16", config.weight_tiles));
  }
  if (config.link_lanes != 0 &&
      (config.sequential || config.dim < 4 || !is_power_of_two(config.link_lanes) ||
       config.link_lanes > config.dim)) {
    fail(fmt::format("link_lanes {} is not 0 or a power of two up to dim {} (an array core of "
                     "dim >= 4)",
                     config.link_lanes, config.dim));
  }
  if (config.int8 && config.sequential) {
    fail("int8: the int8 datapath is an option of the array core; the sequential core has none");
  }
  if (config.vector_lanes != 0 && (config.sequential || !is_power_of_two(config.vector_lanes) ||
                                   config.vector_lanes > config.dim || config.vector_lanes > 128)) {
    fail(
        fmt::format("vector_lanes {} is not 0 or a power of two up to dim {} and 128 (an array "
                    "core)",
                    config.vector_lanes, config.dim));
  }
  if (!config.float_datapath && (!config.int8 || config.link_lanes != 0)) {
    fail(
        "float_datapath off: an int8-only core needs the int8 datapath and no links (ALLREDUCE "
        "sums fp32)");
  }
}

Footprint footprint(const Instruction& in, unsigned dim) {
  Footprint fp;
  const OpcodeInfo* info = find_opcode(in.opcode_value());
  if (info == nullptr) return fp;
  const OpcodeRules& rules = *info->rules;
  const std::uint32_t count = in.count();
  const std::uint32_t rows = in.rows();
  const auto memory = [&](const RowsOperand& operand) {
    if (!flag_set(in, operand.switch_if)) return operand.memory;
    return operand.memory == Memory::Ub ? Memory::Acc : Memory::Ub;
  };
  if (rules.source.used) {
    fp.source = span(memory(rules.source), in.addr_a(), in.step_a(), count, rows);
  }
  if (rules.destination.used) {
    fp.destination = span(memory(rules.destination), in.addr_b(), in.step_b(), count, rows);
  }
  if (rules.in_place) fp.destination = fp.source;
  if (rules.bias_always || flag_set(in, rules.bias_if)) {
    // With quant_if each iteration's bias is a block of three rows: bias, multiplier, shift;
    // without bias_rows_unless's flag (where there is one), `rows` rows.
    std::uint32_t bias_rows = flag_set(in, rules.quant_if) ? 3 : 1;
    if (rules.bias_rows_unless != kNoFlag && !in.flag(rules.bias_rows_unless)) bias_rows = rows;
    fp.bias = span(Memory::Acc, in.bias_addr(), in.bias_step(), count, bias_rows);
  }
  const HostOperand& host = rules.host;
  if (host.used && (host.only_if == kNoFlag || in.flag(host.only_if))) {
    fp.uses_host = true;
    fp.writes_host = host.write;
    fp.host_row_bytes = (flag_set(in, host.fp32_if) ? 4 : flag_set(in, host.int8_if) ? 1 : 2) * dim;
    fp.host_rows = in.get(*host.rows);
    const std::uint64_t iterations = count == 0 ? 0 : count - 1;
    const std::uint64_t last_row = fp.host_rows == 0 ? 0 : fp.host_rows - 1;
    fp.host_end = std::uint64_t{in.host_addr()} + iterations * in.host_step() +
                  last_row * in.host_stride() + fp.host_row_bytes;
  }
  return fp;
}

CheckResult diagnose(const Instruction& in, const HardwareConfig& config) {
  // 1. ILLEGAL_OPCODE
  const OpcodeInfo* info = find_opcode(in.opcode_value());
  if (info == nullptr) {
    return {Error::IllegalOpcode, fmt::format("opcode 0x{:02x} is unknown", in.opcode_value())};
  }
  if (info->rules->links && config.link_lanes == 0) {
    return {Error::IllegalOpcode,
            fmt::format("{} needs a core with inter-chip links; {} has none", info->mnemonic,
                        config.name())};
  }
  if (info->rules->vector && config.vector_lanes == 0) {
    return {Error::IllegalOpcode, fmt::format("{} needs a core with a vector unit; {} has none",
                                              info->mnemonic, config.name())};
  }
  // 2. ILLEGAL_FIELD
  std::string problem = field_problem(in, *info, config);
  if (!problem.empty()) return {Error::IllegalField, std::move(problem)};

  // 3. UB_RANGE / ACC_RANGE: source, destination, bias.
  const Footprint fp = footprint(in, config.dim);
  const std::pair<const RowSpan*, const char*> spans[] = {
      {&fp.source, "source"}, {&fp.destination, "destination"}, {&fp.bias, "bias"}};
  for (const auto& [rows, role] : spans) {
    if (rows->used && rows->end > depth(rows->memory, config)) {
      return {range_error(rows->memory),
              fmt::format("{} rows {}..{} reach past the {} rows of the {}", role, rows->first,
                          rows->end - 1, depth(rows->memory, config), memory_name(rows->memory))};
    }
  }
  if (fp.uses_host) {
    // 4. HOST_ALIGN: a multiple of the beat, the row or the bus width, whichever is smaller.
    const std::uint32_t beat = std::min(fp.host_row_bytes, config.bus_bytes);
    if (((in.host_addr() | in.host_stride() | in.host_step()) & (beat - 1)) != 0) {
      return {
          Error::HostAlign,
          fmt::format("host_addr, host_stride and host_step must be multiples of {} bytes", beat)};
    }
    // 5. HOST_RANGE
    if (fp.host_end > kHostSpace) {
      return {Error::HostRange,
              fmt::format("the host bytes end at 0x{:x}, past the 32-bit address space",
                          fp.host_end - 1)};
    }
  }
  // 6. ACC_OVERLAP: an fp32 ACTIVATE may rewrite its source rows in place, row for row, but must
  // not write its bias rows or source rows at another address. Like the issue stage, it compares
  // spans (first to last row), not the exact rows of a strided access.
  if (info->opcode == Opcode::Activate && in.flag(kActivateFlagF32)) {
    if (fp.bias.used && fp.destination.overlaps(fp.bias)) {
      return {Error::AccOverlap, "destination rows overlap the bias rows"};
    }
    const bool in_place = in.addr_a() == in.addr_b() && in.step_a() == in.step_b();
    if (!in_place && fp.destination.overlaps(fp.source)) {
      return {Error::AccOverlap, "destination rows overlap the source rows at another address"};
    }
  }
  return {};
}

}  // namespace tpu::isa
