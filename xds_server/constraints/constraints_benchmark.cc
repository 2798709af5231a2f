// Benchmarks for the constraint engine at the default limits.
//
//   ninja -C build-constraints constraints_benchmark &&
//   build-constraints/xds_server/constraints/constraints_benchmark

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/constraints/variant_set.h"

namespace facet::xds {
namespace {

using SingleConstraint = DynamicParameterConstraints::SingleConstraint;

DynamicParameterConstraints Eq(const std::string& key, const std::string& value) {
  DynamicParameterConstraints out;
  out.mutable_constraint()->set_key(key);
  out.mutable_constraint()->set_value(value);
  return out;
}

DynamicParameterConstraints Not(DynamicParameterConstraints operand) {
  DynamicParameterConstraints out;
  *out.mutable_not_constraints() = std::move(operand);
  return out;
}

DynamicParameterConstraints Or(std::vector<DynamicParameterConstraints> operands) {
  DynamicParameterConstraints out;
  for (auto& operand : operands) *out.mutable_or_constraints()->add_constraints() = operand;
  return out;
}

Constraint MustCompile(const DynamicParameterConstraints& proto) {
  absl::StatusOr<Constraint> constraint = Constraint::Compile(proto);
  if (!constraint.ok()) std::abort();
  return *constraint;
}

std::string Key(int k) { return absl::StrCat("key", k); }

// 2^bits variants, variant v = AND over keys k of (key_k = a if bit k of v is
// 0, else b). No overlaps; every other value is a gap.
std::vector<Constraint> ExactGrid(int bits) {
  std::vector<Constraint> variants;
  for (int v = 0; v < (1 << bits); ++v) {
    DynamicParameterConstraints proto;
    for (int k = 0; k < bits; ++k) {
      *proto.mutable_and_constraints()->add_constraints() = Eq(Key(k), (v >> k) & 1 ? "b" : "a");
    }
    variants.push_back(MustCompile(proto));
  }
  return variants;
}

// 2^bits variants that partition the whole space with or/not mixes: on even
// keys bit 0/1 is `key in {a, b}` / `NOT key in {a, b}`; on odd keys it is
// `key = a` / `NOT key = a`. No overlaps and no gaps, so both searches must
// explore every cell.
std::vector<Constraint> MixedPartition(int bits) {
  std::vector<Constraint> variants;
  for (int v = 0; v < (1 << bits); ++v) {
    DynamicParameterConstraints proto;
    for (int k = 0; k < bits; ++k) {
      DynamicParameterConstraints term =
          k % 2 == 0 ? Or({Eq(Key(k), "a"), Eq(Key(k), "b")}) : Eq(Key(k), "a");
      if ((v >> k) & 1) term = Not(std::move(term));
      *proto.mutable_and_constraints()->add_constraints() = std::move(term);
    }
    variants.push_back(MustCompile(proto));
  }
  return variants;
}

void RunCheck(benchmark::State& state, const std::vector<Constraint>& variants) {
  for (auto _ : state) {
    absl::StatusOr<VariantSetReport> report = CheckVariantSet(variants);
    if (!report.ok()) {
      state.SkipWithError(std::string(report.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(report);
  }
  state.counters["variants"] = static_cast<double>(variants.size());
}

void BM_CheckVariantSet_ExactGrid(benchmark::State& state) {
  RunCheck(state, ExactGrid(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_CheckVariantSet_ExactGrid)->Arg(4)->Arg(8)->Arg(10)->Unit(benchmark::kMillisecond);

void BM_CheckVariantSet_MixedPartition(benchmark::State& state) {
  RunCheck(state, MixedPartition(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_CheckVariantSet_MixedPartition)
    ->Arg(4)
    ->Arg(8)
    ->Arg(10)
    ->Unit(benchmark::kMillisecond);

// The grid plus one variant that overlaps exactly one cell.
void BM_CheckVariantSet_GridWithOneOverlap(benchmark::State& state) {
  std::vector<Constraint> variants = ExactGrid(8);
  DynamicParameterConstraints extra;
  for (int k = 0; k < 8; ++k) *extra.mutable_and_constraints()->add_constraints() = Eq(Key(k), "b");
  variants.push_back(MustCompile(extra));
  RunCheck(state, variants);
}
BENCHMARK(BM_CheckVariantSet_GridWithOneOverlap)->Unit(benchmark::kMillisecond);

// `env = v0` ... `env = v<n-1>`: a one-key exact partition, decided by
// hashing values (linear) rather than by search.
std::vector<Constraint> EnvPartition(int n) {
  std::vector<Constraint> variants;
  for (int i = 0; i < n; ++i) variants.push_back(MustCompile(Eq("env", absl::StrCat("v", i))));
  return variants;
}

void BM_CheckVariantSet_EnvPartition(benchmark::State& state) {
  RunCheck(state, EnvPartition(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_CheckVariantSet_EnvPartition)
    ->Arg(256)
    ->Arg(768)
    ->Arg(1024)
    ->Unit(benchmark::kMicrosecond);

// The 1,024-variant partition with one value repeated: the pair is found
// and named.
void BM_CheckVariantSet_EnvPartitionWithOneOverlap(benchmark::State& state) {
  std::vector<Constraint> variants = EnvPartition(1024);
  variants[900] = variants[17];
  RunCheck(state, variants);
}
BENCHMARK(BM_CheckVariantSet_EnvPartitionWithOneOverlap)->Unit(benchmark::kMicrosecond);

// Whether a variant for `env = v1000` is covered by a 1,024-variant
// partition (a reference check).
void BM_FindParameterSet_CoveredByEnvPartition(benchmark::State& state) {
  const std::vector<Constraint> targets = EnvPartition(1024);
  std::vector<const Constraint*> all_false;
  for (const Constraint& c : targets) all_false.push_back(&c);
  const Constraint self = MustCompile(Eq("env", "v1000"));
  const Constraint* all_true[] = {&self};
  for (auto _ : state) {
    auto found = FindParameterSet(all_true, all_false);
    if (!found.ok() || found->has_value()) state.SkipWithError("expected covered");
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_FindParameterSet_CoveredByEnvPartition)->Unit(benchmark::kMicrosecond);

void BM_Matches(benchmark::State& state) {
  const std::vector<Constraint> variants = MixedPartition(8);
  ParameterSet params;
  for (int k = 0; k < 8; ++k) params[Key(k)] = k % 3 == 0 ? "a" : "c";
  params["unrelated"] = "x";
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(variants[i++ & 255].Matches(params));
  }
}
BENCHMARK(BM_Matches);

// Selecting the variant for one client by scanning all 256 variants.
void BM_SelectVariantByScan(benchmark::State& state) {
  const std::vector<Constraint> variants = MixedPartition(8);
  ParameterSet params;
  for (int k = 0; k < 8; ++k) params[Key(k)] = k % 3 == 0 ? "a" : "c";
  for (auto _ : state) {
    size_t found = 0;
    for (size_t v = 0; v < variants.size(); ++v) {
      if (variants[v].Matches(params)) found = v;
    }
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_SelectVariantByScan);

void BM_Compile(benchmark::State& state) {
  const DynamicParameterConstraints proto = MixedPartition(8)[77].proto();
  for (auto _ : state) {
    absl::StatusOr<Constraint> constraint = Constraint::Compile(proto);
    benchmark::DoNotOptimize(constraint);
  }
}
BENCHMARK(BM_Compile);

void BM_CompileMatch(benchmark::State& state) {
  const YAML::Node match = YAML::Load(
      "{env: [prod, staging], version: {exists: false}, zone: {not: [us-east1, us-west1]},"
      " tier: {or: [gold, {and: [{exists: true}, {not: bronze}]}]}}");
  for (auto _ : state) {
    absl::StatusOr<DynamicParameterConstraints> proto = CompileMatch(match, "spec.match");
    benchmark::DoNotOptimize(proto);
  }
}
BENCHMARK(BM_CompileMatch);

}  // namespace
}  // namespace facet::xds

BENCHMARK_MAIN();
