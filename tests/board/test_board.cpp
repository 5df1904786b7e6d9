// The FPGA board in simulation (sim/backends/board_sim.hpp): tpu_board's RTL, built with the
// parameters of fpga/<board>/board.toml, behind a model of the UART line, driven by the same
// host-link client and serial backend a real board gets. Every request kind, every way the board
// rejects one, broken lines in both directions, and compiled GEMMs bit for bit against the
// reference and the functional model.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/board_sim.hpp"
#include "common/gemm_operands.hpp"
#include "common/test_seed.hpp"
#include "tpu/compiler.hpp"
#include "tpu/isa.hpp"
#include "tpu/link.hpp"
#include "tpu/model.hpp"
#include "tpu/program.hpp"
#include "tpu/regs.hpp"
#include "tpu/serial_backend.hpp"

namespace tpu::testing {
namespace {

using link::Command;
using link::LinkClient;
using link::LinkError;
using link::LinkOptions;

// The simulated board answers within microseconds of its own time.
constexpr unsigned kReplyTimeoutMs = 2;

LinkOptions options_for(const sim::SimulatedBoard& board, unsigned retries) {
  LinkOptions options;
  options.baud = board.params().baud;
  options.reply_timeout_ms = kReplyTimeoutMs;
  options.retries = retries;
  return options;
}

// Runs `call`, which must throw LinkError mentioning `expected`.
template <typename Call>
void expect_link_error(Call call, const std::string& expected) {
  try {
    call();
    ADD_FAILURE() << "no LinkError; expected one mentioning '" << expected << "'";
  } catch (const LinkError& error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos)
        << "'" << error.what() << "' does not mention '" << expected << "'";
  }
}

class BoardLink : public ::testing::Test {
 protected:
  sim::SimulatedBoard board_;
};

TEST_F(BoardLink, InfoDescribesTheBuild) {
  LinkClient client(board_, options_for(board_, 0));
  const link::BoardInfo& info = client.info();
  EXPECT_EQ(info.version, link::kVersion);
  EXPECT_EQ(info.max_payload, link::kMaxPayload);
  EXPECT_EQ(info.mem_bytes, board_.params().mem_bytes);
  EXPECT_EQ(info.clock_hz, board_.params().clock_hz);
  EXPECT_EQ(info.baud, board_.params().baud);
}

TEST_F(BoardLink, RegistersOfTheCore) {
  LinkClient client(board_, options_for(board_, 0));
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
  EXPECT_EQ(client.read_register(regs::kVersion), regs::kVersionReset);
  client.write_register(regs::kProgAddr, 0x00012340);
  client.write_register(regs::kProgCount, 77);
  EXPECT_EQ(client.read_register(regs::kProgAddr), 0x00012340u);
  EXPECT_EQ(client.read_register(regs::kProgCount), 77u);
  EXPECT_EQ(client.read_register(regs::kStatus) & regs::kStatusBusyMask, 0u);
}

TEST_F(BoardLink, MemoryRoundTripAcrossRequestsAndToTheLastByte) {
  LinkClient client(board_, options_for(board_, 0));
  std::mt19937 rng(static_cast<std::uint32_t>(test::test_seed()));
  // Odd start and length, over three requests.
  std::vector<std::uint8_t> bytes(2 * link::kMaxPayload + 37);
  for (std::uint8_t& byte : bytes) byte = static_cast<std::uint8_t>(rng());
  client.write_memory(13, bytes.data(), bytes.size());
  std::vector<std::uint8_t> back(bytes.size());
  client.read_memory(13, back.data(), back.size());
  EXPECT_EQ(back, bytes);
  // The last bytes of memory, and a single byte.
  const std::uint32_t last = board_.params().mem_bytes - 5;
  const std::vector<std::uint8_t> tail{1, 2, 3, 4, 5};
  client.write_memory(last, tail.data(), tail.size());
  std::vector<std::uint8_t> tail_back(5);
  client.read_memory(last, tail_back.data(), tail_back.size());
  EXPECT_EQ(tail_back, tail);
  std::uint8_t one = 0;
  client.read_memory(14, &one, 1);
  EXPECT_EQ(one, bytes[1]);
}

TEST_F(BoardLink, RejectsAddressesOutsideMemoryAndRegisters) {
  LinkClient client(board_, options_for(board_, 2));
  std::vector<std::uint8_t> four(4);
  const std::uint32_t end = board_.params().mem_bytes;
  expect_link_error([&] { client.read_memory(end - 2, four.data(), 4); }, "BAD_ADDRESS");
  expect_link_error([&] { client.write_memory(end, four.data(), 1); }, "BAD_ADDRESS");
  expect_link_error([&] { client.read_register(0x002); }, "BAD_ADDRESS");
  expect_link_error([&] { client.read_register(0x1000); }, "BAD_ADDRESS");
  // Rejections are not retried: they would be rejected again.
  EXPECT_EQ(client.requests(), 1u + 4u);  // INFO, then one each
}

TEST_F(BoardLink, CoreSlaveErrorsAreBusErrors) {
  LinkClient client(board_, options_for(board_, 0));
  expect_link_error([&] { client.read_register(0x0FC); }, "BUS_ERROR");          // unmapped
  expect_link_error([&] { client.write_register(regs::kId, 1); }, "BUS_ERROR");  // read-only
}

TEST_F(BoardLink, RejectsMalformedRequests) {
  LinkClient client(board_, options_for(board_, 0));
  expect_link_error([&] { client.transact(static_cast<Command>(0x7F), 0, {}, true); },
                    "BAD_COMMAND");
  expect_link_error([&] { client.transact(Command::ReadMem, 0, {0, 0}, true); }, "BAD_LENGTH");
  expect_link_error(
      [&] {
        client.transact(Command::ReadMem, 0, {0x01, 0x01}, true);
      },
      "BAD_LENGTH");  // 257 bytes
  expect_link_error([&] { client.transact(Command::ReadMem, 0, {4}, true); }, "BAD_LENGTH");
  expect_link_error(
      [&] {
        client.transact(Command::WriteMem, 0, std::vector<std::uint8_t>(link::kMaxPayload + 1),
                        true);
      },
      "BAD_LENGTH");
  expect_link_error(
      [&] {
        client.transact(Command::WriteReg, regs::kProgAddr, {1, 2, 3}, true);
      },
      "BAD_LENGTH");
  expect_link_error([&] { client.transact(Command::ReadReg, regs::kId, {0}, true); }, "BAD_LENGTH");
  expect_link_error([&] { client.transact(Command::Info, 0, {0}, true); }, "BAD_LENGTH");
  // The board is still in step.
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
}

TEST_F(BoardLink, CorruptRequestIsRejectedAndChangesNothing) {
  LinkClient client(board_, options_for(board_, 0));
  const std::vector<std::uint8_t> before(16, 0x11), after(16, 0x22);
  client.write_memory(0x100, before.data(), before.size());
  // One payload bit of the next request flips on the line.
  board_.flip_request_bits(12, 0x08);
  expect_link_error([&] { client.write_memory(0x100, after.data(), after.size()); }, "CORRUPT");
  std::vector<std::uint8_t> back(16);
  client.read_memory(0x100, back.data(), back.size());
  EXPECT_EQ(back, before);
}

TEST_F(BoardLink, CorruptRequestIsRetried) {
  LinkClient client(board_, options_for(board_, 2));
  const std::uint64_t sent = client.requests();
  board_.flip_request_bits(3, 0x01);  // the address
  client.write_register(regs::kProgCount, 5);
  EXPECT_EQ(client.requests(), sent + 2);
  EXPECT_EQ(client.read_register(regs::kProgCount), 5u);
}

TEST_F(BoardLink, CharacterWithoutStopBitIsCorrupt) {
  LinkClient client(board_, options_for(board_, 0));
  board_.drop_request_stop_bit(5);
  expect_link_error([&] { client.read_register(regs::kId); }, "CORRUPT");
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
}

TEST_F(BoardLink, RequestThatBreaksOffTimesOut) {
  LinkClient client(board_, options_for(board_, 0));
  board_.cut_request_after(6);  // in the address
  expect_link_error([&] { client.read_register(regs::kId); }, "TIMEOUT");
  // The board drops the broken request and answers the next one.
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
  board_.cut_request_after(12);  // in the payload
  expect_link_error([&] { client.write_register(regs::kProgCount, 9); }, "TIMEOUT");
  EXPECT_NE(client.read_register(regs::kProgCount), 9u);
}

TEST_F(BoardLink, DamagedReplyIsDetected) {
  LinkClient client(board_, options_for(board_, 0));
  board_.flip_reply_bits(6, 0x10);  // a data byte of READ_REG's reply
  expect_link_error([&] { client.read_register(regs::kId); }, "CRC");
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
}

TEST_F(BoardLink, DamagedReplyIsRetriedWhenRepeatable) {
  LinkClient client(board_, options_for(board_, 1));
  board_.flip_reply_bits(1, 0x04);  // the status
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
}

TEST_F(BoardLink, DeadLineGivesUpInTime) {
  LinkClient client(board_, options_for(board_, 2));
  board_.set_reply_line_dead(true);
  const double start = board_.elapsed_ms();
  const std::uint64_t sent = client.requests();
  expect_link_error([&] { client.read_register(regs::kId); }, "no reply");
  EXPECT_EQ(client.requests(), sent + 3);
  // Three attempts and two waits for a quiet line: well under 50 ms of the board's time.
  EXPECT_LT(board_.elapsed_ms() - start, 50.0);
  board_.set_reply_line_dead(false);
  EXPECT_EQ(client.read_register(regs::kId), regs::kIdReset);
}

TEST_F(BoardLink, LostReplyOfStartIsNotRepeated) {
  LinkClient client(board_, options_for(board_, 2));
  board_.set_reply_line_dead(true);
  const std::uint64_t sent = client.requests();
  expect_link_error([&] { client.write_register(regs::kCtrl, 0, false); },
                    "may or may not have been carried out");
  EXPECT_EQ(client.requests(), sent + 1);
}

TEST(BoardLinkNoBoard, SilentPortIsNoBoard) {
  sim::SimulatedBoard board;
  board.set_reply_line_dead(true);
  expect_link_error([&] { LinkClient client(board, options_for(board, 0)); }, "no reply");
}

// --- The serial backend ---

test::GemmOperands random_operands(oracle::OperandRng& rng, const GemmSpec& s) {
  return test::random_gemm_operands(rng, s, 5, 5);
}

// An int8-only board's products (fpga/ulx3s_int8): raw int32 sums with C and the input zero
// point, and requantised ones with relu, against the reference and the model.
void int8_gemms_match(SerialBackend& backend, oracle::OperandRng& rng) {
  const HardwareConfig config = backend.config();
  const std::uint32_t d = config.dim;
  const auto random_int8 = [&](std::uint32_t rows, std::uint32_t cols) {
    num::MatrixI8 m(rows, cols);
    for (auto& v : m.data) v = static_cast<std::int8_t>(int(rng.uniform(0, 255)) - 128);
    return m;
  };
  for (const OutType out : {OutType::Int32, OutType::Int8}) {
    GemmSpec s;
    s.m = d + 3;
    s.k = 2 * d + 1;
    s.n = d + 2;
    s.in = InType::Int8;
    s.out = out;
    s.input_zero_point = int(rng.uniform(0, 255)) - 128;
    s.has_c = out == OutType::Int32;
    if (out == OutType::Int8) {
      s.output_zero_point = int(rng.uniform(0, 255)) - 128;
      s.clamp_lo = s.output_zero_point;  // relu
    }
    SCOPED_TRACE(out == OutType::Int8 ? "int8 results" : "int32 results");
    const num::MatrixI8 a = random_int8(s.m, s.k), b = random_int8(s.k, s.n);
    num::MatrixI32 c(s.m, s.n);
    for (auto& v : c.data) v = static_cast<std::int32_t>(rng.uniform(0, 0xFFFFFFFFu));
    RequantColumns requant;
    for (std::uint32_t j = 0; j < s.n; ++j) {
      requant.bias.push_back(int(rng.uniform(0, 2000)) - 1000);
      requant.multiplier.push_back(
          static_cast<std::int32_t>(rng.uniform(1u << 30, (1u << 31) - 1)));
      requant.shift.push_back(-int(rng.uniform(4, 12)));
    }
    const num::MatrixI32* c_in = s.has_c ? &c : nullptr;
    const RequantColumns* requant_in = out == OutType::Int8 ? &requant : nullptr;
    const num::MatrixI32 got = run_gemm(backend, s, a, b, c_in, requant_in);
    EXPECT_EQ(got.data, reference_gemm(s, a, b, c_in, requant_in).data);
    FunctionalModel model(config, 0);
    EXPECT_EQ(run_gemm(model, s, a, b, c_in, requant_in).data, got.data);
  }
}

// Every simulated board runs the serial backend's tests: the ULX3S carries the array core, the
// iCEBreaker the sequential one.
std::vector<std::string> board_names() {
  std::vector<std::string> names;
  for (const sim::BoardParams& params : sim::compiled_boards()) {
    names.push_back(params.name);
  }
  return names;
}

class SerialBackendOn : public ::testing::TestWithParam<std::string> {};

std::unique_ptr<SerialBackend> open_board(const std::string& name,
                                          sim::SimulatedBoard** board = nullptr) {
  sim::SimBoardOptions sim;
  sim.board = name;
  auto port = std::make_unique<sim::SimulatedBoard>(sim);
  if (board) *board = port.get();
  const LinkOptions options = options_for(*port, 2);
  return std::make_unique<SerialBackend>(std::move(port), options, 0);
}

TEST_P(SerialBackendOn, ConfigurationComesFromTheCore) {
  const std::unique_ptr<SerialBackend> backend = open_board(GetParam());
  const HardwareConfig& c = backend->config();
  EXPECT_TRUE(c.dim >= 1 && (c.dim & (c.dim - 1)) == 0);
  EXPECT_NO_THROW(isa::validate_config(c));
  EXPECT_EQ(config_from_registers(backend->link().read_register(regs::kHwArray),
                                  backend->link().read_register(regs::kHwMemory),
                                  backend->link().read_register(regs::kHwCore)),
            c);
}

TEST_P(SerialBackendOn, GemmsMatchTheReferenceAndTheModel) {
  const std::unique_ptr<SerialBackend> backend = open_board(GetParam());
  const HardwareConfig config = backend->config();
  oracle::OperandRng rng(test::test_seed());
  if (!config.float_datapath) return int8_gemms_match(*backend, rng);
  const std::uint32_t d = config.dim;
  struct Case {
    std::uint32_t m, k, n;
    bool c, bias;
    isa::Func act;
    OutType out;
  };
  const std::vector<Case> cases{
      {5, 7, 3, false, false, isa::Func::None, OutType::Fp32},
      {2 * d + 1, 3 * d - 1, d + 2, true, true, isa::Func::Relu, OutType::Fp32},
      {d + 3, 2 * d, 2 * d + 1, false, true, isa::Func::Gelu, OutType::Bf16},
      {3, d + 1, 5, true, false, isa::Func::Sigmoid, OutType::Bf16},
  };
  for (const Case& t : cases) {
    GemmSpec s;
    s.m = t.m;
    s.k = t.k;
    s.n = t.n;
    s.has_c = t.c;
    s.has_bias = t.bias;
    s.act = t.act;
    s.out = t.out;
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n));
    const test::GemmOperands o = random_operands(rng, s);
    const num::MatrixFp32* c = o.c_for(s);
    const std::vector<num::fp32_t>* bias = o.bias_for(s);
    RunResult board_run;
    const num::MatrixFp32 got = run_gemm(*backend, s, o.a, o.b, c, bias, &board_run);
    EXPECT_EQ(got.data, reference_gemm(s, o.a, o.b, c, bias).data);
    FunctionalModel model(config, 0);
    RunResult model_run;
    EXPECT_EQ(run_gemm(model, s, o.a, o.b, c, bias, &model_run).data, got.data);
    EXPECT_EQ(board_run.instructions, model_run.instructions);
    ASSERT_TRUE(board_run.counters.has_value());
    const Counters& counters = *board_run.counters;
    EXPECT_EQ(counters[regs::kCntUsefulMacsIndex], std::uint64_t{s.m} * s.k * s.n);
  }
}

TEST_P(SerialBackendOn, UploadsOnlyWhatChanged) {
  const std::unique_ptr<SerialBackend> backend = open_board(GetParam());
  oracle::OperandRng rng(test::test_seed());
  GemmSpec s;
  s.m = 6;
  s.k = 9;
  s.n = 5;
  // An int8-only board runs the same product in int8, with int32 results of the same size.
  const bool int8 = !backend->config().float_datapath;
  if (int8) {
    s.in = InType::Int8;
    s.out = OutType::Int32;
  }
  const test::GemmOperands o = random_operands(rng, s);
  num::MatrixI8 a8(s.m, s.k), b8(s.k, s.n);
  for (std::size_t i = 0; i < a8.data.size(); ++i)
    a8.data[i] = static_cast<std::int8_t>(o.a.data[i]);
  for (std::size_t i = 0; i < b8.data.size(); ++i)
    b8.data[i] = static_cast<std::int8_t>(o.b.data[i]);
  const auto product = [&] {
    if (!int8) return run_gemm(*backend, s, o.a, o.b).data;
    const auto sums = run_gemm(*backend, s, a8, b8).data;
    return std::vector<num::fp32_t>(sums.begin(), sums.end());
  };
  const std::vector<num::fp32_t> first = product();
  const std::uint64_t uploaded = backend->bytes_uploaded();
  const std::uint64_t downloaded = backend->bytes_downloaded();
  EXPECT_EQ(product(), first);
  // The same product again: nothing to send; the results come back again.
  EXPECT_EQ(backend->bytes_uploaded(), uploaded);
  EXPECT_EQ(backend->bytes_downloaded(), 2 * downloaded);
  const GemmPlan plan = plan_gemm(backend->config(), s);
  EXPECT_EQ(downloaded, std::uint64_t{s.m} * plan.n_pad * 4);
}

TEST_P(SerialBackendOn, CoreErrorsAreReportedAsTheModelReportsThem) {
  const std::unique_ptr<SerialBackend> backend = open_board(GetParam());
  FunctionalModel model(backend->config(), 512);
  // A READ_HOST with rows = 0 is ILLEGAL_FIELD (the builder would refuse it).
  const std::vector<std::uint8_t> program = isa::encode_program(
      {isa::Instruction(isa::Opcode::ReadHost), isa::Instruction(isa::Opcode::Halt)});
  for (Backend* b : {static_cast<Backend*>(backend.get()), static_cast<Backend*>(&model)}) {
    b->memory().resize(512);
    b->memory().write_array(0x100, program);
  }
  const auto count = static_cast<std::uint32_t>(program.size() / isa::kInstrBytes);
  const RunResult on_board = backend->run(0x100, count);
  const RunResult on_model = model.run(0x100, count);
  EXPECT_FALSE(on_board.ok());
  EXPECT_EQ(on_board.error, on_model.error);
  EXPECT_EQ(on_board.error_pc, on_model.error_pc);
  EXPECT_EQ(on_board.error, regs::Error::IllegalField);
}

TEST_P(SerialBackendOn, MemoryBeyondTheBoardIsRefused) {
  sim::SimulatedBoard* board = nullptr;
  const std::unique_ptr<SerialBackend> backend = open_board(GetParam(), &board);
  backend->memory().resize(std::size_t{board->params().mem_bytes} + 32);
  EXPECT_THROW(backend->run(0, 1), std::invalid_argument);
  sim::SimBoardOptions sim;
  sim.board = GetParam();
  auto port = std::make_unique<sim::SimulatedBoard>(sim);
  const LinkOptions options = options_for(*port, 0);
  EXPECT_THROW(SerialBackend(std::move(port), options, std::size_t{1} << 31),
               std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Boards, SerialBackendOn, ::testing::ValuesIn(board_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(SerialBackend, LongRunBeyondTheTimeoutIsAnErrorNotAWait) {
  auto port = std::make_unique<sim::SimulatedBoard>();
  const LinkOptions options = options_for(*port, 0);
  SerialRunOptions run_options;
  run_options.run_timeout_ms = 1;
  SerialBackend backend(std::move(port), options, 4096, run_options);
  // One MATMUL of many iterations over the same rows and the same weight tile: far longer than
  // a millisecond of the board's time.
  const HardwareConfig& config = backend.config();
  isa::MatmulArgs matmul;
  matmul.fetch = true;
  matmul.count = 1000;
  matmul.rows = std::min(128u, config.acc_depth / 2);
  matmul.host_addr = 0x400;
  matmul.host_stride = 2 * config.dim;
  isa::ProgramBuilder program(config);
  program.matmul(matmul).halt();
  backend.memory().write_array(0, program.bytes());
  expect_link_error([&] { backend.run(0, static_cast<std::uint32_t>(program.size())); },
                    "still running");
}

}  // namespace
}  // namespace tpu::testing
