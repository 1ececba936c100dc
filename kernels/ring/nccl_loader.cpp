#include "ring/nccl_loader.h"

#include <dlfcn.h>

#include <vector>

namespace fa::ring {

namespace {

// Looks `name` up in `handle` into *fn; false with *why naming the symbol.
template <typename Fn>
bool bind(void* handle, const char* name, Fn* fn, const std::string& path, std::string* why) {
  dlerror();
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    const char* e = dlerror();
    *why = path + " has no " + name + (e ? std::string(" (") + e + ")" : std::string()) +
           ": not an NCCL 2.x library";
    return false;
  }
  *fn = reinterpret_cast<Fn>(sym);
  return true;
}

}  // namespace

std::unique_ptr<NcclLibrary> NcclLibrary::open(const std::string& path, std::string* why) {
  std::vector<std::string> names;
  if (path.empty())
    names = {"libnccl.so.2", "libnccl.so"};
  else
    names = {path};
  std::string tried;
  std::unique_ptr<NcclLibrary> lib(new NcclLibrary);
  for (const std::string& name : names) {
    // RTLD_LOCAL: NCCL's symbols stay out of the global namespace, so a second
    // NCCL (PyTorch's, in a process that embeds this) cannot clash with it.
    lib->handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) {
      lib->path_ = name;
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string("dlopen(\"") + name + "\"): " + (e ? e : "failed");
  }
  if (lib->handle_ == nullptr) {
    *why = "NCCL is not available, so the ring family is unavailable (" + tried +
           "). NCCL is opened at run time, not linked: put the folder holding libnccl.so.2 on "
           "LD_LIBRARY_PATH or name the file itself";
    return nullptr;
  }
  const std::string& p = lib->path_;
  if (!bind(lib->handle_, "ncclGetVersion", &lib->get_version, p, why) ||
      !bind(lib->handle_, "ncclGetErrorString", &lib->get_error_string, p, why) ||
      !bind(lib->handle_, "ncclCommInitAll", &lib->comm_init_all, p, why) ||
      !bind(lib->handle_, "ncclCommDestroy", &lib->comm_destroy, p, why) ||
      !bind(lib->handle_, "ncclGroupStart", &lib->group_start, p, why) ||
      !bind(lib->handle_, "ncclGroupEnd", &lib->group_end, p, why) ||
      !bind(lib->handle_, "ncclSend", &lib->send, p, why) ||
      !bind(lib->handle_, "ncclRecv", &lib->recv, p, why))
    return nullptr;
  if (lib->get_version(&lib->version_) != kNcclSuccess || lib->version_ < kNcclMinVersion) {
    *why = p + ": NCCL version code " + std::to_string(lib->version_) +
           "; the ring needs send/recv, NCCL 2.7 (2700) or later";
    return nullptr;
  }
  return lib;
}

NcclLibrary::~NcclLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NcclLibrary::error(const char* call, NcclResult r) const {
  if (r == kNcclSuccess) return "";
  const char* text = get_error_string ? get_error_string(r) : nullptr;
  return std::string(call) + ": " + (text ? text : "unknown NCCL error") + " (code " + std::to_string(r) + ")";
}

}  // namespace fa::ring
