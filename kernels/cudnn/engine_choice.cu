// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/engine_choice.h"

#include <string>
#include <vector>

namespace fa::cudnn {
namespace {

// The engine behind an engine config, its global index and numerical notes.
struct EngineFacts {
  int64_t index = -1;
  bool nondeterministic = false;
};

EngineFacts facts_of(const Desc& cfg) {
  EngineFacts f;
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) !=
      CUDNN_STATUS_SUCCESS)
    return f;
  cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &f.index);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i)
      f.nondeterministic = f.nondeterministic || notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
  return f;
}

// Tries the engine configs cuDNN's heuristics rank for `graph` in `mode`, in
// order; true with `out` filled for the first that finalizes, else false with
// `why` (the first reason seen) set.
bool first_plan(cudnnHandle_t handle, const Desc& graph, cudnnBackendHeurMode_t mode, bool deterministic_only,
                EngineChoice* out, std::string* why) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph")
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode")
      .finalize("engine heuristics");
  int64_t count = 0;
  cudnnStatus_t st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  if (st != CUDNN_STATUS_SUCCESS) throw Failure{st, describe(st, "heuristics result count")};
  if (count == 0) {
    if (why->empty()) *why = "cuDNN's heuristics offer no engine for this graph";
    return false;
  }
  std::vector<Desc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                &got, raw.data());
  if (st != CUDNN_STATUS_SUCCESS) throw Failure{st, describe(st, "heuristics results")};
  for (int64_t i = 0; i < got; ++i) {
    const EngineFacts facts = facts_of(cfgs[size_t(i)]);
    if (deterministic_only && facts.nondeterministic) {
      if (why->empty())
        *why = "engine " + std::to_string(facts.index) +
               " is nondeterministic and no deterministic engine runs this graph";
      continue;
    }
    Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle")
        .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[size_t(i)], "plan engine config");
    std::string msg;
    if (plan.try_finalize(&msg) == CUDNN_STATUS_SUCCESS) {
      out->plan = std::move(plan);
      out->engine_index = facts.index;
      out->nondeterministic = facts.nondeterministic;
      return true;
    }
    if (why->empty()) *why = msg;  // the best-ranked engine's reason says most
  }
  return false;
}

}  // namespace

EngineChoice choose_engine(cudnnHandle_t handle, const Desc& graph, bool deterministic_only) {
  EngineChoice out;
  std::string why;
  if (!first_plan(handle, graph, CUDNN_HEUR_MODE_A, deterministic_only, &out, &why) &&
      !first_plan(handle, graph, CUDNN_HEUR_MODE_FALLBACK, deterministic_only, &out, &why))
    throw Failure{CUDNN_STATUS_NOT_SUPPORTED, "no cuDNN engine runs this graph: " + why};
  int64_t n = 0;
  cudnnStatus_t st = cudnnBackendGetAttribute(out.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                              CUDNN_TYPE_INT64, 1, &n, &out.workspace_bytes);
  if (st != CUDNN_STATUS_SUCCESS) throw Failure{st, describe(st, "plan workspace size")};
  return out;
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
