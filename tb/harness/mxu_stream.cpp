#include "harness/mxu_stream.hpp"

#include <random>
#include <string>

namespace tpu::harness {
namespace {

void check_jobs(const ArrayConfig& config, const std::vector<TileJob>& jobs) {
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const TileJob& job = jobs[j];
    const std::string where = "job " + std::to_string(j) + ": ";
    if (job.m == 0) throw std::invalid_argument(where + "no activation rows");
    if (job.weights.size() != std::size_t{config.rows} * config.cols)
      throw std::invalid_argument(where + "weight tile is not rows x cols");
    if (job.acts.size() != job.m * config.rows)
      throw std::invalid_argument(where + "activations are not m x rows");
    if (job.seed_from) {
      if (*job.seed_from >= j) throw std::invalid_argument(where + "seeds from a later job");
      if (jobs[*job.seed_from].m != job.m)
        throw std::invalid_argument(where + "seed job has a different row count");
    } else if (job.seeds.size() != job.m * config.cols) {
      throw std::invalid_argument(where + "seeds are not m x cols");
    }
  }
}

// Walks (job, row) pairs in order.
struct Cursor {
  std::size_t job = 0;
  std::size_t row = 0;
  bool presenting = false;

  bool done(const std::vector<TileJob>& jobs) const { return job >= jobs.size(); }
  void advance(std::size_t rows_in_job) {
    presenting = false;
    if (++row == rows_in_job) {
      row = 0;
      ++job;
    }
  }
};

}  // namespace

StreamResult run_stream(MxuModel& model, const std::vector<TileJob>& jobs,
                        const StallProfile& stalls) {
  const ArrayConfig& config = model.config();
  check_jobs(config, jobs);

  StreamResult out;
  out.results.resize(jobs.size());
  std::uint64_t total_rows = 0;
  for (const TileJob& job : jobs) total_rows += job.m;

  std::mt19937_64 rng(stalls.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  auto holds_back = [&](double probability) { return probability > 0 && coin(rng) < probability; };

  Cursor wgt, act, seed, res;
  std::vector<bf16_t> wgt_row(config.cols), act_row(config.rows);
  std::vector<fp32_t> seed_row(config.cols);

  // Generous bound: the stall-free time stretched by the stall probabilities.
  std::uint64_t bound_rows = total_rows + std::uint64_t{config.min_tile_period()} * jobs.size();
  const double slow =
      1.0 /
      (1.0 -
       std::max({stalls.weight_gap, stalls.act_gap, stalls.seed_gap, stalls.result_block, 0.0}) +
       1e-9);
  const std::uint64_t max_cycles =
      static_cast<std::uint64_t>(double(bound_rows + config.latency() + config.rows) * slow * 4) +
      1000 + std::uint64_t{config.latency()} * jobs.size() * 2;

  model.reset();
  std::optional<std::uint64_t> first_weight_cycle;
  std::uint64_t cycle = 0;
  while (!res.done(jobs)) {
    if (cycle > max_cycles) {
      throw ProtocolError("no progress: " + std::to_string(out.stats.result_rows) + " of " +
                          std::to_string(total_rows) + " result rows after " +
                          std::to_string(cycle) + " cycles (" + config.name() + ")");
    }
    // Offer beats. Once offered, a beat stays until taken (the RTL asserts it).
    if (!wgt.done(jobs) && !wgt.presenting) wgt.presenting = !holds_back(stalls.weight_gap);
    if (!act.done(jobs) && !act.presenting) act.presenting = !holds_back(stalls.act_gap);
    if (!seed.done(jobs) && !seed.presenting) {
      const TileJob& job = jobs[seed.job];
      const bool available =
          !job.seed_from || out.results[*job.seed_from].size() > seed.row * config.cols;
      seed.presenting = available && !holds_back(stalls.seed_gap);
    }

    if (wgt.presenting) {
      const TileJob& job = jobs[wgt.job];
      for (unsigned c = 0; c < config.cols; ++c)
        wgt_row[c] = job.weights[wgt.row * config.cols + c];
    }
    if (act.presenting) {
      const TileJob& job = jobs[act.job];
      for (unsigned k = 0; k < config.rows; ++k) act_row[k] = job.acts[act.row * config.rows + k];
    }
    if (seed.presenting) {
      const TileJob& job = jobs[seed.job];
      const std::vector<fp32_t>& source = job.seed_from ? out.results[*job.seed_from] : job.seeds;
      for (unsigned c = 0; c < config.cols; ++c) seed_row[c] = source[seed.row * config.cols + c];
    }
    const bool act_last = act.presenting && act.row + 1 == jobs[act.job].m;
    model.drive_weights(wgt.presenting, wgt_row);
    model.drive_acts(act.presenting, act_row, act_last);
    model.drive_seeds(seed.presenting, seed_row);
    const bool res_ready = !holds_back(stalls.result_block);
    model.drive_res_ready(res_ready);
    model.settle();

    const bool wgt_fire = wgt.presenting && model.wgt_ready();
    const bool act_fire = act.presenting && model.act_ready();
    const bool seed_fire = seed.presenting && model.seed_ready();
    if (act_fire != seed_fire) {
      throw ProtocolError("activation and seed streams fired apart at cycle " +
                          std::to_string(cycle));
    }
    const bool res_fire = model.res_valid() && res_ready;
    if (res_fire) {
      if (res.done(jobs)) throw ProtocolError("result row with no activation row behind it");
      const bool expect_last = res.row + 1 == jobs[res.job].m;
      if (model.res_last() != expect_last) {
        throw ProtocolError("res_last wrong on row " + std::to_string(res.row) + " of job " +
                            std::to_string(res.job));
      }
      const std::vector<fp32_t> row = model.res_data();
      auto& dest = out.results[res.job];
      dest.insert(dest.end(), row.begin(), row.end());
      out.stats.result_rows++;
      out.stats.cycles = cycle - first_weight_cycle.value_or(cycle) + 1;
    }
    if (wgt_fire && !first_weight_cycle) first_weight_cycle = cycle;

    model.clock();
    ++cycle;

    if (wgt_fire) wgt.advance(config.rows);
    if (act_fire) act.advance(jobs[act.job].m);
    if (seed_fire) seed.advance(jobs[seed.job].m);
    if (res_fire) res.advance(jobs[res.job].m);
  }
  out.stats.macs = out.stats.result_rows * config.rows * config.cols;
  return out;
}

}  // namespace tpu::harness
