package shard

import (
	"errors"
	"time"

	"github.com/spf13/pflag"
)

// DefaultMaxLate is how late after --start-at a load shard may still start
// (see StartAt.Delay): enough to absorb clock skew between nodes and
// process start-up, small enough that a shard scheduled late fails loudly
// instead of skewing the merged result with a burst of late sends.
const DefaultMaxLate = 2 * time.Second

// Flags are the sharding flags of a distributable command: --shard I/N,
// --shard-from-env and, for load, --start-at. Register them, parse the flag
// set, then call Spec.
type Flags struct {
	// Shard is the value of --shard.
	Shard Spec
	// FromEnv is --shard-from-env: take the shard from the Indexed Job's
	// environment (see FromEnv).
	FromEnv bool
	// StartAt is the value of --start-at (only when registered).
	StartAt StartAt
	// Run is --run: the label of the run this shard belongs to, recorded
	// in its output's run id for 'stormsim merge --run'.
	Run Run
}

// Register adds --shard, --shard-from-env and --run to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.Var(&f.Shard, "shard", "run only shard `I/N` of the work (0 ≤ I < N); merge the shards' outputs with 'stormsim merge'")
	fs.BoolVar(&f.FromEnv, "shard-from-env", false, "take the shard from $"+IndexEnv+" and $"+CountEnv+" (pods of a Kubernetes Indexed Job)")
	fs.Var(&f.Run, "run", "label this run's output `LABEL` (letters, digits, _ -): 'stormsim merge --wait --run LABEL' then waits for this run's shards, not a previous run's")
}

// RegisterStartAt adds --start-at to fs, for commands that drive real load.
func (f *Flags) RegisterStartAt(fs *pflag.FlagSet) {
	fs.Var(&f.StartAt, "start-at", "start the schedule at this wall-clock `time` (RFC 3339), shared by every shard so they do not drift")
}

// Spec returns the shard the flags select, reading the environment through
// lookup (os.LookupEnv in production) when --shard-from-env is set. Giving
// both --shard and --shard-from-env is an error.
func (f *Flags) Spec(lookup func(string) (string, bool)) (Spec, error) {
	if !f.FromEnv {
		return f.Shard, nil
	}
	if f.Shard != (Spec{}) {
		return Spec{}, errors.New("shard: give --shard or --shard-from-env, not both")
	}
	return FromLookup(lookup)
}
