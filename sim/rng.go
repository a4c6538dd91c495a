package sim

import (
	"math/rand/v2"

	"github.com/stormsim/stormsim/model"
)

// Stream returns the random stream of one named component of a run; it is
// model.Stream, the one derivation both modes use.
func Stream(seed uint64, name string) *rand.Rand { return model.Stream(seed, name) }
