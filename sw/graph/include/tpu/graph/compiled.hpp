// A graph compiled for one core and one batch size (`tpu compile`, docs/graph.md#compiled-models):
// the graph as its load passes left it, with the batch fixed; the schedule of the GEMMs its
// matrix products run, each planned once (addresses and program); and the image of the core's
// host memory they share: the resident weights, then the programs. The operands that change
// from run to run (A, a B computed from the inputs, the results) share one scratch region above
// the image, which every GEMM (or chain of GEMMs) reuses in turn, since the host reads each
// result back before the next operator (host steps until the on-chip operators keep activations
// on the core). Where a product's result goes straight into the next product as its A (a
// chain: an MLP's layers, a transformer's feed-forward pair), it stays in the core's memory and
// the products run as one program.
//
// A session of a compiled model (graph::Session) writes the image once, then runs each GEMM's
// program as it was compiled; nothing is planned, and the programs do not cross the bus again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/compiler.hpp"
#include "tpu/graph/graph.hpp"

namespace tpu::graph {

struct CompiledGemm {
  std::string node;                // the name of the node whose product runs it
  std::uint64_t weight_bytes = 0;  // of the image: its resident B (0 where B is an activation)
  // It runs as a part of the next GEMM's program: the host writes its operands before that
  // program runs (its plan's program is empty: the last GEMM of the program has the whole).
  // Either its result stays in the core's memory as the next GEMM's A (`result_kept`, a chain),
  // or the next GEMM is independent of it (a group: a batched MatMul's matrices, a grouped
  // convolution's groups) and the host reads its result once the program has run.
  bool runs_with_next = false;
  bool result_kept = false;
  // program_resident; weights_resident where B is resident; input_resident where A is the result
  // of the GEMM before it in a chain (which then writes bf16: the bits its next product rounds
  // the result to anyway).
  GemmPlan plan;
};

struct CompiledModel {
  Graph graph;  // its inputs' open first dimension fixed to `batch`
  HardwareConfig config;
  std::size_t batch = 0;            // inputs per run; 0 where the file fixes every input's shape
  // Per input of the graph: whether the file left its first dimension open, the batch (a run
  // takes `batch` of its rows), or fixed it (a run takes it whole).
  std::vector<bool> batched;
  std::vector<std::uint8_t> image;  // host memory from address 0: weights, then programs
  std::uint64_t scratch_bytes = 0;  // above the image: the most one GEMM's operands take
  std::vector<CompiledGemm> gemms;  // in the order the graph runs them
  // The other nodes that run on the core: the vector unit's (a softmax: plan_softmax) and the
  // moves of values (plan_move), their programs planned as the model runs, above the image and
  // the products' operands.
  std::vector<std::string> vector_nodes;
  // The nodes with products on the core that compute on the host besides (OpRun's
  // host_arithmetic: a recurrent node's gates on a core without a vector unit).
  std::vector<std::string> host_arithmetic_nodes;
};

// Compiles `graph` (as load_graph gives it) for `config`, runs of `batch` inputs where its
// inputs leave the first dimension open. Traces the graph once on zeros: the products are
// planned, not run. Throws std::runtime_error with one line where it cannot (another open
// dimension, a node that cannot run on those shapes, a product too large for the core).
CompiledModel compile(const Graph& graph, const HardwareConfig& config, std::size_t batch);

// The file's bytes: 8 bytes "TPUMODL1", the lengths of the JSON header and of the data (8 bytes
// each, little-endian) and the CRC-32 of both (4 bytes), the header (the graph, the core, the
// GEMMs' plans, where each tensor, program and the image lie in the data), the data.
std::string compiled_file(const CompiledModel& model);
// Throws std::runtime_error with one line, "<path>: <what>", for a file that is not a compiled
// model, is truncated or corrupt, or names a core this build does not know.
CompiledModel read_compiled(const std::string& path);
// Whether the file starts as a compiled model does.
bool is_compiled_model(const std::string& path);

}  // namespace tpu::graph
