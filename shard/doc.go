// Package shard splits one piece of stormsim work across N processes (pods
// of a Kubernetes Indexed Job, or plain processes on several machines) so
// that the union of the shards' outputs is exactly the unsharded output.
//
// # The partition rule
//
// A Spec "I/N" (0 ≤ I < N) owns the work items whose index i satisfies
// i ≡ I (mod N). Items are numbered by the command that owns them (sweep
// units in point-major order, load requests in schedule order); every shard
// computes the same numbering from the same inputs and keeps its residue
// class. Dealing items round-robin, rather than in contiguous blocks, keeps
// the shards balanced when the cost of an item grows with its index (higher
// rates later in a sweep) and interleaves load requests in time.
//
// A sharded simulation item keeps the seed it has in an unsharded run
// (seeds derive from the item, never from the shard), so the merged output is
// byte-identical to the unsharded one.
//
// # Distributed load
//
// For load, the global schedule of intended send times t₀ ≤ t₁ ≤ … is
// generated identically by every shard (same pacer, same seed); shard I/N
// sends requests I, I+N, I+2N, … at their global times and uses the global
// index as the request id. Ids therefore never collide, each shard drives
// 1/N of the rate, and the union of the shards' sends is the requested
// schedule. (For a Poisson schedule each shard's own gaps are Erlang-N
// distributed; only the union is Poisson, which is the point.) The shards'
// clocks must agree on when t = 0 is: StartAt carries a shared wall-clock
// start instant (--start-at RFC3339) that every shard waits for, so shards
// started seconds apart by a scheduler do not drift against each other.
//
// # Kubernetes
//
// FromEnv builds a Spec from JOB_COMPLETION_INDEX, which the Job controller
// sets in every pod of an Indexed Job, and STORMSIM_SHARDS, which the
// manifests set to the Job's completions. Flags wires --shard,
// --shard-from-env, --run and --start-at into a pflag.FlagSet.
//
// # Runs
//
// Shard directories outlive a run: the next run of the same command writes
// into them, and a merge waiting for its shards cannot tell from the files'
// times whether a complete directory is this run's or the previous one's
// (it may start before or after its shards finish). A Run label (--run
// LABEL), given to every shard of a run and to its merge, is recorded in
// each shard's run id (LABEL.digest), and 'stormsim merge --run LABEL'
// waits past, or refuses, the output of any other run.
//
// # Zero values and concurrency
//
// The zero Spec (Count 0) means "not sharded" and owns every item; the
// zero StartAt means "start now". Spec and StartAt are small values, safe
// to copy and to use from several goroutines.
package shard
