// Ranks agree on the run config before the first step. An MPMD job
// (`mpirun -np 1 lemrt_train A : -np 1 lemrt_train B`) can give ranks
// different configs; ranks that differ in, say, training.steps would stop
// issuing collectives at different steps and wait for each other until the
// watchdog fires, and ranks that differ in a learning rate would train a
// model no single config describes. Thread-compatible.
#ifndef LEMRT_RUNTIME_CONFIG_AGREEMENT_H_
#define LEMRT_RUNTIME_CONFIG_AGREEMENT_H_

#include "absl/status/status.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// Collective: rank 0 broadcasts its serialized `config`; every rank compares
// it with its own field by field. OK when all are equal; else, on every rank,
// the lowest differing rank's FailedPrecondition "rank N: its config differs
// from rank 0's (training.steps 5 -> 3; ...); every rank must run the same
// config ...". Costs one broadcast (the config's bytes) and AgreeOnStatus.
// Call it on the config as loaded, before per-rank fields (thread counts
// measured from this rank's cores) are filled in.
absl::Status AgreeOnConfig(Communicator& comm, const config::RunConfig& config);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_CONFIG_AGREEMENT_H_
