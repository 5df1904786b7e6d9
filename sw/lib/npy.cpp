#include "tpu/npy.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tpu::npy {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::string_view kFloat32 = "<f4";
constexpr std::string_view kInt8 = "|i1";
constexpr std::string_view kInt32 = "<i4";
constexpr std::string_view kInt64 = "<i8";
// NumPy's own limit on dimensions.
constexpr std::size_t kMaxDims = 32;
constexpr std::size_t kHeaderAlignment = 64;  // numpy pads the header so the data is aligned

// Header text as a message shows it: printable ASCII as it is, any other byte as \xNN, so that a
// broken file cannot put control characters or invalid UTF-8 on the terminal.
std::string printable(std::string_view text) {
  std::string shown;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
      shown += c;
    } else {
      shown += fmt::format("\\x{:02x}", byte);
    }
  }
  return shown;
}

// A Python literal of the header, as the parser saw it. `text` is its source, for messages.
struct Value {
  enum class Kind { String, Integer, Bool, None, Tuple, List, Dict } kind = Kind::None;
  std::string_view text;
  std::string string;                            // String
  std::uint64_t integer = 0;                     // Integer
  bool boolean = false;                          // Bool
  std::vector<Value> items;                      // Tuple, List
  std::vector<std::pair<Value, Value>> entries;  // Dict
};

// Recursive descent over the literals numpy's header may hold: strings, non-negative integers,
// True, False, None, tuples, lists and dicts. Throws std::runtime_error("malformed header ...").
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Value parse_all() {
    Value value = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the dictionary");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("malformed header: {} at offset {}", what, pos_));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Value parse_value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const std::size_t start = pos_;
    Value value;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') {
      value.kind = Value::Kind::String;
      value.string = parse_string();
    } else if (c >= '0' && c <= '9') {
      value.kind = Value::Kind::Integer;
      value.integer = parse_integer();
    } else if (c == '(' || c == '[') {
      value.kind = c == '(' ? Value::Kind::Tuple : Value::Kind::List;
      ++pos_;
      value.items = parse_sequence(c == '(' ? ')' : ']');
    } else if (c == '{') {
      value.kind = Value::Kind::Dict;
      ++pos_;
      value.entries = parse_entries();
    } else if (take_word("True") || take_word("False")) {
      value.kind = Value::Kind::Bool;
      value.boolean = text_[start] == 'T';
    } else if (take_word("None")) {
      value.kind = Value::Kind::None;
    } else {
      fail(fmt::format("unexpected character '{}'", printable(std::string_view(&c, 1))));
    }
    value.text = text_.substr(start, pos_ - start);
    return value;
  }

  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::string parse_string() {
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escape sequences are not supported");
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  std::uint64_t parse_integer() {
    std::uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const unsigned digit = static_cast<unsigned>(text_[pos_] - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
        fail("integer too large");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    return value;
  }

  // Items up to `close`, a trailing comma allowed.
  std::vector<Value> parse_sequence(char close) {
    std::vector<Value> items;
    while (!take(close)) {
      items.push_back(parse_value());
      if (!take(',')) {
        if (!take(close)) fail(fmt::format("expected ',' or '{}'", close));
        break;
      }
    }
    return items;
  }

  std::vector<std::pair<Value, Value>> parse_entries() {
    std::vector<std::pair<Value, Value>> entries;
    while (!take('}')) {
      Value key = parse_value();
      if (!take(':')) fail("expected ':'");
      Value value = parse_value();
      entries.emplace_back(std::move(key), std::move(value));
      if (!take(',')) {
        if (!take('}')) fail("expected ',' or '}'");
        break;
      }
    }
    return entries;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// "'<f8' (float64)": a dtype string with the type numpy means by it, where it is a simple one.
std::string describe_dtype(const std::string& descr) {
  if (descr.size() < 3) return fmt::format("'{}'", descr);
  const char order = descr[0];
  const char kind = descr[1];
  const std::string_view size = std::string_view(descr).substr(2);
  std::string name;
  switch (kind) {
    case 'f':
      name = "float";
      break;
    case 'i':
      name = "int";
      break;
    case 'u':
      name = "uint";
      break;
    case 'c':
      name = "complex";
      break;
    case 'b':
      name = "bool";
      break;
    default:
      return fmt::format("'{}'", descr);
  }
  if (kind != 'b') {
    unsigned bytes = 0;
    for (char c : size) {
      if (c < '0' || c > '9') return fmt::format("'{}'", descr);
      bytes = bytes * 10 + static_cast<unsigned>(c - '0');
    }
    name += std::to_string(bytes * 8);
  }
  if (order == '>') name = "big-endian " + name;
  return fmt::format("'{}' ({})", descr, name);
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    text += (d ? ", " : "") + std::to_string(shape[d]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Why read() would refuse the shape; empty when it accepts it.
std::string shape_problem(const std::vector<std::size_t>& shape, Dims dims) {
  if (dims == Dims::OneOrTwo && shape.size() != 1 && shape.size() != 2) {
    return fmt::format("{} dimensions; only 1 or 2 are supported", shape.size());
  }
  if (shape.size() > kMaxDims) {
    return fmt::format("{} dimensions; at most {} are supported", shape.size(), kMaxDims);
  }
  std::size_t count = 1;
  const std::size_t max_elements = std::numeric_limits<std::size_t>::max() / sizeof(float);
  for (std::size_t extent : shape) {
    if (extent == 0) return fmt::format("shape {} is empty", shape_text(shape));
    if (extent > max_elements / count) return fmt::format("shape {} is too large", shape_text(shape));
    count *= extent;
  }
  return {};
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (std::size_t extent : shape) count *= extent;
  return count;
}

std::uint64_t load_le(const char* p, unsigned bytes) {
  std::uint64_t value = 0;
  for (unsigned b = 0; b < bytes; ++b) {
    value |= std::uint64_t{static_cast<unsigned char>(p[b])} << (8 * b);
  }
  return value;
}

// The parsed header of a file's contents; throws std::runtime_error without the path.
struct Header {
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;
};

// The dtype string a file of `dtype` has (what write() writes), and its bytes a value.
std::string_view descr_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32:
      return kFloat32;
    case Dtype::Int8:
      return kInt8;
    case Dtype::Int32:
      return kInt32;
    case Dtype::Int64:
      break;
  }
  return kInt64;
}
std::size_t bytes_of(Dtype dtype) {
  return dtype == Dtype::Int8 ? 1 : dtype == Dtype::Int64 ? 8 : 4;
}
// Whether a file's dtype string means `dtype`: a one-byte type has no byte order, so '<i1' and
// '>i1' mean int8 as much as NumPy's own '|i1'.
bool descr_means(const std::string& descr, Dtype dtype) {
  if (dtype == Dtype::Int8) return descr == "|i1" || descr == "<i1" || descr == ">i1";
  return descr == descr_of(dtype);
}

Header parse_header(const std::string& file, Dims dims, Dtype dtype) {
  const auto fail = [](const std::string& what) { throw std::runtime_error(what); };
  if (file.compare(0, kMagic.size(), kMagic) != 0) fail("not a .npy file (bad magic)");
  constexpr std::size_t kVersionOffset = 6;
  if (file.size() < kVersionOffset + 2) fail("truncated header");
  const unsigned major = static_cast<unsigned char>(file[kVersionOffset]);
  const unsigned minor = static_cast<unsigned char>(file[kVersionOffset + 1]);
  if (major < 1 || major > 3 || minor != 0) {
    fail(fmt::format("unsupported .npy version {}.{} (1.0, 2.0 and 3.0 are)", major, minor));
  }
  const unsigned length_bytes = major == 1 ? 2 : 4;
  const std::size_t text_offset = kVersionOffset + 2 + length_bytes;
  if (file.size() < text_offset) fail("truncated header");
  const std::uint64_t text_length = load_le(&file[kVersionOffset + 2], length_bytes);
  if (file.size() - text_offset < text_length) fail("truncated header");
  const std::string_view text(&file[text_offset], static_cast<std::size_t>(text_length));

  const Value dict = HeaderParser(text).parse_all();
  if (dict.kind != Value::Kind::Dict) fail("malformed header: not a dictionary");
  const Value* descr = nullptr;
  const Value* fortran_order = nullptr;
  const Value* shape = nullptr;
  for (const auto& [key, value] : dict.entries) {
    const Value** slot = nullptr;
    if (key.kind == Value::Kind::String) {
      if (key.string == "descr") slot = &descr;
      if (key.string == "fortran_order") slot = &fortran_order;
      if (key.string == "shape") slot = &shape;
    }
    if (slot == nullptr)
      fail(fmt::format("malformed header: unexpected key {}", printable(key.text)));
    if (*slot != nullptr)
      fail(fmt::format("malformed header: key {} appears twice", printable(key.text)));
    *slot = &value;
  }
  if (descr == nullptr) fail("malformed header: no 'descr'");
  if (fortran_order == nullptr) fail("malformed header: no 'fortran_order'");
  if (shape == nullptr) fail("malformed header: no 'shape'");

  const std::string wanted = describe_dtype(std::string(descr_of(dtype)));
  if (descr->kind != Value::Kind::String) {
    fail(fmt::format("dtype {} is not supported; only {} is", printable(descr->text), wanted));
  }
  if (!descr_means(descr->string, dtype)) {
    fail(fmt::format("dtype {} is not supported; only {} is", describe_dtype(descr->string),
                     wanted));
  }
  if (fortran_order->kind != Value::Kind::Bool) {
    fail(fmt::format("malformed header: fortran_order is {}, not True or False",
                     printable(fortran_order->text)));
  }
  if (fortran_order->boolean) fail("fortran_order True (column-major) is not supported");
  if (shape->kind != Value::Kind::Tuple) {
    fail(fmt::format("malformed header: shape {} is not a tuple", printable(shape->text)));
  }
  Header header;
  for (const Value& extent : shape->items) {
    if (extent.kind != Value::Kind::Integer) {
      fail(fmt::format("malformed header: shape {} holds a non-integer", printable(shape->text)));
    }
    if (extent.integer > std::numeric_limits<std::size_t>::max()) {
      fail(fmt::format("shape {} is too large", printable(shape->text)));
    }
    header.shape.push_back(static_cast<std::size_t>(extent.integer));
  }
  const std::string problem = shape_problem(header.shape, dims);
  if (!problem.empty()) fail(problem);
  header.data_offset = text_offset + static_cast<std::size_t>(text_length);
  return header;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  // libstdc++ throws from inside the iterators when read() fails (a directory opens, but
  // reading it fails with EISDIR): report it like any other read error, with the path.
  try {
    std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.bad()) return contents;
  } catch (const std::ios_base::failure&) {
  }
  throw std::runtime_error(fmt::format("{}: read error: {}", path, std::strerror(errno)));
}

// A file being written next to its final path; removed unless commit() renames it into place.
class TempFile {
 public:
  explicit TempFile(const std::string& final_path) : final_path_(final_path) {
    std::random_device random;
    constexpr int kAttempts = 16;
    for (int attempt = 0; attempt < kAttempts && fd_ < 0; ++attempt) {
      path_ = fmt::format("{}.tmp{:08x}", final_path, random());
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) fail("cannot create a temporary file");
    }
    if (fd_ < 0) fail("cannot create a temporary file");
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  void write(const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t written = ::write(fd_, data, size);
      if (written < 0) {
        if (errno == EINTR) continue;
        fail("write failed");
      }
      data += written;
      size -= static_cast<std::size_t>(written);
    }
  }

  void commit() {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("write failed");
    if (std::rename(path_.c_str(), final_path_.c_str()) != 0) fail("cannot replace the file");
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(fmt::format("{}: {}: {}", final_path_, what, std::strerror(errno)));
  }

  std::string final_path_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

namespace {

// The shape and the raw little-endian data of a file of `dtype`.
std::pair<std::vector<std::size_t>, std::string> read_values(const std::string& path, Dims dims,
                                                             Dtype dtype) {
  std::string file = read_file(path);
  Header header;
  try {
    header = parse_header(file, dims, dtype);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(fmt::format("{}: {}", path, error.what()));
  }
  const std::size_t expected = element_count(header.shape) * bytes_of(dtype);
  const std::size_t present = file.size() - header.data_offset;
  if (present < expected) {
    throw std::runtime_error(fmt::format("{}: truncated data: shape {} needs {} bytes, found {}",
                                         path, shape_text(header.shape), expected, present));
  }
  if (present > expected) {
    throw std::runtime_error(
        fmt::format("{}: data size mismatch: shape {} needs {} bytes, the file holds {}", path,
                    shape_text(header.shape), expected, present));
  }
  return {header.shape, file.substr(header.data_offset)};
}

// Writes `data`, the little-endian values of `shape`, with a version 1.0 header.
void write_values(const std::string& path, const std::vector<std::size_t>& shape,
                  std::size_t values, Dims dims, Dtype dtype, const std::string& data) {
  const std::string problem = shape_problem(shape, dims);
  if (!problem.empty()) throw std::invalid_argument(fmt::format("{}: {}", path, problem));
  if (element_count(shape) != values) {
    throw std::invalid_argument(fmt::format("{}: shape {} holds {} values, the data {}", path,
                                            shape_text(shape), element_count(shape), values));
  }
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(dtype), shape_text(shape));
  constexpr std::size_t kPrefixBytes = 10;  // magic, version, 2-byte header length
  const std::size_t unpadded = kPrefixBytes + header.size() + 1;  // + the closing newline
  header.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  header += '\n';

  std::string contents(kMagic);
  contents += '\x01';
  contents += '\x00';
  contents += static_cast<char>(header.size() & 0xFF);
  contents += static_cast<char>(header.size() >> 8);
  contents += header;
  contents += data;
  TempFile file(path);
  file.write(contents.data(), contents.size());
  file.commit();
}

}  // namespace

namespace {

// The unsigned integer of a value type's width.
template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

// An array of `dtype` whose values are T's bits, little-endian in the file (float32, int64).
template <typename Result>
Result read_words(const std::string& path, Dims dims, Dtype dtype) {
  using T = typename decltype(Result::data)::value_type;
  const auto [shape, data] = read_values(path, dims, dtype);
  Result array;
  array.shape = shape;
  array.data.resize(element_count(shape));
  for (std::size_t e = 0; e < array.data.size(); ++e) {
    const auto bits = static_cast<BitsOf<T>>(load_le(data.data() + sizeof(T) * e, sizeof(T)));
    std::memcpy(&array.data[e], &bits, sizeof bits);
  }
  return array;
}

template <typename Array>
void write_words(const std::string& path, const Array& array, Dims dims, Dtype dtype) {
  using T = typename decltype(Array::data)::value_type;
  std::string data;
  data.reserve(array.data.size() * sizeof(T));
  for (const T value : array.data) {
    BitsOf<T> bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (unsigned b = 0; b < sizeof(T); ++b) data += static_cast<char>(bits >> (8 * b));
  }
  write_values(path, array.shape, array.data.size(), dims, dtype, data);
}

}  // namespace

Array read(const std::string& path, Dims dims) {
  return read_words<Array>(path, dims, Dtype::Float32);
}

void write(const std::string& path, const Array& array, Dims dims) {
  write_words(path, array, dims, Dtype::Float32);
}

IntArray read_int(const std::string& path, Dtype dtype, Dims dims) {
  if (dtype != Dtype::Int8 && dtype != Dtype::Int32) {
    throw std::invalid_argument("read_int reads int8 or int32 files");
  }
  const auto [shape, data] = read_values(path, dims, dtype);
  IntArray array;
  array.shape = shape;
  array.dtype = dtype;
  array.data.resize(element_count(shape));
  const unsigned bytes = static_cast<unsigned>(bytes_of(dtype));
  for (std::size_t e = 0; e < array.data.size(); ++e) {
    const auto bits = static_cast<std::uint32_t>(load_le(data.data() + bytes * e, bytes));
    // Sign-extend from the value's width, on the bits, then read them as two's complement.
    const std::uint32_t sign = std::uint32_t{1} << (8 * bytes - 1);
    const std::uint32_t extended = (bits ^ sign) - sign;
    array.data[e] = extended < 0x80000000u
                        ? static_cast<std::int32_t>(extended)
                        : static_cast<std::int32_t>(extended - 0x80000000u) - 0x7FFFFFFF - 1;
  }
  return array;
}

void write_int(const std::string& path, const IntArray& array, Dims dims) {
  if (array.dtype != Dtype::Int8 && array.dtype != Dtype::Int32) {
    throw std::invalid_argument("write_int writes int8 or int32");
  }
  const unsigned bytes = static_cast<unsigned>(bytes_of(array.dtype));
  std::string data;
  data.reserve(array.data.size() * bytes);
  for (std::int32_t value : array.data) {
    if (array.dtype == Dtype::Int8 && (value < -128 || value > 127)) {
      throw std::invalid_argument(fmt::format("{}: {} is not an int8", path, value));
    }
    const auto bits = static_cast<std::uint32_t>(value);
    for (unsigned b = 0; b < bytes; ++b) data += static_cast<char>(bits >> (8 * b));
  }
  write_values(path, array.shape, array.data.size(), dims, array.dtype, data);
}

Int64Array read_int64(const std::string& path, Dims dims) {
  return read_words<Int64Array>(path, dims, Dtype::Int64);
}

void write_int64(const std::string& path, const Int64Array& array, Dims dims) {
  write_words(path, array, dims, Dtype::Int64);
}

}  // namespace tpu::npy
