package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Stream returns the random stream of one named component of a run. Each
// component (the arrivals, each service, each call edge, each policy) draws
// from its own stream derived from the run's seed and the component's name,
// so adding a service does not reshuffle the draws of any other.
func Stream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}
