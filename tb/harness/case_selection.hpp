// What the two regressions (mxu_sim, core_sim) check of their command line before they run a
// case: every --only name is a planned case, and --wave asks for exactly one case on a model with
// waveform tracing compiled in (sim/models.cmake), into a file that can be written. Each failure
// is one line on stderr and exit status 2.
#pragma once

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace tpu::harness {

// `plan` holds the cases (members `config` and `name`); `configs` the compiled configurations
// (with name()), `traces(config)` whether one has tracing; `wave_target` the make target that
// traces every model. Returns 0 when the selection is good, else 2 after printing why.
template <typename Planned, typename Config, typename Traces>
int check_case_selection(const std::string& program, const std::vector<Planned>& plan,
                         const std::vector<std::string>& only, const std::string& wave,
                         const std::vector<Config>& configs, Traces traces,
                         const std::string& wave_target) {
  if (!wave.empty() && only.size() != 1) {
    fmt::print(stderr, "{}: --wave needs exactly one --only case\n", program);
    return 2;
  }
  auto named = [&](const std::string& name) {
    return std::find_if(plan.begin(), plan.end(),
                        [&](const Planned& planned) { return planned.name == name; });
  };
  for (const std::string& name : only) {
    if (named(name) == plan.end()) {
      fmt::print(stderr, "{}: no case named {} (see --list)\n", program, name);
      return 2;
    }
  }
  if (wave.empty()) return 0;
  const Planned& selected = *named(only[0]);
  if (!traces(selected.config)) {
    std::vector<std::string> traced;
    for (const Config& config : configs)
      if (traces(config)) traced.push_back(config.name());
    fmt::print(stderr,
               "{}: --wave: the {} model is built without waveform tracing (traced: {}; "
               "make {} TRACE=1 traces every model)\n",
               program, selected.config.name(), fmt::join(traced, ", "), wave_target);
    return 2;
  }
  if (!std::ofstream(wave)) {
    fmt::print(stderr, "{}: cannot write {}\n", program, wave);
    return 2;
  }
  return 0;
}

}  // namespace tpu::harness
