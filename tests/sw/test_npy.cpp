// .npy files: round trips, the exact bytes written, headers in the forms numpy writes (versions
// 1.0, 2.0, 3.0), every rejection with its message, and no partial file after a failed write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/npy.hpp"

namespace tpu::npy {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

float float_of(std::uint32_t bits) {
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// A .npy file: magic, version, header length (2 bytes for 1.x, 4 otherwise), header, data.
std::string npy_bytes(unsigned major, unsigned minor, const std::string& header,
                      const std::string& data) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const unsigned length_bytes = major == 1 ? 2 : 4;
  for (unsigned b = 0; b < length_bytes; ++b) out += static_cast<char>(header.size() >> (8 * b));
  return out + header + data;
}

// n float32 values 1, 2, 3, ... little-endian.
std::string float_data(std::size_t n) {
  std::string data;
  for (std::size_t i = 0; i < n; ++i) {
    const float value = static_cast<float>(i + 1);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (unsigned b = 0; b < 4; ++b) data += static_cast<char>(bits >> (8 * b));
  }
  return data;
}

std::string header_with(const std::string& descr, const std::string& fortran,
                        const std::string& shape) {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("tpu_npy_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string put(const std::string& name, const std::string& contents) const {
    std::ofstream out(path(name), std::ios::binary);
    out << contents;
    return path(name);
  }

  std::string contents(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // read() of `contents` fails with exactly "<path>: <message>".
  void expect_rejected(const std::string& file_contents, const std::string& message) {
    const std::string file = put("bad.npy", file_contents);
    try {
      read(file);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(e.what(), file + ": " + message);
    }
  }

  fs::path dir_;
};

TEST_F(NpyTest, RoundTripTwoDimensions) {
  Array array;
  array.shape = {3, 2};
  array.data = {1.5f,   -0.0f, float_of(0x7FC01234), float_of(0xFF800000), float_of(0x00000001),
                3.0e38f};
  write(path("m.npy"), array);
  const Array back = read(path("m.npy"));
  EXPECT_EQ(back.shape, array.shape);
  EXPECT_EQ(bits_of(back.data), bits_of(array.data));  // NaN payload and -0 included
  EXPECT_EQ(back.rows(), 3u);
  EXPECT_EQ(back.cols(), 2u);
}

TEST_F(NpyTest, RoundTripOneDimension) {
  Array array;
  array.shape = {5};
  array.data = {1, 2, 3, 4, 5};
  write(path("v.npy"), array);
  const Array back = read(path("v.npy"));
  EXPECT_EQ(back.shape, std::vector<std::size_t>{5});
  EXPECT_EQ(back.data, array.data);
  EXPECT_EQ(back.cols(), 1u);
}

TEST_F(NpyTest, IntegerFilesRoundTripAndReadNumpysSpellings) {
  IntArray i8;
  i8.shape = {2, 3};
  i8.dtype = Dtype::Int8;
  i8.data = {-128, -1, 0, 1, 127, 5};
  write_int(path("a.npy"), i8);
  EXPECT_NE(contents("a.npy").find("'descr': '|i1'"), std::string::npos);
  EXPECT_EQ(contents("a.npy").size() % 64, 6u);  // a 64-byte header, then one byte a value
  const IntArray back = read_int(path("a.npy"), Dtype::Int8);
  EXPECT_EQ(back.shape, i8.shape);
  EXPECT_EQ(back.data, i8.data);
  IntArray i32;
  i32.shape = {4};
  i32.dtype = Dtype::Int32;
  i32.data = {INT32_MIN, -1, 0, INT32_MAX};
  write_int(path("c.npy"), i32);
  EXPECT_EQ(read_int(path("c.npy"), Dtype::Int32).data, i32.data);
  // '<i1' is int8 too; the data of a '<i4' file are little-endian.
  const std::string file = put(
      "le.npy", npy_bytes(1, 0, header_with("'<i1'", "False", "(2,)"), std::string("\xff\x80", 2)));
  EXPECT_EQ(read_int(file, Dtype::Int8).data, (std::vector<std::int32_t>{-1, -128}));
  // Another dtype than the one asked for: one line naming both.
  try {
    read_int(path("c.npy"), Dtype::Int8);
    ADD_FAILURE() << "an int32 file read as int8";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              path("c.npy") + ": dtype '<i4' (int32) is not supported; only '|i1' (int8) is");
  }
  EXPECT_THROW(read(path("c.npy")), std::runtime_error);
  i8.data[0] = 128;
  EXPECT_THROW(write_int(path("bad.npy"), i8), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path("bad.npy")));
}

TEST_F(NpyTest, Int64FilesRoundTripLittleEndian) {
  Int64Array ids;
  ids.shape = {2, 2};
  ids.data = {INT64_MIN, -1, 0x0102030405060708, INT64_MAX};
  write_int64(path("ids.npy"), ids, Dims::Any);
  EXPECT_NE(contents("ids.npy").find("'descr': '<i8'"), std::string::npos);
  EXPECT_EQ(read_int64(path("ids.npy"), Dims::Any).data, ids.data);
  // The bytes of 0x0102030405060708 lowest first, as NumPy writes '<i8'.
  const std::string file =
      put("le8.npy", npy_bytes(1, 0, header_with("'<i8'", "False", "(1,)"),
                               std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8)));
  EXPECT_EQ(read_int64(file).data, (std::vector<std::int64_t>{0x0102030405060708}));
  // A float32 file where int64 is wanted, and the other way round: one line naming both.
  Array floats;
  floats.shape = {2};
  floats.data = {1, 2};
  write(path("f.npy"), floats);
  try {
    read_int64(path("f.npy"));
    ADD_FAILURE() << "a float32 file read as int64";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              path("f.npy") + ": dtype '<f4' (float32) is not supported; only '<i8' (int64) is");
  }
  EXPECT_THROW(read(path("ids.npy"), Dims::Any), std::runtime_error);
}

TEST_F(NpyTest, WritesWhatNumpyWrites) {
  Array array;
  array.shape = {2, 3};
  array.data = {1, 2, 3, 4, 5, 6};
  write(path("m.npy"), array);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  EXPECT_EQ(contents("m.npy"), npy_bytes(1, 0, header, float_data(6)));

  array.shape = {6};
  write(path("v.npy"), array);
  EXPECT_NE(contents("v.npy").find("'shape': (6,), }"), std::string::npos);
}

TEST_F(NpyTest, ReadsEveryVersionAndHeaderSpelling) {
  const std::string plain = header_with("'<f4'", "False", "(2, 3)");
  for (unsigned major : {1u, 2u, 3u}) {
    const Array array = read(put("v.npy", npy_bytes(major, 0, plain, float_data(6))));
    EXPECT_EQ(array.shape, (std::vector<std::size_t>{2, 3})) << major;
    EXPECT_EQ(array.data, (std::vector<float>{1, 2, 3, 4, 5, 6})) << major;
  }
  // Other key order, double quotes, no trailing comma, no padding, 1-D tuple.
  const Array array = read(
      put("w.npy", npy_bytes(1, 0, "{\"shape\":(4,),\"fortran_order\":False,\"descr\":\"<f4\"}",
                             float_data(4))));
  EXPECT_EQ(array.shape, std::vector<std::size_t>{4});
  EXPECT_EQ(array.data, (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(NpyTest, RejectsMissingFile) {
  try {
    read(path("absent.npy"));
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(e.what(), path("absent.npy") + ": cannot open: No such file or directory");
  }
}

TEST_F(NpyTest, RejectsBadMagic) {
  expect_rejected("PK\x03\x04 a zip file", "not a .npy file (bad magic)");
  expect_rejected("", "not a .npy file (bad magic)");
  expect_rejected("\x93NUMP", "not a .npy file (bad magic)");
}

TEST_F(NpyTest, RejectsUnsupportedVersion) {
  const std::string header = header_with("'<f4'", "False", "(1,)");
  expect_rejected(npy_bytes(4, 0, header, float_data(1)),
                  "unsupported .npy version 4.0 (1.0, 2.0 and 3.0 are)");
  expect_rejected(npy_bytes(1, 1, header, float_data(1)),
                  "unsupported .npy version 1.1 (1.0, 2.0 and 3.0 are)");
  expect_rejected(npy_bytes(0, 0, header, float_data(1)),
                  "unsupported .npy version 0.0 (1.0, 2.0 and 3.0 are)");
}

TEST_F(NpyTest, RejectsTruncatedHeader) {
  expect_rejected("\x93NUMPY", "truncated header");
  expect_rejected(std::string("\x93NUMPY\x01\x00", 8), "truncated header");
  expect_rejected(std::string("\x93NUMPY\x02\x00\x10\x00", 10), "truncated header");
  const std::string full = npy_bytes(1, 0, header_with("'<f4'", "False", "(1,)"), "");
  expect_rejected(full.substr(0, full.size() - 5), "truncated header");
}

TEST_F(NpyTest, RejectsMalformedHeaders) {
  const auto header_error = [&](const std::string& header, const std::string& message) {
    expect_rejected(npy_bytes(1, 0, header, float_data(1)), "malformed header: " + message);
  };
  header_error("[1, 2]\n", "not a dictionary");
  header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,}\n",
               "unexpected character '}' at offset 53");
  header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } trailing",
               "unexpected text after the dictionary at offset 58");
  header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ",
               "unexpected end at offset 56");
  header_error("{'descr': '<f4\n", "unterminated string at offset 15");
  header_error("{'descr': '<f4', 'fortran_order': False}\n", "no 'shape'");
  header_error("{'descr': '<f4', 'shape': (1,)}\n", "no 'fortran_order'");
  header_error("{'fortran_order': False, 'shape': (1,)}\n", "no 'descr'");
  header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}\n",
               "unexpected key 'extra'");
  header_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n",
               "key 'descr' appears twice");
  header_error(header_with("'<f4'", "0", "(1,)"), "fortran_order is 0, not True or False");
  header_error(header_with("'<f4'", "False", "[1]"), "shape [1] is not a tuple");
  header_error(header_with("'<f4'", "False", "(1, 'a')"), "shape (1, 'a') holds a non-integer");
  header_error("{'descr': @}\n", "unexpected character '@' at offset 10");
  // Bytes that are not printable ASCII reach the message escaped, never raw.
  header_error("{'descr': \xb7}\n", "unexpected character '\\xb7' at offset 10");
  header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'a\x1b[2J': 1}\n",
               "unexpected key 'a\\x1b[2J'");
}

TEST_F(NpyTest, RejectsOtherDtypesByName) {
  const auto dtype_error = [&](const std::string& descr, const std::string& named) {
    expect_rejected(npy_bytes(1, 0, header_with(descr, "False", "(1,)"), float_data(2)),
                    "dtype " + named + " is not supported; only '<f4' (float32) is");
  };
  dtype_error("'<f8'", "'<f8' (float64)");
  dtype_error("'>f4'", "'>f4' (big-endian float32)");
  dtype_error("'<f2'", "'<f2' (float16)");
  dtype_error("'<i4'", "'<i4' (int32)");
  dtype_error("'|u1'", "'|u1' (uint8)");
  dtype_error("'|b1'", "'|b1' (bool)");
  dtype_error("'<U8'", "'<U8'");
  dtype_error("[('x', '<f4')]", "[('x', '<f4')]");
}

TEST_F(NpyTest, RejectsFortranOrder) {
  expect_rejected(npy_bytes(1, 0, header_with("'<f4'", "True", "(2, 2)"), float_data(4)),
                  "fortran_order True (column-major) is not supported");
}

TEST_F(NpyTest, RejectsOtherDimensionCounts) {
  expect_rejected(npy_bytes(1, 0, header_with("'<f4'", "False", "(1, 2, 2)"), float_data(4)),
                  "3 dimensions; only 1 or 2 are supported");
  expect_rejected(npy_bytes(1, 0, header_with("'<f4'", "False", "()"), float_data(1)),
                  "0 dimensions; only 1 or 2 are supported");
}

TEST_F(NpyTest, RejectsEmptyShape) {
  expect_rejected(npy_bytes(1, 0, header_with("'<f4'", "False", "(0, 3)"), ""),
                  "shape (0, 3) is empty");
  expect_rejected(npy_bytes(1, 0, header_with("'<f4'", "False", "(0,)"), ""),
                  "shape (0,) is empty");
}

TEST_F(NpyTest, RejectsWrongDataSize) {
  const std::string header = header_with("'<f4'", "False", "(2, 3)");
  expect_rejected(npy_bytes(1, 0, header, float_data(5)),
                  "truncated data: shape (2, 3) needs 24 bytes, found 20");
  expect_rejected(npy_bytes(1, 0, header, float_data(6) + "xy"),
                  "data size mismatch: shape (2, 3) needs 24 bytes, the file holds 26");
  expect_rejected(
      npy_bytes(1, 0, header_with("'<f4'", "False", "(4294967296, 4294967296)"), float_data(1)),
      "shape (4294967296, 4294967296) is too large");
}

TEST_F(NpyTest, WriteRefusesArraysReadWouldRefuse) {
  Array mismatch;
  mismatch.shape = {2, 2};
  mismatch.data = {1, 2, 3};
  try {
    write(path("x.npy"), mismatch);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), path("x.npy") + ": shape (2, 2) holds 4 values, the data 3");
  }
  Array cube;
  cube.shape = {1, 1, 1};
  cube.data = {1};
  EXPECT_THROW(write(path("x.npy"), cube), std::invalid_argument);
  Array empty;
  empty.shape = {0};
  EXPECT_THROW(write(path("x.npy"), empty), std::invalid_argument);
  EXPECT_THROW(write(path("x.npy"), Array{}), std::invalid_argument);
  EXPECT_TRUE(files().empty());
}

TEST_F(NpyTest, FailedWriteLeavesNoFile) {
  Array array;
  array.shape = {2};
  array.data = {1, 2};
  // The final rename fails: the path is a directory.
  fs::create_directory(path("taken"));
  EXPECT_THROW(write(path("taken"), array), std::runtime_error);
  EXPECT_EQ(files(), std::vector<std::string>{"taken"});
  EXPECT_TRUE(fs::is_empty(path("taken")));
  // The temporary file cannot be created: no such directory.
  try {
    write(path("missing/x.npy"), array);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(e.what(), path("missing/x.npy") +
                            ": cannot create a temporary file: No such file or directory");
  }
  EXPECT_EQ(files(), std::vector<std::string>{"taken"});
}

TEST_F(NpyTest, WriteReplacesAnExistingFileWhole) {
  Array big;
  big.shape = {100, 10};
  big.data.assign(1000, 7.0f);
  write(path("a.npy"), big);
  Array small;
  small.shape = {1};
  small.data = {3.0f};
  write(path("a.npy"), small);
  const Array back = read(path("a.npy"));
  EXPECT_EQ(back.shape, std::vector<std::size_t>{1});
  EXPECT_EQ(back.data, std::vector<float>{3.0f});
  EXPECT_EQ(files(), std::vector<std::string>{"a.npy"});
}

}  // namespace
}  // namespace tpu::npy
