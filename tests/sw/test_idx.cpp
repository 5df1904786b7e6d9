// IDX files: plain and gzip-compressed round trips, data set pairing, and every
// rejection (missing file, corrupt or truncated gzip, bad header, wrong element
// type, data shorter or longer than the header) with its message.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/idx.hpp"

namespace tpu::idx {
namespace {

namespace fs = std::filesystem;

// An IDX file's bytes: magic (0, 0, type, dimensions), big-endian sizes, data.
std::string idx_bytes(const std::vector<std::uint32_t>& shape, const std::string& data,
                      unsigned type = 0x08) {
  std::string out{'\0', '\0', static_cast<char>(type), static_cast<char>(shape.size())};
  for (std::uint32_t d : shape) {
    for (int b = 3; b >= 0; --b) out += static_cast<char>(d >> (8 * b));
  }
  return out + data;
}

std::string counting(std::size_t n, unsigned modulo = 256) {
  std::string data;
  for (std::size_t i = 0; i < n; ++i) data += static_cast<char>(i % modulo);
  return data;
}

class IdxFiles : public ::testing::Test {
 protected:
  fs::path dir_;

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tpu_idx_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string plain(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string gzipped(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr);
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    gzclose(file);
    return path;
  }
  std::string message_of(const std::string& path) {
    try {
      read(path);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    ADD_FAILURE() << path << " was accepted";
    return "";
  }
};

TEST_F(IdxFiles, PlainAndGzipReadTheSame) {
  const std::string data = counting(3 * 4 * 5);
  for (const std::string& path : {plain("a.idx", idx_bytes({3, 4, 5}, data)),
                                  gzipped("a.idx.gz", idx_bytes({3, 4, 5}, data))}) {
    const Array a = read(path);
    EXPECT_EQ(a.shape, (std::vector<std::uint32_t>{3, 4, 5}));
    EXPECT_EQ(std::string(a.data.begin(), a.data.end()), data);
  }
}

TEST_F(IdxFiles, DatasetPairsImagesWithLabels) {
  const std::string images = gzipped("i.gz", idx_bytes({6, 2, 3}, counting(36)));
  const std::string labels = gzipped("l.gz", idx_bytes({6}, counting(6, 10)));
  const Dataset d = read_dataset(images, labels);
  EXPECT_EQ(d.count, 6u);
  EXPECT_EQ(d.rows, 2u);
  EXPECT_EQ(d.cols, 3u);
  EXPECT_EQ(d.images.size(), 36u);
  EXPECT_EQ(d.labels[5], 5);
}

TEST_F(IdxFiles, RejectsMissingFile) {
  EXPECT_NE(message_of((dir_ / "absent.gz").string()).find("cannot open"), std::string::npos);
}

TEST_F(IdxFiles, RejectsCorruptGzip) {
  // A gzip header followed by bytes that are not a deflate stream.
  std::string bytes("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  bytes += std::string(40, '\xff');
  EXPECT_NE(message_of(plain("bad.gz", bytes)).find("corrupt"), std::string::npos);
}

TEST_F(IdxFiles, RejectsTruncatedGzip) {
  const std::string path = gzipped("whole.gz", idx_bytes({100}, counting(100)));
  std::ifstream in(path, std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = plain("cut.gz", whole.substr(0, whole.size() / 2));
  EXPECT_NE(message_of(cut).find("corrupt"), std::string::npos);
}

TEST_F(IdxFiles, RejectsBadHeaders) {
  EXPECT_NE(message_of(plain("magic", std::string("\x01\x00\x08\x01\x00\x00\x00\x01x", 9))).find("magic"),
            std::string::npos);
  EXPECT_NE(message_of(plain("type", idx_bytes({2}, "ab", 0x0d))).find("element type 13"),
            std::string::npos);
  EXPECT_NE(message_of(plain("dims", idx_bytes({}, ""))).find("0 dimensions"), std::string::npos);
  EXPECT_NE(message_of(plain("short_header", idx_bytes({7, 7}, "").substr(0, 9)))
                .find("truncated IDX header"),
            std::string::npos);
  EXPECT_NE(message_of(plain("tiny", std::string(2, '\0'))).find("IDX"), std::string::npos);
}

TEST_F(IdxFiles, RejectsDataOfTheWrongLength) {
  EXPECT_NE(message_of(plain("short", idx_bytes({4, 4}, counting(15)))).find("promises 16"),
            std::string::npos);
  EXPECT_NE(message_of(gzipped("long", idx_bytes({4, 4}, counting(17)))).find("promises 16"),
            std::string::npos);
}

TEST_F(IdxFiles, RejectsMismatchedDataset) {
  const std::string images = plain("i", idx_bytes({3, 2, 2}, counting(12)));
  const std::string flat = plain("f", idx_bytes({3, 4}, counting(12)));
  const std::string labels = plain("l", idx_bytes({3}, counting(3)));
  const std::string few = plain("few", idx_bytes({2}, counting(2)));
  const std::string big = plain("big", idx_bytes({3}, "\x01\x02\x0a"));
  auto message = [](const std::string& i, const std::string& l) {
    try {
      read_dataset(i, l);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(flat, labels).find("count x rows x cols"), std::string::npos);
  EXPECT_NE(message(images, few).find("2 labels for 3"), std::string::npos);
  EXPECT_NE(message(images, big).find("label 10"), std::string::npos);
  EXPECT_NE(message(images, images).find("1-D"), std::string::npos);
}

}  // namespace
}  // namespace tpu::idx
