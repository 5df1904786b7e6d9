// Generates the tables and constants of the activation function unit (N-ACT, docs/numerics.md, section Activation functions)
// in two forms: a SystemVerilog package for the RTL and a C++ header for the reference model.
// Both files are committed; the CTest test ref.act_tables_up_to_date regenerates them and fails
// if they differ. Regenerate after a change with
//   build/bin/gen_act_tables rtl/act/tpu_act_tables_pkg.sv sw/include/tpu/numerics/act_tables.hpp
//
// Every value is computed with MPFR at 256 bits and rounded once, to nearest, to an integer, so
// the output is the same on every host. Tables are node values of a function at evenly spaced
// points; the units interpolate linearly between neighbouring nodes, using the stored difference
// of the two (the "delta" tables) so that the hardware needs no subtractor.
#include <mpfr.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr mpfr_prec_t kPrecision = 256;

// Fixed-point formats (number of fraction bits) shared with the RTL and the reference model.
constexpr int kUnitFractionBits = 24;  // exp2 and reciprocal outputs: 1.24
constexpr int kArgFractionBits = 22;   // scaled arguments and the Mills term: 8.22
constexpr int kConstantFractionBits = 24;

// Table sizes. exp2 and reciprocal: 128 intervals on [0, 1]. Mills term: 256 intervals on
// [0, 16): step 1/32 on [0, 4), 1/16 on [4, 8), 1/8 on [8, 16) (64 per octave above 4, where
// the function's curvature falls like 1/t^2).
constexpr int kExp2IndexBits = 7;
constexpr int kRecipIndexBits = 7;
constexpr int kMillsIndexBits = 8;
// Reciprocal square root: 128 intervals on [1, 2) and 128 on [2, 4), so that an exponent's parity
// picks the half and the significand the node.
constexpr int kRsqrtIndexBits = 8;

class Mpfr {
 public:
  Mpfr() { mpfr_init2(value_, kPrecision); }
  ~Mpfr() { mpfr_clear(value_); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
  mpfr_ptr get() { return value_; }

 private:
  mpfr_t value_;
};

// round(value * 2^fraction_bits), ties to even.
std::int64_t to_fixed(mpfr_ptr value, int fraction_bits) {
  Mpfr scaled;
  mpfr_mul_2si(scaled.get(), value, fraction_bits, MPFR_RNDN);
  mpfr_rint(scaled.get(), scaled.get(), MPFR_RNDN);
  return mpfr_get_si(scaled.get(), MPFR_RNDN);
}

// log2(e)
void log2_e(mpfr_ptr out) {
  mpfr_set_ui(out, 1, MPFR_RNDN);
  mpfr_exp(out, out, MPFR_RNDN);
  mpfr_log2(out, out, MPFR_RNDN);
}

// 2^-t
void exp2_neg(mpfr_ptr out, mpfr_ptr t) {
  mpfr_neg(out, t, MPFR_RNDN);
  mpfr_exp2(out, out, MPFR_RNDN);
}

// 1 / (1 + t)
void reciprocal_one_plus(mpfr_ptr out, mpfr_ptr t) {
  mpfr_add_ui(out, t, 1, MPFR_RNDN);
  mpfr_ui_div(out, 1, out, MPFR_RNDN);
}

// The Mills term M(t) = -log2(Q(t)) - t^2 log2(e) / 2, where Q(t) = 1 - Phi(t) = erfc(t/sqrt 2)/2
// is the upper tail of the standard normal distribution. Equivalently M(t) = -log2(R(t) /
// sqrt(2 pi)) with R the Mills ratio, a smooth increasing function from M(0) = 1 to about 5.33
// at t = 16, so that Q(t) = 2^-(t^2 log2(e) / 2 + M(t)).
void mills_term(mpfr_ptr out, mpfr_ptr t) {
  Mpfr tail, square;
  mpfr_sqrt_ui(tail.get(), 2, MPFR_RNDN);
  mpfr_div(tail.get(), t, tail.get(), MPFR_RNDN);
  mpfr_erfc(tail.get(), tail.get(), MPFR_RNDN);
  mpfr_div_2ui(tail.get(), tail.get(), 1, MPFR_RNDN);
  mpfr_log2(out, tail.get(), MPFR_RNDN);
  mpfr_neg(out, out, MPFR_RNDN);
  log2_e(square.get());
  mpfr_mul(square.get(), square.get(), t, MPFR_RNDN);
  mpfr_mul(square.get(), square.get(), t, MPFR_RNDN);
  mpfr_div_2ui(square.get(), square.get(), 1, MPFR_RNDN);
  mpfr_sub(out, out, square.get(), MPFR_RNDN);
}

// Node k of the Mills table, as the exact fraction numerator / 2^shift.
void mills_node(mpfr_ptr out, int k) {
  long numerator, shift;
  if (k < 128) {  // [0, 4), step 1/32
    numerator = k;
    shift = 5;
  } else if (k < 192) {  // [4, 8), step 1/16
    numerator = 64 + (k - 128);
    shift = 4;
  } else {  // [8, 16], step 1/8
    numerator = 64 + (k - 192);
    shift = 3;
  }
  mpfr_set_si(out, numerator, MPFR_RNDN);
  mpfr_div_2si(out, out, shift, MPFR_RNDN);
}

// 1 / sqrt(t)
void reciprocal_sqrt(mpfr_ptr out, mpfr_ptr t) {
  mpfr_rec_sqrt(out, t, MPFR_RNDN);
}

// Node k of the reciprocal square root table: 1 + k/128 on [1, 2], then 2 + (k - 128)/64 on
// [2, 4], the same t = 2 at k = 128 from both sides.
void rsqrt_node(mpfr_ptr out, int k) {
  if (k <= 128) {
    mpfr_set_si(out, 128 + k, MPFR_RNDN);
    mpfr_div_2si(out, out, 7, MPFR_RNDN);
  } else {
    mpfr_set_si(out, 128 + (k - 128), MPFR_RNDN);
    mpfr_div_2si(out, out, 6, MPFR_RNDN);
  }
}

struct Table {
  std::string name;     // C++: k<Name>Base / k<Name>Delta, SV: <name>_base / <name>_delta
  std::string purpose;  // comment above the table, one or more lines
  int index_bits;
  int base_width;                   // bits of a base entry
  int delta_width;                  // bits of a delta entry
  std::vector<std::int64_t> nodes;  // 2^index_bits + 1 values

  std::int64_t base(int k) const { return nodes.at(k); }
  // Always non-negative: the exp2, reciprocal and reciprocal square root nodes decrease, the
  // Mills nodes increase.
  std::int64_t delta(int k) const {
    const std::int64_t d = nodes.at(k + 1) - nodes.at(k);
    return d < 0 ? -d : d;
  }
  int entries() const { return 1 << index_bits; }
};

Table make_table(std::string name, std::string purpose, int index_bits, int base_width,
                 int delta_width, int fraction_bits,
                 const std::function<void(mpfr_ptr, int)>& node_position,
                 const std::function<void(mpfr_ptr, mpfr_ptr)>& function) {
  Table table{std::move(name), std::move(purpose), index_bits, base_width, delta_width, {}};
  for (int k = 0; k <= table.entries(); ++k) {
    Mpfr t, value;
    node_position(t.get(), k);
    function(value.get(), t.get());
    table.nodes.push_back(to_fixed(value.get(), fraction_bits));
  }
  // The nodes must be monotonic (one sign of delta) and fit the declared widths.
  const bool increasing = table.nodes.back() > table.nodes.front();
  for (int k = 0; k < table.entries(); ++k) {
    const std::int64_t step = table.nodes[k + 1] - table.nodes[k];
    if ((increasing && step < 0) || (!increasing && step > 0))
      throw std::logic_error(table.name + ": nodes are not monotonic");
    if (table.base(k) < 0 || table.base(k) >> table.base_width != 0 ||
        table.delta(k) >> table.delta_width != 0)
      throw std::logic_error(table.name + ": an entry does not fit its width");
  }
  return table;
}

// Node k of a table with 2^index_bits intervals on [0, 1].
std::function<void(mpfr_ptr, int)> unit_interval_node(int index_bits) {
  return [index_bits](mpfr_ptr out, int k) {
    mpfr_set_si(out, k, MPFR_RNDN);
    mpfr_div_2si(out, out, index_bits, MPFR_RNDN);
  };
}

struct Constant {
  std::string name;  // C++ k<Name>, SV <Name>
  std::string purpose;
  std::int64_t value;
};

constexpr int kConstantWidth = 26;

std::vector<Constant> make_constants() {
  Mpfr l2e, value;
  log2_e(l2e.get());
  std::vector<Constant> constants;
  constants.push_back({"Log2E", "log2(e): sigmoid's exponent a * log2(e)",
                       to_fixed(l2e.get(), kConstantFractionBits)});
  mpfr_mul_2ui(value.get(), l2e.get(), 1, MPFR_RNDN);
  constants.push_back({"TwoLog2E", "2 log2(e): tanh's exponent 2a * log2(e)",
                       to_fixed(value.get(), kConstantFractionBits)});
  mpfr_sqrt_ui(value.get(), 3, MPFR_RNDN);
  mpfr_ui_div(value.get(), 1, value.get(), MPFR_RNDN);
  constants.push_back({"InvSqrt3", "1/sqrt(3): squared, a^2/3 of tanh's series",
                       to_fixed(value.get(), kConstantFractionBits)});
  mpfr_div_2ui(value.get(), l2e.get(), 1, MPFR_RNDN);
  mpfr_sqrt(value.get(), value.get(), MPFR_RNDN);
  constants.push_back({"GeluScale", "sqrt(log2(e)/2): squared, gelu's exponent a^2 log2(e)/2",
                       to_fixed(value.get(), kConstantFractionBits)});
  for (const auto& c : constants)
    if (c.value >> kConstantWidth != 0) throw std::logic_error(c.name + " does not fit");
  return constants;
}

const char* const kBanner =
    "Generated by sw/numerics/gen_act_tables.cpp; do not edit. Regenerate with\n"
    "  build/bin/gen_act_tables rtl/act/tpu_act_tables_pkg.sv sw/include/tpu/numerics/act_tables.hpp\n"
    "Tables and constants of the activation function unit (docs/numerics.md, section Activation functions).";

// Each line of text as a // comment, indented.
std::string comment_lines(const std::string& text, const std::string& indent = "") {
  std::istringstream in(text);
  std::ostringstream out;
  for (std::string line; std::getline(in, line);) out << indent << "// " << line << "\n";
  return out.str();
}

void write_sv_function(std::ostream& out, const Table& t, const char* kind, int width,
                       std::int64_t (Table::*entry)(int) const) {
  out << "  function automatic logic [" << width - 1 << ":0] " << t.name << "_" << kind
      << "(input logic [" << t.index_bits - 1 << ":0] index);\n"
      << "    unique case (index)\n";
  for (int k = 0; k < t.entries(); ++k)
    out << "      " << t.index_bits << "'d" << k << ": " << t.name << "_" << kind << " = " << width
        << "'d" << (t.*entry)(k) << ";\n";
  // Every index is listed above; the default only keeps the case complete for lint.
  out << "      default: " << t.name << "_" << kind << " = '0;\n"
      << "    endcase\n"
      << "  endfunction\n\n";
}

std::string sv_package(const std::vector<Table>& tables, const std::vector<Constant>& constants) {
  std::ostringstream out;
  out << comment_lines(kBanner) << "package tpu_act_tables_pkg;\n\n";
  for (const auto& c : constants)
    out << "  // " << c.purpose << ", " << kConstantFractionBits << " fraction bits.\n"
        << "  localparam logic [" << kConstantWidth - 1 << ":0] " << c.name << " = "
        << kConstantWidth << "'d" << c.value << ";\n";
  out << "\n";
  for (const auto& t : tables) {
    out << comment_lines(t.purpose, "  ");
    write_sv_function(out, t, "base", t.base_width, &Table::base);
    write_sv_function(out, t, "delta", t.delta_width, &Table::delta);
  }
  out << "endpackage\n";
  return out.str();
}

std::string camel(const std::string& snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

void write_cpp_array(std::ostream& out, const Table& t, const char* kind,
                     std::int64_t (Table::*entry)(int) const) {
  out << "inline constexpr std::uint32_t k" << camel(t.name) << kind << "[" << t.entries()
      << "] = {";
  for (int k = 0; k < t.entries(); ++k) {
    if (k % 8 == 0) out << "\n   ";
    out << " " << (t.*entry)(k) << ",";
  }
  out << "\n};\n";
}

std::string cpp_header(const std::vector<Table>& tables, const std::vector<Constant>& constants) {
  std::ostringstream out;
  out << comment_lines(kBanner) << "#pragma once\n\n#include <cstdint>\n\n"
      << "namespace tpu::num::act_tables {\n\n";
  for (const auto& c : constants)
    out << "// " << c.purpose << ", " << kConstantFractionBits << " fraction bits.\n"
        << "inline constexpr std::uint64_t k" << c.name << " = " << c.value << ";\n";
  out << "\n";
  for (const auto& t : tables) {
    out << comment_lines(t.purpose) << "inline constexpr int k" << camel(t.name)
        << "IndexBits = " << t.index_bits << ";\n";
    write_cpp_array(out, t, "Base", &Table::base);
    write_cpp_array(out, t, "Delta", &Table::delta);
    out << "\n";
  }
  out << "}  // namespace tpu::num::act_tables\n";
  return out.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: gen_act_tables <package.sv> <header.hpp>\n";
    return 2;
  }
  try {
    std::vector<Table> tables;
    tables.push_back(make_table(
        "exp2", "2^-f for f in [0, 1): node k = round(2^(24 - k/128)), 1.24 fixed point.",
        kExp2IndexBits, 25, 17, kUnitFractionBits, unit_interval_node(kExp2IndexBits), exp2_neg));
    tables.push_back(make_table(
        "recip",
        "1/(1 + v) for v in [0, 1): node k = round(2^24 * 128/(128 + k)), 1.24 fixed point.",
        kRecipIndexBits, 25, 17, kUnitFractionBits, unit_interval_node(kRecipIndexBits),
        reciprocal_one_plus));
    tables.push_back(make_table(
        "mills",
        "Mills term M(t) = -log2(1 - Phi(t)) - t^2 log2(e)/2 for t in [0, 16), 3.22 fixed point;\n"
        "nodes every 1/32 on [0, 4), 1/16 on [4, 8), 1/8 on [8, 16].",
        kMillsIndexBits, 25, 18, kArgFractionBits, mills_node, mills_term));
    tables.push_back(make_table(
        "rsqrt",
        "1/sqrt(t) for t in [1, 4), 1.24 fixed point: node k = round(2^24/sqrt(1 + k/128)) for\n"
        "k <= 128 (t in [1, 2]) and round(2^24/sqrt(2 + (k - 128)/64)) above (t in [2, 4]).",
        kRsqrtIndexBits, 25, 17, kUnitFractionBits, rsqrt_node, reciprocal_sqrt));
    const auto constants = make_constants();
    write_file(argv[1], sv_package(tables, constants));
    write_file(argv[2], cpp_header(tables, constants));
  } catch (const std::exception& e) {
    std::cerr << "gen_act_tables: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
