// The program builder: each method gives the instruction the assembler gives for the same text,
// defaults are as documented, and illegal instructions are refused with a clear message.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tpu/assembler.hpp"
#include "tpu/program.hpp"

namespace tpu::isa {
namespace {

HardwareConfig config_of_dim(unsigned dim) {
  HardwareConfig config;
  config.dim = dim;
  return config;
}

TEST(ProgramBuilder, MethodsMatchTheAssembler) {
  ProgramBuilder program(config_of_dim(8));

  ReadHostArgs load;
  load.acc = true;
  load.count = 2;
  load.rows = 8;
  load.addr_b = 16;
  load.step_b = 8;
  load.host_addr = 0x1000;
  load.host_stride = 32;
  load.host_step = 256;
  program.read_host(load);

  ReadWeightsArgs weights;
  weights.count = 2;
  weights.rows = 5;
  weights.host_addr = 0x2000;
  weights.host_stride = 16;
  weights.host_step = 128;
  program.read_weights(weights);

  MatmulArgs mm;
  mm.accn = true;
  mm.count = 2;
  mm.rows = 4;
  mm.addr_a = 1;
  mm.step_a = 4;
  mm.addr_b = 3;
  mm.k_valid = 5;
  program.matmul(mm);

  ActivateArgs act;
  act.bias = true;
  act.func = Func::Leaky;
  act.alpha = 0x3C23;
  act.rows = 4;
  act.addr_a = 3;
  act.addr_b = 100;
  act.bias_addr = 20;
  program.activate(act);

  WriteHostArgs store;
  store.count = 3;
  store.rows = 2;
  store.addr_a = 100;
  store.step_a = 2;
  store.host_addr = 0x3000;
  store.host_stride = 16;
  store.host_step = 64;
  program.write_host(store).sync().halt();

  const std::vector<Instruction> expected = assemble(
      "read_host acc count=2 rows=8 addr_b=16 step_b=8 host_addr=0x1000 host_stride=32 "
      "host_step=256\n"
      "read_weights count=2 rows=5 host_addr=0x2000 host_stride=16 host_step=128\n"
      "matmul accn count=2 rows=4 addr_a=1 step_a=4 addr_b=3 k_valid=5 n_valid=8\n"
      "activate bias func=leaky alpha=0x3c23 rows=4 addr_a=3 addr_b=100 bias_addr=20\n"
      "write_host count=3 rows=2 addr_a=100 step_a=2 host_addr=0x3000 host_stride=16 "
      "host_step=64\n"
      "sync\n"
      "halt\n");
  EXPECT_EQ(program.instructions(), expected);
  EXPECT_EQ(program.size(), 7u);
  EXPECT_EQ(program.bytes(), encode_program(expected));
}

TEST(ProgramBuilder, Defaults) {
  ProgramBuilder program(config_of_dim(16));
  program.read_host({}).read_weights({}).matmul({}).activate({}).write_host({});
  EXPECT_EQ(program.instructions(), assemble("read_host rows=1\n"
                                             "read_weights rows=1\n"
                                             "matmul rows=1 k_valid=16 n_valid=16\n"
                                             "activate rows=1\n"
                                             "write_host rows=1\n"));
}

TEST(ProgramBuilder, AppendChecksToo) {
  ProgramBuilder program(config_of_dim(4));
  program.append(assemble("matmul rows=2 k_valid=4 n_valid=4").front());
  EXPECT_EQ(program.size(), 1u);
  try {
    program.append(assemble("matmul rows=2 k_valid=5 n_valid=4").front());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "instruction 1 (matmul): ILLEGAL_FIELD: k_valid 5 is outside 1..4");
  }
  Instruction unknown;
  unknown.set(kOpcode, 0x42);
  try {
    program.append(unknown);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "instruction 1 (unknown opcode): ILLEGAL_OPCODE: opcode 0x42 is unknown");
  }
  EXPECT_EQ(program.size(), 1u);
}

TEST(ProgramBuilder, RefusesWhatTheIssueStageRefuses) {
  ProgramBuilder program(config_of_dim(16));
  ActivateArgs act;
  act.func = Func::Relu;
  act.alpha = 0x3F80;
  EXPECT_THROW(program.activate(act), std::invalid_argument);

  WriteHostArgs store;
  store.host_addr = 8;  // not a multiple of the 16-byte beat
  try {
    program.write_host(store);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "instruction 0 (write_host): HOST_ALIGN: host_addr, host_stride and host_step "
                 "must be multiples of 16 bytes");
  }
  ReadHostArgs load;
  load.rows = 70000;
  try {
    program.read_host(load);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "instruction 0 (read_host): value 70000 does not fit in field rows (16 bits)");
  }
  EXPECT_EQ(program.size(), 0u);
}

TEST(ProgramBuilder, RefusesAnImpossibleConfiguration) {
  EXPECT_THROW(ProgramBuilder{config_of_dim(6)}, std::invalid_argument);
}

}  // namespace
}  // namespace tpu::isa
