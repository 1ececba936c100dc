// .npy reader/writer: the header is a Python dict literal; we accept exactly the
// keys numpy writes ('descr', 'fortran_order', 'shape') for '<f4' and '<f2', and
// check the shape against the file's length before allocating anything.
#include "check/npy.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "check/half.h"
#include "core/errors.h"
#include "report/input_file.h"

namespace fa {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw UsageError(fmt::format("{}: not a readable .npy file: {}", path, why));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

// The header is a Python dict literal with exactly the keys numpy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (1, 16, 2, 32), }. Parsed
// strictly: each key once, nothing else, every shape entry a whole integer.
struct Header {
  std::string descr, fortran_order;
  std::vector<int64_t> shape;
  bool has_shape = false;
};

void skip_space(const std::string& h, size_t& i) {
  while (i < h.size() && (h[i] == ' ' || h[i] == '\n')) ++i;
}

std::string quoted(const std::string& h, size_t& i, const std::string& path) {
  if (i >= h.size() || (h[i] != '\'' && h[i] != '"')) bad(path, fmt::format("header is not a dict literal: {}", h));
  const char q = h[i++];
  const size_t end = h.find(q, i);
  if (end == std::string::npos) bad(path, "unterminated string in the header");
  std::string out = h.substr(i, end - i);
  i = end + 1;
  return out;
}

std::vector<int64_t> shape_tuple(const std::string& h, size_t& i, const std::string& path) {
  if (i >= h.size() || h[i] != '(') bad(path, "'shape' is not a tuple");
  const size_t end = h.find(')', i);
  if (end == std::string::npos) bad(path, "unterminated shape tuple");
  const std::string tuple = h.substr(i, end - i + 1);
  std::vector<int64_t> shape;
  size_t j = i + 1;
  i = end + 1;
  while (true) {
    skip_space(h, j);
    if (j >= end) break;
    size_t k = j;
    while (k < end && h[k] != ',') ++k;
    std::string item = h.substr(j, k - j);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int64_t v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size())
      bad(path, fmt::format("shape {} has an entry '{}' that is not a whole non-negative integer", tuple, item));
    if (v < 0) bad(path, fmt::format("shape {} has a negative entry", tuple));
    shape.push_back(v);
    j = k + 1;
  }
  return shape;
}

Header parse_header(const std::string& h, const std::string& path) {
  Header out;
  size_t i = 0;
  skip_space(h, i);
  if (i >= h.size() || h[i] != '{') bad(path, fmt::format("header is not a dict literal: {}", h));
  ++i;
  while (true) {
    skip_space(h, i);
    if (i < h.size() && h[i] == '}') break;
    const std::string key = quoted(h, i, path);
    skip_space(h, i);
    if (i >= h.size() || h[i] != ':') bad(path, fmt::format("no ':' after '{}' in the header", key));
    ++i;
    skip_space(h, i);
    if (key == "descr" && out.descr.empty()) {
      out.descr = quoted(h, i, path);
    } else if (key == "fortran_order" && out.fortran_order.empty()) {
      const size_t start = i;
      while (i < h.size() && std::isalpha(static_cast<unsigned char>(h[i]))) ++i;
      out.fortran_order = h.substr(start, i - start);
    } else if (key == "shape" && !out.has_shape) {
      out.shape = shape_tuple(h, i, path);
      out.has_shape = true;
    } else {
      bad(path, fmt::format("header key '{}' is unknown or repeated; expected 'descr', 'fortran_order' and "
                            "'shape' once each", key));
    }
    skip_space(h, i);
    if (i < h.size() && h[i] == ',') ++i;
    else if (i >= h.size() || h[i] != '}') bad(path, fmt::format("header is not a dict literal: {}", h));
  }
  for (size_t k = i + 1; k < h.size(); ++k)
    if (h[k] != ' ' && h[k] != '\n') bad(path, "text after the header dict");
  if (out.descr.empty()) bad(path, "header has no 'descr'");
  if (out.fortran_order.empty()) bad(path, "header has no 'fortran_order'");
  if (!out.has_shape) bad(path, "header has no 'shape'");
  return out;
}

}  // namespace

NpyArray load_npy(const std::string& path) {
  const int64_t file_size = check_input_file(path, ".npy file");
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, std::strerror(errno));
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    bad(path, "missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t header_len = 0;
  int64_t prefix = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) bad(path, "truncated header length");
    header_len = b[0] | (uint32_t(b[1]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) bad(path, "truncated header length");
    header_len = b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
    prefix = 12;
  } else {
    bad(path, fmt::format("format version {}.{} not supported (1.0, 2.0, 3.0 are)", major,
                          int(static_cast<unsigned char>(magic[7]))));
  }
  if (int64_t(header_len) > file_size - prefix)
    bad(path, fmt::format("header length {} runs past the end of the {}-byte file", header_len, file_size));
  if (header_len > (1u << 20)) bad(path, fmt::format("header length {} is implausible", header_len));
  std::string header(header_len, '\0');
  if (!f.read(header.data(), header_len)) bad(path, "truncated header");

  const Header h = parse_header(header, path);
  int elem = 0;
  if (h.descr == "<f4") elem = 4;
  else if (h.descr == "<f2") elem = 2;
  else bad(path, fmt::format("dtype '{}' not supported (float32 '<f4' or float16 '<f2')", h.descr));
  if (h.fortran_order != "False")
    bad(path, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");

  // The element count must match the bytes the file holds before anything is allocated.
  NpyArray a;
  a.shape = h.shape;
  const int64_t data_bytes = file_size - prefix - int64_t(header_len);
  int64_t n = 1;
  for (int64_t s : a.shape) {
    if (s > 0 && n > data_bytes / elem / s)
      bad(path, fmt::format("shape {} claims more data than the file holds ({} bytes): truncated or a lying "
                            "header",
                            shape_text(a.shape), data_bytes));
    n *= s;
  }
  if (n * elem != data_bytes)
    bad(path, fmt::format("shape {} needs {} bytes of data, the file holds {}{}", shape_text(a.shape), n * elem,
                          data_bytes, n * elem > data_bytes ? " (truncated)" : " (trailing bytes)"));
  std::vector<char> raw(size_t(n) * elem);
  if (!f.read(raw.data(), std::streamsize(raw.size())))
    bad(path, fmt::format("data truncated: shape {} needs {} bytes", shape_text(a.shape), raw.size()));
  a.data.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    if (elem == 4) {
      std::memcpy(&a.data[i], &raw[size_t(i) * 4], 4);
    } else {
      uint16_t h16;
      std::memcpy(&h16, &raw[size_t(i) * 2], 2);
      a.data[i] = f16_bits_to_float(h16);
    }
  }
  return a;
}

void save_npy(const std::string& path, const std::vector<int64_t>& shape,
              const std::vector<float>& data, bool as_f16) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n != int64_t(data.size()))
    throw UsageError(fmt::format("save_npy {}: shape has {} elements, data {}", path, n, data.size()));
  std::string dims;
  for (int64_t s : shape) dims += fmt::format("{}, ", s);
  if (shape.size() > 1) dims.resize(dims.size() - 2);       // "(a, b)"
  else if (shape.size() == 1) dims.resize(dims.size() - 1);  // "(a,)"
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                    as_f16 ? "<f2" : "<f4", dims);
  // Pad with spaces so magic + length + header + '\n' is a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 65535) throw UsageError(fmt::format("save_npy {}: header too long", path));

  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw UsageError(fmt::format("save_npy: cannot write {}: {}", tmp, std::strerror(errno)));
    const uint16_t len = uint16_t(header.size());
    const char lenb[2] = {char(len & 0xFF), char(len >> 8)};
    f.write("\x93NUMPY\x01\x00", 8);
    f.write(lenb, 2);
    f.write(header.data(), std::streamsize(header.size()));
    for (float v : data) {
      if (as_f16) {
        const uint16_t h = float_to_f16_bits(v);
        f.write(reinterpret_cast<const char*>(&h), 2);
      } else {
        f.write(reinterpret_cast<const char*>(&v), 4);
      }
    }
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw UsageError(fmt::format("save_npy: writing {} failed", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw UsageError(fmt::format("save_npy: rename {} -> {} failed: {}", tmp, path, why));
  }
}

}  // namespace fa
