// The assembler and disassembler: canonical text, round trips over random instructions, the
// `.word` form of illegal ones, and every assembler error with its line number.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

#include "common/test_seed.hpp"
#include "tpu/assembler.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu::isa {
namespace {

constexpr int kRandomInstructions = 5000;

// Values that are often zero (omitted) or small, sometimes anything the field holds.
std::uint64_t random_field_value(std::mt19937_64& rng, const FieldSpec& field) {
  const std::uint64_t max = field.width >= 32 ? 0xFFFFFFFFu : (1u << field.width) - 1;
  switch (rng() % 4) {
    case 0:
      return 0;
    case 1:
      return rng() % 17;
    default:
      return rng() & max;
  }
}

// Any instruction whose unused bits are zero: legal encoding, though maybe not legal to run.
Instruction random_encodable_instruction(std::mt19937_64& rng) {
  const OpcodeInfo& info = kOpcodeTable[rng() % kOpcodeTable.size()];
  Instruction in(info.opcode);
  in.set_flags(rng() & info.flags_mask);
  for (const FieldSpec* field : info.fields) {
    if (field == &kFunc) {
      in.set_func(rng() % kFuncCount);
    } else if (field == &kVop) {
      in.set_vop(static_cast<VectorOp>(rng() % kVectorOpCount));
    } else {
      in.set(*field, random_field_value(rng, *field));
    }
  }
  return in;
}

Instruction assemble_one(const std::string& line) {
  const std::vector<Instruction> program = assemble(line);
  EXPECT_EQ(program.size(), 1u) << line;
  return program.empty() ? Instruction() : program.front();
}

void expect_error(const std::string& text, const std::string& message) {
  try {
    assemble(text);
    ADD_FAILURE() << "assembled: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), message) << text;
  }
}

TEST(Assembler, CanonicalLines) {
  const Instruction rh = Instruction(Opcode::ReadHost)
                             .set_flag(kReadHostFlagAcc)
                             .set_count(2)
                             .set_rows(16)
                             .set_addr_b(256)
                             .set_host_addr(0x4000)
                             .set_host_stride(64);
  EXPECT_EQ(disassemble(rh),
            "read_host acc count=2 rows=16 addr_b=256 host_addr=0x4000 host_stride=64");
  const Instruction act = Instruction(Opcode::Activate)
                              .set_flag(kActivateFlagBias)
                              .set_flag(kActivateFlagF32)
                              .set_func(Func::Leaky)
                              .set_alpha(0x3C23)
                              .set_count(4)
                              .set_rows(8)
                              .set_bias_addr(64);
  EXPECT_EQ(disassemble(act),
            "activate bias f32 func=leaky count=4 rows=8 alpha=0x3c23 bias_addr=64");
  const Instruction mm = Instruction(Opcode::Matmul)
                             .set_flag(kMatmulFlagAcc0)
                             .set_flag(kMatmulFlagAccn)
                             .set_flag(kMatmulFlagFetch)
                             .set_rows(3)
                             .set_step_a(1)
                             .set_host_step(96)
                             .set_k_valid(16)
                             .set_n_valid(5);
  EXPECT_EQ(disassemble(mm),
            "matmul acc0 accn fetch count=0 rows=3 step_a=1 host_step=96 k_valid=16 n_valid=5");
  EXPECT_EQ(disassemble(Instruction(Opcode::Sync)), "sync");
  EXPECT_EQ(disassemble(Instruction(Opcode::Halt)), "halt");
  for (const Instruction& in : {rh, act, mm}) EXPECT_EQ(assemble_one(disassemble(in)), in);
}

TEST(Assembler, OmittedFieldsAreZeroButCountIsOne) {
  const Instruction in = assemble_one("write_host rows=2");
  EXPECT_EQ(in, Instruction(Opcode::WriteHost).set_count(1).set_rows(2));
  EXPECT_EQ(assemble_one("write_host count=0").count(), 0u);
  EXPECT_EQ(assemble_one("halt"), Instruction(Opcode::Halt));
  EXPECT_EQ(assemble_one("activate").func(), 0u);
}

TEST(Assembler, FlagsAndFieldsInAnyOrder) {
  EXPECT_EQ(assemble_one("matmul k_valid=4 fetch rows=2 acc0 n_valid=4"),
            assemble_one("matmul acc0 fetch rows=2 k_valid=4 n_valid=4"));
}

TEST(Assembler, NumbersAreDecimalOrHex) {
  const Instruction in = assemble_one("read_host rows=0x10 addr_b=010 host_addr=0XfFfF0000");
  EXPECT_EQ(in.rows(), 16u);
  EXPECT_EQ(in.addr_b(), 10u);
  EXPECT_EQ(in.host_addr(), 0xFFFF0000u);
}

TEST(Assembler, CommentsBlankLinesAndWhitespace) {
  const std::string text =
      "# a program\n"
      "\n"
      "  read_host\trows=4   # load\r\n"
      "   # nothing here\n"
      "halt";
  const std::vector<Instruction> program = assemble(text);
  ASSERT_EQ(program.size(), 2u);
  EXPECT_EQ(program[0].rows(), 4u);
  EXPECT_EQ(program[1].opcode(), Opcode::Halt);
  EXPECT_TRUE(assemble("").empty());
  EXPECT_TRUE(assemble("\n\n# only comments\n").empty());
}

TEST(Assembler, FunctionMnemonics) {
  for (const FuncInfo& func : kFuncTable) {
    const Instruction in = assemble_one(std::string("activate func=") + func.mnemonic);
    EXPECT_EQ(in.func(), static_cast<unsigned>(func.func));
  }
}

TEST(Assembler, VectorOperationMnemonics) {
  for (const VectorOpInfo& op : kVectorOpTable) {
    const Instruction in = assemble_one(std::string("eltwise vop=") + op.mnemonic);
    EXPECT_EQ(in.vop(), static_cast<unsigned>(op.op));
    EXPECT_EQ(disassemble(in), std::string("eltwise vop=") + op.mnemonic + " count=1");
  }
  expect_error("eltwise vop=div",
               "line 1: unknown vector operation 'div' (add, sub, mul, max, min, quant, dequant)");
}

TEST(Assembler, AlphaHexPatternOrDecimalRoundedByNOut) {
  EXPECT_EQ(assemble_one("activate func=leaky alpha=0x3c23").alpha(), 0x3C23u);
  EXPECT_EQ(assemble_one("activate func=leaky alpha=0.01").alpha(),
            num::fp32_to_bf16(num::float_to_fp32(0.01f)));
  EXPECT_EQ(assemble_one("activate func=leaky alpha=-1.5").alpha(), 0xBFC0u);
  EXPECT_EQ(assemble_one("activate func=leaky alpha=1").alpha(), 0x3F80u);
  EXPECT_EQ(assemble_one("activate func=leaky alpha=1e-2").alpha(),
            assemble_one("activate func=leaky alpha=0.01").alpha());
  // Ties round to even: 1 + 2^-8 down to 1, 1 + 3 * 2^-8 up to 1 + 2^-6.
  EXPECT_EQ(assemble_one("activate func=leaky alpha=1.00390625").alpha(), 0x3F80u);
  EXPECT_EQ(assemble_one("activate func=leaky alpha=1.01171875").alpha(), 0x3F82u);
  EXPECT_EQ(assemble_one("activate func=leaky alpha=-0.0").alpha(), 0x8000u);
}

TEST(Assembler, RandomInstructionsRoundTrip) {
  std::mt19937_64 rng(test::test_seed());
  for (int n = 0; n < kRandomInstructions; ++n) {
    const Instruction in = random_encodable_instruction(rng);
    const std::string line = disassemble(in);
    ASSERT_NE(line.rfind(".word", 0), 0u) << line;
    ASSERT_EQ(assemble_one(line), in) << line;
  }
}

TEST(Assembler, ProgramRoundTrip) {
  std::mt19937_64 rng(test::test_seed());
  std::vector<Instruction> program;
  for (int n = 0; n < 200; ++n) program.push_back(random_encodable_instruction(rng));
  const std::string text = disassemble(program);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 200);
  EXPECT_EQ(assemble(text), program);
}

TEST(Disassembler, IllegalInstructionsBecomeWords) {
  Instruction unknown;
  unknown.words = {0x0000000Au, 1, 2, 3, 4, 5, 6, 0xFFFFFFFFu};
  EXPECT_EQ(disassemble(unknown),
            ".word 0x0000000a 0x00000001 0x00000002 0x00000003 0x00000004 0x00000005 "
            "0x00000006 0xffffffff");
  const Instruction stray_bit = Instruction(Opcode::Halt).set_count(1);
  EXPECT_EQ(disassemble(stray_bit).rfind(".word 0x00000007 0x00000001 ", 0), 0u);
  const Instruction undefined_flag = Instruction(Opcode::ReadHost).set_flags(0x4);
  EXPECT_EQ(disassemble(undefined_flag).rfind(".word", 0), 0u);
  const Instruction bad_func = Instruction(Opcode::Activate).set_func(10);
  EXPECT_EQ(disassemble(bad_func).rfind(".word 0x000a0004 ", 0), 0u);
  for (const Instruction& in : {unknown, stray_bit, undefined_flag, bad_func}) {
    EXPECT_EQ(assemble_one(disassemble(in)), in);
  }
}

TEST(Disassembler, AnyBlockRoundTrips) {
  std::mt19937_64 rng(test::test_seed());
  for (int n = 0; n < kRandomInstructions; ++n) {
    Instruction in;
    for (auto& word : in.words) word = static_cast<std::uint32_t>(rng());
    // Mostly known opcodes with few stray bits, so both forms occur.
    if (rng() % 2) {
      in = random_encodable_instruction(rng);
      if (rng() % 2) in.words[rng() % kInstrWords] ^= 1u << (rng() % 32);
    }
    const std::string line = disassemble(in);
    ASSERT_EQ(assemble_one(line), in) << line;
  }
}

TEST(Assembler, WordDirectiveTakesDecimalOrHex) {
  EXPECT_EQ(assemble_one(".word 7 0 0 0 0 0 0 0"), Instruction(Opcode::Halt));
  EXPECT_EQ(assemble_one(".word 0x3 0x10001 0 0 0 0 0 0x100010").k_valid(), 16u);
}

TEST(AssemblerErrors, UnknownNames) {
  expect_error("frobnicate count=1", "line 1: unknown mnemonic 'frobnicate'");
  expect_error("MATMUL", "line 1: unknown mnemonic 'MATMUL'");
  expect_error("read_host colour=3", "line 1: unknown field 'colour'");
  expect_error("read_host fast", "line 1: unknown flag 'fast'");
  expect_error("activate func=swish",
               "line 1: unknown function 'swish' (none, relu, relu6, leaky, sigmoid, tanh, gelu)");
  expect_error("activate func=3",
               "line 1: unknown function '3' (none, relu, relu6, leaky, "
               "sigmoid, tanh, gelu)");
}

TEST(AssemblerErrors, NamesTheOpcodeDoesNotHave) {
  expect_error("read_host bias", "line 1: read_host has no flag bias");
  expect_error("read_host addr_a=3", "line 1: read_host has no field addr_a");
  expect_error("halt count=1", "line 1: halt has no field count");
  expect_error("matmul func=relu", "line 1: matmul has no field func");
  expect_error("read_host opcode=1", "line 1: unknown field 'opcode'");
}

TEST(AssemblerErrors, ValueTooWide) {
  expect_error("read_host rows=65536", "line 1: value 65536 does not fit in field rows (16 bits)");
  expect_error("matmul k_valid=512", "line 1: value 512 does not fit in field k_valid (9 bits)");
  expect_error("read_host host_addr=0x100000000",
               "line 1: value 4294967296 does not fit in field host_addr (32 bits)");
  expect_error("activate func=leaky alpha=0x10000",
               "line 1: value 65536 does not fit in field alpha (16 bits)");
  expect_error("read_host rows=99999999999999999999999",
               "line 1: value 99999999999999999999999 for rows is too large");
  expect_error(".word 0x100000000 0 0 0 0 0 0 0",
               "line 1: value 0x100000000 does not fit in word 0");
}

TEST(AssemblerErrors, DuplicateFieldOrFlag) {
  expect_error("read_host rows=1 rows=2", "line 1: field rows is given twice");
  expect_error("read_host count=1 count=1", "line 1: field count is given twice");
  expect_error("read_host acc acc", "line 1: flag acc is given twice");
}

TEST(AssemblerErrors, MalformedNumbersAndFields) {
  expect_error("read_host rows=12a", "line 1: malformed number '12a' for rows");
  expect_error("read_host rows=0x", "line 1: malformed number '0x' for rows");
  expect_error("read_host rows=-1", "line 1: malformed number '-1' for rows");
  expect_error("read_host rows=1.5", "line 1: malformed number '1.5' for rows");
  expect_error("read_host rows=", "line 1: malformed field 'rows='");
  expect_error("read_host =5", "line 1: malformed field '=5'");
  expect_error("read_host rows = 5", "line 1: unknown flag 'rows'");
  expect_error(".word 1 2 3", "line 1: .word needs 8 words, got 3");
  expect_error(".word 1 2 3 4 5 6 7 z", "line 1: malformed number 'z' for word 7");
}

TEST(AssemblerErrors, MalformedAlpha) {
  const std::string expected_tail = ": expected a decimal number or a 0x bf16 pattern";
  expect_error("activate func=leaky alpha=abc", "line 1: malformed alpha 'abc'" + expected_tail);
  expect_error("activate func=leaky alpha=inf", "line 1: malformed alpha 'inf'" + expected_tail);
  expect_error("activate func=leaky alpha=0.5x", "line 1: malformed alpha '0.5x'" + expected_tail);
  expect_error("activate func=leaky alpha=1e39", "line 1: alpha 1e39 is outside the range of fp32");
}

TEST(AssemblerErrors, LineNumbersCountEveryLine) {
  expect_error("# header\n\nread_host rows=1\n  \nhalt\nbogus\n",
               "line 6: unknown mnemonic 'bogus'");
  expect_error("halt\r\nhalt count=2\r\n", "line 2: halt has no field count");
}

}  // namespace
}  // namespace tpu::isa
