// .npy reader/writer: the header is a Python dict literal; we accept exactly the
// keys numpy writes ('descr', 'fortran_order', 'shape') for '<f4' and '<f2'.
#include "check/npy.h"

#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "check/half.h"
#include "core/errors.h"

namespace fa {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw UsageError(fmt::format("{}: not a readable .npy file: {}", path, why));
}

// The value after 'key': in the header dict, up to the next top-level comma/brace.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::string quoted = "'" + key + "'";
  size_t pos = header.find(quoted);
  if (pos == std::string::npos) bad(path, fmt::format("header has no {} ({})", quoted, header));
  pos = header.find(':', pos + quoted.size());
  if (pos == std::string::npos) bad(path, fmt::format("no ':' after {}", quoted));
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  size_t end = pos;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos) bad(path, "unterminated shape tuple");
    return header.substr(pos, end - pos + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(pos, end - pos);
}

std::vector<int64_t> parse_shape(const std::string& tuple, const std::string& path) {
  std::vector<int64_t> shape;
  std::string inner = tuple.substr(1, tuple.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(' ');
    if (a == std::string::npos) continue;  // trailing comma of a 1-tuple
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item.substr(a), &used);
    } catch (...) {
      bad(path, fmt::format("shape {} has a non-integer entry '{}'", tuple, item));
    }
    if (v < 0) bad(path, fmt::format("shape {} has a negative entry", tuple));
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

NpyArray load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, std::strerror(errno));
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    bad(path, "missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) bad(path, "truncated header length");
    header_len = b[0] | (uint32_t(b[1]) << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) bad(path, "truncated header length");
    header_len = b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
  } else {
    bad(path, fmt::format("format version {}.{} not supported (1.0, 2.0, 3.0 are)", major,
                          int(static_cast<unsigned char>(magic[7]))));
  }
  if (header_len > (1u << 20)) bad(path, fmt::format("header length {} is implausible", header_len));
  std::string header(header_len, '\0');
  if (!f.read(header.data(), header_len)) bad(path, "truncated header");

  const std::string descr = dict_value(header, "descr", path);
  int elem = 0;
  if (descr == "'<f4'") elem = 4;
  else if (descr == "'<f2'") elem = 2;
  else bad(path, fmt::format("dtype {} not supported (float32 '<f4' or float16 '<f2')", descr));
  if (dict_value(header, "fortran_order", path) != "False")
    bad(path, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  const std::string shape_str = dict_value(header, "shape", path);
  if (shape_str.empty() || shape_str.front() != '(') bad(path, "shape is not a tuple");

  NpyArray a;
  a.shape = parse_shape(shape_str, path);
  int64_t n = 1;
  for (int64_t s : a.shape) {
    if (s > 0 && n > (int64_t(1) << 40) / s) bad(path, "shape too large");
    n *= s;
  }
  std::vector<char> raw(size_t(n) * elem);
  if (!f.read(raw.data(), std::streamsize(raw.size())))
    bad(path, fmt::format("data truncated: shape {} needs {} bytes", shape_str, raw.size()));
  if (f.peek() != std::char_traits<char>::eof())
    bad(path, fmt::format("trailing bytes after the {} elements of shape {}", n, shape_str));
  a.data.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    if (elem == 4) {
      std::memcpy(&a.data[i], &raw[size_t(i) * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[size_t(i) * 2], 2);
      a.data[i] = f16_bits_to_float(h);
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
