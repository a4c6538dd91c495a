// Package merge holds the rules by which the output directories of a
// sharded run combine into the whole run's: what a shard directory holds
// once it is complete (Kind, KindOf), when a set of them is ready to merge
// (NotReady: every one finished, of one run, a sweep's units adding up to
// the whole sweep, no result interrupted), and the merges themselves
// (Results for the result directories of run and load, through
// metrics.Merge; SweepShards and SweepFiles for a sweep's rows, through
// analysis.MergeRows). cmd/stormsim's merge and sweep --merge only parse
// flags, wait and write what these return; capacity shards merge in
// package capacity.
//
// Every function reads the directories as they are and keeps nothing: it
// is safe to call from several goroutines.
package merge
