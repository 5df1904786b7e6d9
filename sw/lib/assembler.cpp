#include "tpu/assembler.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "tpu/numerics/float.hpp"

namespace tpu::isa {
namespace {

constexpr std::string_view kWordDirective = ".word";
constexpr std::string_view kWhitespace = " \t\r\v\f";

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(message);
}

// The vector operations' mnemonics, for a message: "add, sub, ...".
std::string vector_ops() {
  std::vector<std::string_view> names;
  for (const VectorOpInfo& info : kVectorOpTable) names.emplace_back(info.mnemonic);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t pos = line.find_first_not_of(kWhitespace);
  while (pos != std::string_view::npos) {
    const std::size_t end = std::min(line.find_first_of(kWhitespace, pos), line.size());
    words.push_back(line.substr(pos, end - pos));
    pos = line.find_first_not_of(kWhitespace, end);
  }
  return words;
}

// A decimal or 0x-hexadecimal number; `what` names it in the error message.
std::uint64_t parse_number(std::string_view text, std::string_view what) {
  int base = 10;
  std::string_view digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  std::uint64_t value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (ec == std::errc::result_out_of_range) {
    fail(fmt::format("value {} for {} is too large", text, what));
  }
  if (ec != std::errc() || ptr != end)
    fail(fmt::format("malformed number '{}' for {}", text, what));
  return value;
}

// alpha: a bf16 bit pattern in hex, or a decimal number rounded to bf16 by N-OUT.
std::uint64_t parse_alpha(std::string_view text) {
  if (text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    return parse_number(text, "alpha");
  }
  float value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    fail(fmt::format("alpha {} is outside the range of fp32", text));
  }
  const num::fp32_t bits = num::float_to_fp32(value);
  const bool finite = ((bits >> 23) & 0xFF) != 0xFF;
  if (ec != std::errc() || ptr != end || !finite) {
    fail(fmt::format("malformed alpha '{}': expected a decimal number or a 0x bf16 pattern", text));
  }
  return num::fp32_to_bf16(bits);
}

// ACTIVATE's int8 fields (REQ): written as signed decimals, stored in two's complement.
bool is_int8_field(const FieldSpec* field) {
  return field == &kZeroPoint || field == &kClampLo || field == &kClampHi;
}

// An int8 field: -128 .. 127, or its bits as an unsigned number (0 .. 255, decimal or 0x hex).
std::uint64_t parse_int8(std::string_view text, std::string_view name) {
  if (text.empty() || text[0] != '-') return parse_number(text, name);
  const std::uint64_t magnitude = parse_number(text.substr(1), name);
  if (magnitude > 128) fail(fmt::format("value {} for {} is below -128", text, name));
  return (0x100 - magnitude) & 0xFF;
}

// Every field some opcode lists, for telling an unknown field from one this opcode lacks.
const FieldSpec* find_any_field(std::string_view name) {
  for (const OpcodeInfo& info : kOpcodeTable) {
    for (const FieldSpec* field : info.fields) {
      if (name == field->name) return field;
    }
  }
  return nullptr;
}

bool is_flag_of_any_opcode(std::string_view name) {
  for (const OpcodeInfo& info : kOpcodeTable) {
    for (const FlagSpec& flag : info.flags) {
      if (name == flag.mnemonic) return true;
    }
  }
  return false;
}

Instruction assemble_words(const std::vector<std::string_view>& words) {
  if (words.size() != 1 + kInstrWords) {
    fail(fmt::format(".word needs {} words, got {}", kInstrWords, words.size() - 1));
  }
  Instruction instruction;
  for (unsigned w = 0; w < kInstrWords; ++w) {
    const std::string what = fmt::format("word {}", w);
    const std::uint64_t value = parse_number(words[1 + w], what);
    if (value > 0xFFFFFFFFu) fail(fmt::format("value {} does not fit in {}", words[1 + w], what));
    instruction.words[w] = static_cast<std::uint32_t>(value);
  }
  return instruction;
}

Instruction assemble_line(const std::vector<std::string_view>& words) {
  if (words.front() == kWordDirective) return assemble_words(words);
  const OpcodeInfo* info = find_opcode(words.front());
  if (info == nullptr) fail(fmt::format("unknown mnemonic '{}'", words.front()));

  Instruction instruction(info->opcode);
  std::vector<const FieldSpec*> given;
  for (std::size_t t = 1; t < words.size(); ++t) {
    const std::string_view word = words[t];
    const std::size_t equals = word.find('=');
    if (equals == std::string_view::npos) {
      const auto flag = std::find_if(info->flags.begin(), info->flags.end(),
                                     [&](const FlagSpec& f) { return word == f.mnemonic; });
      if (flag == info->flags.end()) {
        if (is_flag_of_any_opcode(word))
          fail(fmt::format("{} has no flag {}", info->mnemonic, word));
        fail(fmt::format("unknown flag '{}'", word));
      }
      if (instruction.flag(flag->bit)) fail(fmt::format("flag {} is given twice", word));
      instruction.set_flag(flag->bit);
      continue;
    }
    const std::string_view name = word.substr(0, equals);
    const std::string_view value = word.substr(equals + 1);
    if (name.empty() || value.empty()) fail(fmt::format("malformed field '{}'", word));
    const FieldSpec* field = find_any_field(name);
    if (field == nullptr) fail(fmt::format("unknown field '{}'", name));
    if (std::find(info->fields.begin(), info->fields.end(), field) == info->fields.end()) {
      fail(fmt::format("{} has no field {}", info->mnemonic, name));
    }
    if (std::find(given.begin(), given.end(), field) != given.end()) {
      fail(fmt::format("field {} is given twice", name));
    }
    given.push_back(field);
    if (field == &kFunc) {
      const FuncInfo* func = find_func(value);
      if (func == nullptr) {
        fail(fmt::format("unknown function '{}' (none, relu, relu6, leaky, sigmoid, tanh, gelu)",
                         value));
      }
      instruction.set_func(func->func);
    } else if (field == &kVop) {
      const VectorOpInfo* vop = find_vector_op(value);
      if (vop == nullptr)
        fail(fmt::format("unknown vector operation '{}' ({})", value, vector_ops()));
      instruction.set_vop(vop->op);
    } else if (field == &kAlpha) {
      instruction.set(*field, parse_alpha(value));
    } else if (is_int8_field(field)) {
      instruction.set(*field, parse_int8(value, name));
    } else {
      instruction.set(*field, parse_number(value, name));
    }
  }
  const bool has_count =
      std::find(info->fields.begin(), info->fields.end(), &kCount) != info->fields.end();
  if (has_count && std::find(given.begin(), given.end(), &kCount) == given.end()) {
    instruction.set_count(1);
  }
  return instruction;
}

// Whether the canonical form can express the instruction.
bool has_canonical_form(const Instruction& instruction, const OpcodeInfo* info) {
  if (info == nullptr) return false;
  for (unsigned w = 0; w < kInstrWords; ++w) {
    if ((instruction.words[w] & ~info->used_bits[w]) != 0) return false;
  }
  // func and vop share their bits: the opcode's field names the table.
  const bool uses_vop =
      std::find(info->fields.begin(), info->fields.end(), &kVop) != info->fields.end();
  return uses_vop ? find_vector_op(instruction.vop()) != nullptr
                  : find_func(instruction.func()) != nullptr;
}

}  // namespace

std::vector<Instruction> assemble(std::string_view text) {
  std::vector<Instruction> program;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(std::min(newline + 1, text.size()));
    line = line.substr(0, std::min(line.find('#'), line.size()));
    const std::vector<std::string_view> words = split_words(line);
    if (words.empty()) continue;
    try {
      program.push_back(assemble_line(words));
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(fmt::format("line {}: {}", line_number, error.what()));
    }
  }
  return program;
}

std::string disassemble(const Instruction& instruction) {
  const OpcodeInfo* info = find_opcode(instruction.opcode_value());
  if (!has_canonical_form(instruction, info)) {
    std::string line(kWordDirective);
    for (std::uint32_t word : instruction.words) line += fmt::format(" 0x{:08x}", word);
    return line;
  }
  std::string line = info->mnemonic;
  for (const FlagSpec& flag : info->flags) {
    if (instruction.flag(flag.bit)) line += fmt::format(" {}", flag.mnemonic);
  }
  for (const FieldSpec* field : info->fields) {
    const std::uint32_t value = instruction.get(*field);
    // count and the vector operation are always written, other zero fields left out.
    if (value == 0 && field != &kCount && field != &kVop) continue;
    if (field == &kFunc) {
      line += fmt::format(" func={}", find_func(value)->mnemonic);
    } else if (field == &kVop) {
      line += fmt::format(" vop={}", find_vector_op(value)->mnemonic);
    } else if (field == &kAlpha) {
      line += fmt::format(" alpha=0x{:04x}", value);
    } else if (field == &kHostAddr) {
      line += fmt::format(" host_addr=0x{:x}", value);
    } else if (is_int8_field(field)) {
      line += fmt::format(" {}={}", field->name, int8_value(value));
    } else {
      line += fmt::format(" {}={}", field->name, value);
    }
  }
  return line;
}

std::string disassemble(const std::vector<Instruction>& program) {
  std::string text;
  for (const Instruction& instruction : program) {
    text += disassemble(instruction);
    text += '\n';
  }
  return text;
}

}  // namespace tpu::isa
