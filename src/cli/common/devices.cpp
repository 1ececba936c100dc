#include "cli/common/devices.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa::cli {

namespace {

DeviceIdentity identity(int index, const Executor& ex) {
  const DeviceInfo info = ex.info();
  const auto uuid = info.details.find("uuid");
  return DeviceIdentity{index, info.name, uuid == info.details.end() ? "" : uuid->second};
}

}  // namespace

std::vector<DeviceSlot> open_devices(std::unique_ptr<Executor> picked, const DeviceList& list,
                                     const std::string& where) {
  std::vector<DeviceSlot> slots;
  if (picked->backend() != Backend::cuda) {
    // Several CPU workers would share one set of cores and time each other.
    if (!list.all && !(list.indices.size() == 1 && list.indices[0] == 0))
      throw UsageError(fmt::format("{} '{}': the {} back end has one device, 0; expected 0 or all (several "
                                   "devices need --backend cuda)",
                                   where, list.str(), to_string(picked->backend())));
    DeviceIdentity id = identity(0, *picked);
    slots.push_back(DeviceSlot{std::move(picked), std::move(id)});
    return slots;
  }
  std::string why;
  const int count = cuda_device_count(&why);
  std::vector<int> indices = list.indices;
  if (list.all)
    for (int i = 0; i < count; ++i) indices.push_back(i);
  for (int i : indices)
    if (i >= count)
      throw UsageError(fmt::format("{} '{}': there is no CUDA device {}; this process sees {} ({}; "
                                   "CUDA_VISIBLE_DEVICES numbers them from 0)",
                                   where, list.str(), i, count, count == 1 ? "device 0" : fmt::format("devices 0 to {}", count - 1)));
  // Released on its own device, before another becomes the thread's current one.
  if (std::find(indices.begin(), indices.end(), 0) == indices.end()) picked.reset();
  for (int i : indices) {
    std::unique_ptr<Executor> ex;
    if (i == 0 && picked) ex = std::move(picked);  // pick_executor's is device 0
    else ex = make_cuda_executor(i, &why);
    if (!ex) throw UsageError(fmt::format("{} '{}': CUDA device {}: {}", where, list.str(), i, why));
    DeviceIdentity id = identity(i, *ex);
    slots.push_back(DeviceSlot{std::move(ex), std::move(id)});
  }
  slots.front().executor->bind_thread();
  return slots;
}

DeviceList device_list_of(const std::vector<DeviceSlot>& slots) {
  DeviceList l;
  for (const DeviceSlot& s : slots) l.indices.push_back(s.device.index);
  return l;
}

}  // namespace fa::cli
