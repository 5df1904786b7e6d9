// Instruction fields, the 32-byte encoding, and every rule of the issue-stage checks
// (docs/isa.md, "Errors" steps 1-6), each with a passing and a failing case.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>

#include "common/test_seed.hpp"
#include "tpu/isa.hpp"

namespace tpu::isa {
namespace {

using regs::Error;

// dim 16, UB 1024 rows, ACC 256 rows, 16-byte bus.
HardwareConfig small_config() {
  HardwareConfig config;
  config.dim = 16;
  config.ub_depth = 1024;
  config.acc_depth = 256;
  config.bus_bytes = 16;
  return config;
}

Instruction read_host() {
  return Instruction(Opcode::ReadHost).set_count(1).set_rows(1);
}
Instruction read_weights() {
  return Instruction(Opcode::ReadWeights).set_count(1).set_rows(1);
}
Instruction matmul() {
  return Instruction(Opcode::Matmul).set_count(1).set_rows(1).set_k_valid(16).set_n_valid(16);
}
Instruction activate() {
  return Instruction(Opcode::Activate).set_count(1).set_rows(1);
}
Instruction write_host() {
  return Instruction(Opcode::WriteHost).set_count(1).set_rows(1);
}

// The minimal legal instruction of each opcode.
std::vector<Instruction> legal_examples() {
  return {read_host(),
          read_weights(),
          matmul(),
          activate(),
          write_host(),
          Instruction(Opcode::Sync),
          Instruction(Opcode::Halt)};
}

Error check_small(const Instruction& in) {
  return check(in, small_config());
}

TEST(IsaEncoding, WordsAreLittleEndianInOrder) {
  Instruction in;
  for (unsigned w = 0; w < kInstrWords; ++w) in.words[w] = 0x01020304u + 0x10101010u * w;
  const auto bytes = encode(in);
  EXPECT_EQ(bytes[0], 0x04);
  EXPECT_EQ(bytes[1], 0x03);
  EXPECT_EQ(bytes[2], 0x02);
  EXPECT_EQ(bytes[3], 0x01);
  EXPECT_EQ(bytes[28], 0x74);
  EXPECT_EQ(bytes[31], 0x71);
  EXPECT_EQ(decode(bytes.data()), in);
}

TEST(IsaEncoding, RandomBlocksRoundTrip) {
  std::mt19937_64 rng(test::test_seed());
  std::vector<std::uint8_t> bytes(kInstrBytes * 500);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  const std::vector<Instruction> program = decode_program(bytes);
  ASSERT_EQ(program.size(), 500u);
  EXPECT_EQ(encode_program(program), bytes);
}

TEST(IsaEncoding, ProgramOfPartialInstructionIsRejected) {
  const std::vector<std::uint8_t> bytes(40);
  EXPECT_THROW(
      {
        try {
          decode_program(bytes);
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(),
                       "a program of 40 bytes is not a whole number of 32-byte instructions");
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_TRUE(decode_program(nullptr, 0).empty());
}

TEST(IsaFields, AccessorsUseTheGeneratedPositions) {
  Instruction in(Opcode::Matmul);
  in.set_count(0xBEEF).set_rows(0x1234).set_k_valid(0x1FF).set_n_valid(0x101);
  in.set_flag(kMatmulFlagFetch).set_host_stride(0xDEADBEEF);
  EXPECT_EQ(in.words[0], 0x00000403u);
  EXPECT_EQ(in.words[1], 0x1234BEEFu);
  EXPECT_EQ(in.words[5], 0xDEADBEEFu);
  EXPECT_EQ(in.words[7], 0x010101FFu);
  EXPECT_EQ(in.opcode(), Opcode::Matmul);
  EXPECT_TRUE(in.flag(kMatmulFlagFetch));
  EXPECT_FALSE(in.flag(kMatmulFlagAcc0));
  EXPECT_EQ(in.count(), 0xBEEFu);
  EXPECT_EQ(in.rows(), 0x1234u);
  EXPECT_EQ(in.k_valid(), 0x1FFu);
  EXPECT_EQ(in.n_valid(), 0x101u);
  // Fields sharing a word alias as the table says.
  EXPECT_EQ(in.bias_addr(), 0x01FFu);
  EXPECT_EQ(in.bias_step(), 0x0101u);
  in.set_flag(kMatmulFlagFetch, false);
  EXPECT_EQ(in.flags(), 0u);
}

TEST(IsaFields, EveryFieldSetsOnlyItsBits) {
  const FieldSpec* fields[] = {&kOpcode,   &kFlags,  &kFunc,   &kCount,    &kRows,    &kAddrA,
                               &kAddrB,    &kStepA,  &kStepB,  &kHostAddr, &kAlpha,   &kHostStride,
                               &kHostStep, &kKValid, &kNValid, &kBiasAddr, &kBiasStep};
  for (const FieldSpec* field : fields) {
    Instruction in;
    const std::uint64_t all_ones = field->width == 32 ? 0xFFFFFFFFu : (1u << field->width) - 1;
    in.set(*field, all_ones);
    EXPECT_EQ(in.get(*field), all_ones) << field->name;
    for (unsigned w = 0; w < kInstrWords; ++w) {
      const std::uint32_t expected =
          w == field->word ? static_cast<std::uint32_t>(all_ones << field->lsb) : 0u;
      EXPECT_EQ(in.words[w], expected) << field->name << " word " << w;
    }
  }
}

TEST(IsaFields, SetterRejectsValueTooWide) {
  Instruction in(Opcode::ReadHost);
  EXPECT_NO_THROW(in.set_count(65535));
  try {
    in.set_count(65536);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "value 65536 does not fit in field count (16 bits)");
  }
  EXPECT_EQ(in.count(), 65535u);
  EXPECT_THROW(in.set_host_addr(std::uint64_t{1} << 32), std::invalid_argument);
  EXPECT_THROW(in.set_k_valid(512), std::invalid_argument);
  EXPECT_THROW(in.set_flag(8), std::invalid_argument);
}

TEST(IsaTables, LookUps) {
  ASSERT_NE(find_opcode("matmul"), nullptr);
  EXPECT_EQ(find_opcode("matmul")->opcode, Opcode::Matmul);
  EXPECT_EQ(find_opcode(std::uint8_t{0x05})->opcode, Opcode::WriteHost);
  EXPECT_EQ(find_opcode(std::uint8_t{0x00}), nullptr);
  EXPECT_EQ(find_opcode("MATMUL"), nullptr);
  EXPECT_EQ(find_func("gelu")->func, Func::Gelu);
  EXPECT_EQ(find_func(9u)->func, Func::Rsqrt);
  EXPECT_EQ(find_func(10u), nullptr);
  EXPECT_EQ(find_func("swish"), nullptr);
}

TEST(IsaConfig, ValidateRejectsEachImpossibleParameter) {
  EXPECT_NO_THROW(validate_config(HardwareConfig{}));
  const auto rejects = [](auto change, const char* message) {
    HardwareConfig config;
    change(config);
    try {
      validate_config(config);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), message);
    }
  };
  rejects([](HardwareConfig& c) { c.dim = 12; },
          "hardware configuration: dim 12 is not a power of two in 1..256");
  rejects([](HardwareConfig& c) { c.dim = 512; },
          "hardware configuration: dim 512 is not a power of two in 1..256");
  rejects([](HardwareConfig& c) { c.ub_depth = 2; },
          "hardware configuration: ub_depth 2 is not a power of two in 4..65536");
  rejects([](HardwareConfig& c) { c.acc_depth = 1000; },
          "hardware configuration: acc_depth 1000 is not a power of two in 4..65536");
  rejects([](HardwareConfig& c) { c.bus_bytes = 128; },
          "hardware configuration: bus_bytes 128 is not a power of two in 4..64");
  rejects([](HardwareConfig& c) { c.weight_tiles = 1; },
          "hardware configuration: weight_tiles 1 is not in 2..16");
}

TEST(IsaCheck, LegalExamplesPass) {
  for (const Instruction& in : legal_examples()) {
    const CheckResult result = diagnose(in, small_config());
    EXPECT_EQ(result.error, Error::None) << result.reason;
    EXPECT_TRUE(result.reason.empty());
  }
}

// Step 1.
TEST(IsaCheck, UnknownOpcodeIsIllegalOpcode) {
  for (unsigned opcode : {0x00u, 0x08u, 0x80u, 0xFFu}) {
    Instruction in;
    in.set(kOpcode, opcode);
    EXPECT_EQ(check_small(in), Error::IllegalOpcode) << opcode;
  }
  // Before any field rule: an unknown opcode with every other bit set.
  Instruction in;
  in.words.fill(0xFFFFFFFFu);
  EXPECT_EQ(check_small(in), Error::IllegalOpcode);
  EXPECT_EQ(diagnose(in, small_config()).reason, "opcode 0xff is unknown");
}

// Step 2: every bit outside an opcode's fields and flags.
TEST(IsaCheck, EveryUnusedBitIsIllegalField) {
  for (const Instruction& legal : legal_examples()) {
    const OpcodeInfo* info = find_opcode(legal.opcode_value());
    for (unsigned w = 0; w < kInstrWords; ++w) {
      for (unsigned bit = 0; bit < 32; ++bit) {
        const std::uint32_t mask = 1u << bit;
        Instruction in = legal;
        in.words[w] |= mask;
        if (info->used_bits[w] & mask) continue;
        EXPECT_EQ(check_small(in), Error::IllegalField)
            << info->mnemonic << " word " << w << " bit " << bit;
      }
    }
  }
}

TEST(IsaCheck, ZeroCountOrRowsIsIllegalField) {
  for (const Instruction& legal : legal_examples()) {
    if (legal.opcode() == Opcode::Sync || legal.opcode() == Opcode::Halt) continue;
    EXPECT_EQ(check_small(Instruction(legal).set_count(0)), Error::IllegalField);
    EXPECT_EQ(check_small(Instruction(legal).set_rows(0)), Error::IllegalField);
    EXPECT_EQ(check_small(Instruction(legal).set_count(3).set_rows(2)), Error::None);
  }
}

TEST(IsaCheck, ReadWeightsRowsAtMostDim) {
  EXPECT_EQ(check_small(read_weights().set_rows(16)), Error::None);
  EXPECT_EQ(check_small(read_weights().set_rows(17)), Error::IllegalField);
}

TEST(IsaCheck, MatmulValidLanesInOneToDim) {
  EXPECT_EQ(check_small(matmul().set_k_valid(1).set_n_valid(1)), Error::None);
  EXPECT_EQ(check_small(matmul().set_k_valid(0)), Error::IllegalField);
  EXPECT_EQ(check_small(matmul().set_k_valid(17)), Error::IllegalField);
  EXPECT_EQ(check_small(matmul().set_n_valid(0)), Error::IllegalField);
  EXPECT_EQ(check_small(matmul().set_n_valid(17)), Error::IllegalField);
  EXPECT_EQ(diagnose(matmul().set_k_valid(17), small_config()).reason,
            "k_valid 17 is outside 1..16");
}

TEST(IsaCheck, MatmulHostFieldsNeedFetch) {
  EXPECT_EQ(check_small(matmul().set_host_addr(32)), Error::IllegalField);
  EXPECT_EQ(check_small(matmul().set_host_stride(32)), Error::IllegalField);
  EXPECT_EQ(check_small(matmul().set_host_step(32)), Error::IllegalField);
  const Instruction fetching = matmul().set_flag(kMatmulFlagFetch);
  EXPECT_EQ(
      check_small(Instruction(fetching).set_host_addr(32).set_host_stride(32).set_host_step(32)),
      Error::None);
}

// Codes 0..6 everywhere; exp, recip and rsqrt (7..9) only with a vector unit; 10..15 never.
TEST(IsaCheck, ActivateFunctionsOfTheCore) {
  EXPECT_EQ(check_small(activate().set_func(Func::Gelu)), Error::None);
  for (unsigned func = 7; func < 16; ++func) {
    EXPECT_EQ(check_small(activate().set_func(func)), Error::IllegalField) << func;
  }
  EXPECT_EQ(diagnose(activate().set_func(Func::Exp), small_config()).reason,
            "function exp needs a core with a vector unit; " + small_config().name() + " has none");
  HardwareConfig vector = small_config();
  vector.vector_lanes = 4;
  for (unsigned func = 0; func < 16; ++func) {
    EXPECT_EQ(check(activate().set_func(func), vector),
              func < 10 ? Error::None : Error::IllegalField)
        << func;
  }
  EXPECT_EQ(diagnose(activate().set_func(10), vector).reason, "function code 10 is above 9");
  EXPECT_EQ(func_count(vector), 10u);
  EXPECT_EQ(func_count(small_config()), 7u);
}

// READ_WEIGHTS T (transposed tiles) only in a core with a vector unit.
TEST(IsaCheck, TransposedWeightsNeedAVectorUnit) {
  const Instruction transposed = read_weights().set_flag(kReadWeightsFlagT);
  EXPECT_EQ(check_small(transposed), Error::IllegalField);
  EXPECT_EQ(
      diagnose(transposed, small_config()).reason,
      "read_weights t needs a core with a vector unit; " + small_config().name() + " has none");
  HardwareConfig vector = small_config();
  vector.vector_lanes = 4;
  EXPECT_EQ(check(transposed, vector), Error::None);
}

TEST(IsaCheck, AlphaOnlyForLeaky) {
  EXPECT_EQ(check_small(activate().set_func(Func::Leaky).set_alpha(0x3C23)), Error::None);
  EXPECT_EQ(check_small(activate().set_func(Func::Leaky)), Error::None);
  EXPECT_EQ(check_small(activate().set_func(Func::Relu).set_alpha(0x3C23)), Error::IllegalField);
  EXPECT_EQ(check_small(activate().set_alpha(0x8000)), Error::IllegalField);
}

TEST(IsaCheck, BiasFieldsOnlyWithBias) {
  EXPECT_EQ(check_small(activate().set_bias_addr(5)), Error::IllegalField);
  EXPECT_EQ(check_small(activate().set_bias_step(1)), Error::IllegalField);
  EXPECT_EQ(check_small(activate().set_flag(kActivateFlagBias).set_bias_addr(5).set_bias_step(1)),
            Error::None);
}

// Step 3: each operand at the last row of its memory, and one past.
TEST(IsaCheck, SourceRangeByMemory) {
  // MATMUL reads UB rows: 2 iterations, step 1000, 24 rows end at 1024.
  const Instruction mm = matmul().set_count(2).set_step_a(1000).set_rows(24);
  EXPECT_EQ(check_small(mm), Error::None);
  EXPECT_EQ(check_small(Instruction(mm).set_addr_a(1)), Error::UbRange);
  // ACTIVATE reads ACC rows.
  const Instruction act = activate().set_count(3).set_step_a(100).set_rows(56);
  EXPECT_EQ(check_small(act), Error::None);
  EXPECT_EQ(check_small(Instruction(act).set_rows(57)), Error::AccRange);
  // WRITE_HOST reads UB rows, or ACC rows with ACC.
  EXPECT_EQ(check_small(write_host().set_addr_a(1023)), Error::None);
  EXPECT_EQ(check_small(write_host().set_addr_a(1023).set_rows(2)), Error::UbRange);
  const Instruction wh_acc = write_host().set_flag(kWriteHostFlagAcc);
  EXPECT_EQ(check_small(Instruction(wh_acc).set_addr_a(255)), Error::None);
  EXPECT_EQ(check_small(Instruction(wh_acc).set_addr_a(256)), Error::AccRange);
}

TEST(IsaCheck, DestinationRangeByMemory) {
  // READ_HOST writes UB rows, or ACC rows with ACC.
  EXPECT_EQ(check_small(read_host().set_addr_b(1000).set_rows(24)), Error::None);
  EXPECT_EQ(check_small(read_host().set_addr_b(1000).set_rows(25)), Error::UbRange);
  const Instruction rh_acc = read_host().set_flag(kReadHostFlagAcc);
  EXPECT_EQ(check_small(Instruction(rh_acc).set_addr_b(255)), Error::None);
  EXPECT_EQ(check_small(Instruction(rh_acc).set_addr_b(256)), Error::AccRange);
  // MATMUL writes ACC rows.
  EXPECT_EQ(check_small(matmul().set_count(4).set_step_b(60).set_addr_b(75)), Error::None);
  EXPECT_EQ(check_small(matmul().set_count(4).set_step_b(60).set_addr_b(75).set_rows(2)),
            Error::AccRange);
  // ACTIVATE writes UB rows, or ACC rows with F32.
  EXPECT_EQ(check_small(activate().set_addr_b(1023)), Error::None);
  EXPECT_EQ(check_small(activate().set_addr_b(1024)), Error::UbRange);
  const Instruction f32 = activate().set_flag(kActivateFlagF32).set_addr_a(0);
  EXPECT_EQ(check_small(Instruction(f32).set_addr_b(255)), Error::None);
  EXPECT_EQ(check_small(Instruction(f32).set_addr_b(256)), Error::AccRange);
}

TEST(IsaCheck, BiasRangeIsOneRowPerIteration) {
  const Instruction act =
      activate().set_flag(kActivateFlagBias).set_count(6).set_bias_addr(5).set_bias_step(50);
  EXPECT_EQ(check_small(act), Error::None);  // last bias row 255
  EXPECT_EQ(check_small(Instruction(act).set_bias_addr(6)), Error::AccRange);
}

TEST(IsaCheck, RangesUseWideArithmetic) {
  // (65535 - 1) * 65535 + 65535 would wrap in 32 bits only with a smaller type; it must fail.
  const Instruction mm =
      matmul().set_count(65535).set_step_a(65535).set_rows(65535).set_addr_a(65535);
  EXPECT_EQ(check_small(mm), Error::UbRange);
}

TEST(IsaCheck, RangeOrderIsSourceDestinationBias) {
  // MATMUL: both operands out of range, the source (UB) is reported.
  EXPECT_EQ(check_small(matmul().set_addr_a(2000).set_addr_b(2000)), Error::UbRange);
  // ACTIVATE without F32: the source (ACC) before the destination (UB).
  EXPECT_EQ(check_small(activate().set_addr_a(300).set_addr_b(2000)), Error::AccRange);
  // ACTIVATE: destination (UB) before bias (ACC).
  EXPECT_EQ(check_small(activate().set_flag(kActivateFlagBias).set_addr_b(2000).set_bias_addr(300)),
            Error::UbRange);
}

// Step 4.
TEST(IsaCheck, HostAlignmentIsTheSmallerOfRowAndBus) {
  // dim 16: a UB row or weight row is 32 bytes, so the 16-byte bus sets the beat.
  for (Instruction in :
       {read_host(), read_weights(), write_host(), matmul().set_flag(kMatmulFlagFetch)}) {
    EXPECT_EQ(check_small(Instruction(in).set_host_addr(16).set_host_stride(48).set_host_step(32)),
              Error::None);
    EXPECT_EQ(check_small(Instruction(in).set_host_addr(8)), Error::HostAlign);
    EXPECT_EQ(check_small(Instruction(in).set_host_stride(4)), Error::HostAlign);
    EXPECT_EQ(check_small(Instruction(in).set_host_step(2)), Error::HostAlign);
  }
  // dim 2: a UB row is 4 bytes, an ACC row 8 bytes, both under the bus width.
  HardwareConfig narrow = small_config();
  narrow.dim = 2;
  const Instruction rh = read_host().set_host_addr(4);
  EXPECT_EQ(check(rh, narrow), Error::None);
  EXPECT_EQ(check(Instruction(rh).set_flag(kReadHostFlagAcc), narrow), Error::HostAlign);
  EXPECT_EQ(check(Instruction(rh).set_flag(kReadHostFlagAcc).set_host_addr(8), narrow),
            Error::None);
  EXPECT_EQ(check(write_host().set_flag(kWriteHostFlagAcc).set_host_stride(4), narrow),
            Error::HostAlign);
  EXPECT_EQ(
      check(matmul().set_k_valid(2).set_n_valid(2).set_flag(kMatmulFlagFetch).set_host_addr(4),
            narrow),
      Error::None);
}

// Step 5.
TEST(IsaCheck, HostRangeEndsAtTwoToTheThirtyTwo) {
  // 3 iterations of 4 rows of 32 bytes: the last byte at host_addr + 2*step + 3*stride + 31.
  const Instruction rh =
      read_host().set_count(3).set_rows(4).set_host_step(0x1000).set_host_stride(0x100);
  const std::uint32_t last_start = 0xFFFFFFFFu - 31 - 2 * 0x1000 - 3 * 0x100;
  EXPECT_EQ(check_small(Instruction(rh).set_host_addr(last_start)), Error::None);
  EXPECT_EQ(check_small(Instruction(rh).set_host_addr(last_start + 16)), Error::HostRange);
  // ACC rows are 64 bytes.
  EXPECT_EQ(check_small(write_host().set_flag(kWriteHostFlagAcc).set_host_addr(0xFFFFFFC0u)),
            Error::None);
  EXPECT_EQ(check_small(write_host().set_flag(kWriteHostFlagAcc).set_host_addr(0xFFFFFFD0u)),
            Error::HostRange);
  // MATMUL with FETCH reads k_valid rows per tile, not `rows`.
  const Instruction mm = matmul()
                             .set_flag(kMatmulFlagFetch)
                             .set_rows(100)
                             .set_k_valid(2)
                             .set_host_stride(0x40000000u)
                             .set_host_addr(0xBFFFFFE0u);
  EXPECT_EQ(check_small(mm), Error::None);
  EXPECT_EQ(check_small(Instruction(mm).set_k_valid(3)), Error::HostRange);
}

TEST(IsaCheck, AlignmentBeforeHostRangeAfterRanges) {
  EXPECT_EQ(check_small(read_host().set_host_addr(0xFFFFFFF8u)), Error::HostAlign);
  EXPECT_EQ(check_small(read_host().set_host_addr(0xFFFFFFF8u).set_addr_b(1024)), Error::UbRange);
}

// Step 6.
TEST(IsaCheck, F32ActivateMustNotWriteItsBiasRows) {
  const Instruction act = activate()
                              .set_flag(kActivateFlagF32)
                              .set_flag(kActivateFlagBias)
                              .set_rows(4)
                              .set_addr_a(0)
                              .set_addr_b(0);
  EXPECT_EQ(check_small(Instruction(act).set_bias_addr(4)), Error::None);
  EXPECT_EQ(check_small(Instruction(act).set_bias_addr(3)), Error::AccOverlap);
  // Without F32 the destination is the UB: no overlap with ACC rows is possible.
  Instruction to_ub = act;
  to_ub.set_flag(kActivateFlagF32, false).set_bias_addr(3);
  EXPECT_EQ(check_small(to_ub), Error::None);
}

TEST(IsaCheck, F32ActivateInPlaceOnlyAtTheSameAddress) {
  const Instruction act = activate().set_flag(kActivateFlagF32).set_rows(4).set_count(2);
  // In place, row for row: allowed, even with steps that make iterations overlap.
  EXPECT_EQ(check_small(Instruction(act).set_addr_a(8).set_addr_b(8).set_step_a(2).set_step_b(2)),
            Error::None);
  // Same rows at another offset, or another step.
  EXPECT_EQ(check_small(Instruction(act).set_addr_a(8).set_addr_b(9)), Error::AccOverlap);
  EXPECT_EQ(check_small(Instruction(act).set_addr_a(8).set_addr_b(8).set_step_b(4)),
            Error::AccOverlap);
  // Disjoint spans.
  EXPECT_EQ(check_small(Instruction(act).set_addr_a(0).set_addr_b(4)), Error::None);
}

TEST(IsaCheck, OverlapComparesSpansNotStridedRows) {
  // Destination rows {0, 1, 4, 5} and bias rows {2, 6} never meet, but their spans [0, 6) and
  // [2, 7) do: the issue stage compares spans.
  const Instruction act = activate()
                              .set_flag(kActivateFlagF32)
                              .set_flag(kActivateFlagBias)
                              .set_count(2)
                              .set_rows(2)
                              .set_addr_a(100)
                              .set_addr_b(0)
                              .set_step_b(4)
                              .set_bias_addr(2)
                              .set_bias_step(4);
  EXPECT_EQ(check_small(act), Error::AccOverlap);
}

TEST(IsaCheck, HostChecksBeforeOverlapAfterFields) {
  // An F32 overlap is only reported when every earlier step passes.
  const Instruction overlap =
      activate().set_flag(kActivateFlagF32).set_rows(2).set_addr_a(0).set_addr_b(1);
  EXPECT_EQ(check_small(overlap), Error::AccOverlap);
  EXPECT_EQ(check_small(Instruction(overlap).set_addr_b(256)), Error::AccRange);
  EXPECT_EQ(check_small(Instruction(overlap).set_count(0)), Error::IllegalField);
}

TEST(IsaFootprint, DescribesMemoriesAndHostBytes) {
  const Footprint rh = footprint(read_host()
                                     .set_flag(kReadHostFlagAcc)
                                     .set_count(2)
                                     .set_rows(3)
                                     .set_addr_b(10)
                                     .set_step_b(5)
                                     .set_host_addr(0x100)
                                     .set_host_stride(0x40)
                                     .set_host_step(0x400),
                                 16);
  EXPECT_FALSE(rh.source.used);
  EXPECT_TRUE(rh.destination.used);
  EXPECT_EQ(rh.destination.memory, Memory::Acc);
  EXPECT_EQ(rh.destination.first, 10u);
  EXPECT_EQ(rh.destination.end, 18u);
  EXPECT_TRUE(rh.uses_host);
  EXPECT_FALSE(rh.writes_host);
  EXPECT_EQ(rh.host_row_bytes, 64u);
  EXPECT_EQ(rh.host_end, 0x100u + 0x400 + 2 * 0x40 + 64);

  const Footprint act = footprint(
      activate().set_flag(kActivateFlagBias).set_count(3).set_bias_addr(7).set_bias_step(2), 16);
  EXPECT_EQ(act.source.memory, Memory::Acc);
  EXPECT_EQ(act.destination.memory, Memory::Ub);
  EXPECT_EQ(act.bias.first, 7u);
  EXPECT_EQ(act.bias.end, 12u);
  EXPECT_FALSE(act.uses_host);

  const Footprint wh = footprint(write_host().set_rows(2), 8);
  EXPECT_TRUE(wh.writes_host);
  EXPECT_EQ(wh.host_row_bytes, 16u);
  EXPECT_FALSE(footprint(matmul(), 16).uses_host);
}

}  // namespace
}  // namespace tpu::isa
