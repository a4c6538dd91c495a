package sim

import (
	"math/rand/v2"

	"github.com/stormsim/stormsim/model"
)

// streamSource is the source of one of a run's named streams, kept so that
// the stream can be reseeded when a trajectory branches.
type streamSource struct {
	pcg  *rand.PCG
	name string
}

// stream returns the run's stream of the named component, the one Stream
// returns, and records its source.
func (m *run) stream(name string) *rand.Rand {
	p := model.StreamSource(m.sc.Seed, name)
	m.srcs = append(m.srcs, streamSource{pcg: p, name: name})
	return rand.New(p)
}

// reseed gives every stream of the run the state it would have in a run
// of the given seed, as if its draws began now: the run continues from
// its current state with fresh, reproducible randomness.
func (m *run) reseed(seed uint64) {
	for _, s := range m.srcs {
		*s.pcg = *model.StreamSource(seed, s.name)
	}
}
