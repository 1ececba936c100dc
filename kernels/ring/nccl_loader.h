// NCCL opened at run time: the ring needs a handful of NCCL's functions, and a
// build must not depend on NCCL being installed (the machine that builds is often
// not the one that runs). dlopen("libnccl.so.2"), then "libnccl.so", or a path
// the caller names; every symbol the ring calls is looked up once, here.
//
// The few NCCL types are declared here with NCCL's ABI (nccl.h 2.x): an opaque
// communicator pointer, a 128-byte unique id, int-sized enums. The CPU tests hold
// these against nccl.h where it is installed.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace fa::ring {

using NcclResult = int;  // ncclResult_t; 0 = ncclSuccess
using NcclComm = struct NcclCommOpaque*;  // ncclComm_t
constexpr int kNcclSuccess = 0;
constexpr int kNcclUint8 = 1;  // ncclUint8: the ring moves K and V as bytes
// ncclSend / ncclRecv exist from NCCL 2.7 (version code 2700).
constexpr int kNcclMinVersion = 2700;

// One opened NCCL library. The function pointers have NCCL's signatures, the
// stream parameter as void* (a cudaStream_t) so this header needs no CUDA.
class NcclLibrary {
 public:
  // Opens `path`, or with an empty path "libnccl.so.2" then "libnccl.so" (the
  // loader's search: LD_LIBRARY_PATH, the cache, the default folders). nullptr
  // on failure, with *why saying what was tried and how to make NCCL reachable.
  static std::unique_ptr<NcclLibrary> open(const std::string& path, std::string* why);
  ~NcclLibrary();
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  const std::string& path() const { return path_; }
  int version() const { return version_; }  // e.g. 22805 for 2.28.5
  // "ncclSend: <NCCL's text> (code N)"; "" for success.
  std::string error(const char* call, NcclResult r) const;

  NcclResult (*get_version)(int* version) = nullptr;
  const char* (*get_error_string)(NcclResult) = nullptr;
  // One process drives every GPU of the ring, so ncclCommInitAll makes its
  // communicators; the per-rank calls of a multi-process ring are not bound.
  NcclResult (*comm_init_all)(NcclComm* comms, int ndev, const int* devlist) = nullptr;
  NcclResult (*comm_destroy)(NcclComm comm) = nullptr;
  NcclResult (*group_start)() = nullptr;
  NcclResult (*group_end)() = nullptr;
  NcclResult (*send)(const void* buf, size_t count, int datatype, int peer, NcclComm comm,
                     void* stream) = nullptr;
  NcclResult (*recv)(void* buf, size_t count, int datatype, int peer, NcclComm comm,
                     void* stream) = nullptr;

 private:
  NcclLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  int version_ = 0;
};

}  // namespace fa::ring
