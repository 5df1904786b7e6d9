// The Verilator context every model of the harness runs in: every register starts from a random
// value drawn from a repeatable seed (the models are built with --x-initial unique, so reset must
// bring the design to a known state), a failed assertion sets gotError() for the harness to
// report instead of ending the program, and waveforms may be traced.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "verilated.h"
#include "verilated_fst_c.h"

namespace tpu::sim {

inline std::unique_ptr<VerilatedContext> make_context(std::uint32_t random_init_seed) {
  auto context = std::make_unique<VerilatedContext>();
  context->randReset(2);
  // Verilator takes seed 0 to mean a random seed: keep every run repeatable.
  context->randSeed(static_cast<int>(random_init_seed % 0x7FFFFFFF) + 1);
  context->fatalOnError(false);
  context->traceEverOn(true);
  return context;
}

// Whether a Verilator model was built with FST tracing (TRACE in sim/models.cmake, or
// -DTPU_TRACE=ON): only then does it have trace().
template <typename Model, typename = void>
struct has_fst_trace : std::false_type {};
template <typename Model>
struct has_fst_trace<
    Model, std::void_t<decltype(std::declval<Model&>().trace(std::declval<VerilatedFstC*>(), 0))>>
    : std::true_type {};

// The FST waveform of one model, when asked for. Time steps by half a 10 ns clock period, in the
// context's 1 ps resolution, whether or not a waveform is written. Verilator's FST writer is only
// referred to where a traced model is opened, so that a program of untraced models needs none of
// its runtime.
class Waveform {
 public:
  // Throws std::invalid_argument when the model was built without tracing.
  template <typename Model>
  void open(Model& model, const std::string& path) {
    if constexpr (has_fst_trace<Model>::value) {
      auto file = std::make_unique<FstFile<Model>>();
      model.trace(&file->fst, 99);
      file->fst.open(path.c_str());
      if (!file->fst.isOpen()) throw std::runtime_error("cannot open trace file " + path);
      file_ = std::move(file);
    } else {
      (void)model;
      throw std::invalid_argument(
          "this model is built without waveform tracing: sim/models.cmake marks the traced "
          "ones (TRACE); cmake -DTPU_TRACE=ON traces every model (make wave TRACE=1)");
    }
  }

  void half_period(VerilatedContext& context) {
    context.timeInc(5000);
    if (file_) file_->dump(context.time());
  }

  void close() {
    if (file_) file_->close();
  }

 private:
  struct File {
    virtual ~File() = default;
    virtual void dump(std::uint64_t time) = 0;
    virtual void close() = 0;
  };
  template <typename Model>
  struct FstFile final : File {
    VerilatedFstC fst;
    void dump(std::uint64_t time) override { fst.dump(time); }
    void close() override { fst.close(); }
  };
  std::unique_ptr<File> file_;
};

}  // namespace tpu::sim
