package serve

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stormsim/stormsim/internal/scenariogen"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/sim"
)

// TestSimulatorAndServeBindOnePlan: for random valid scenarios (the
// simulator's fuzz generator: chains, fan-outs, parallel groups with
// quorums, replicas, zones, balancers, faults on replicas and zones,
// client fleets), the plan the simulator binds and the plan serve's
// cluster binds are one value, and every service replica of the cluster
// binds its own node of it: its stream, its faults, and one edge per plan
// edge of its steps, drawing from the stream the plan names.
func TestSimulatorAndServeBindOnePlan(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 1))
	tried := 0
	for range 60 {
		b := make([]byte, 16+r.IntN(96))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		sc := scenariogen.FromBytes(b)
		simPlan, err := sim.PlanOf(sc)
		if err != nil {
			continue // a mix the simulator rejects
		}
		cl, err := StartCluster(sc, ClusterOptions{})
		if err != nil {
			t.Fatalf("scenario %x: the simulator binds it, serve refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(simPlan, cl.Plan()) {
			t.Errorf("scenario %x: the simulator's plan %+v, serve's %+v", b, simPlan, cl.Plan())
		}
		for _, s := range cl.Services {
			node := cl.Plan().Replica(s.name, s.rep)
			if s.node != node {
				t.Errorf("scenario %x: %s replica %d bound another node", b, s.name, s.rep)
			}
			var want []*model.Edge
			for _, st := range node.Steps {
				for _, e := range st.Members {
					if len(want) == 0 || want[len(want)-1] != e {
						want = append(want, e)
					}
				}
			}
			if len(s.outEdges) != len(want) {
				t.Fatalf("scenario %x: %s replica %d bound %d edges, its node has %d", b, s.name, s.rep, len(s.outEdges), len(want))
			}
			for i, ref := range s.outEdges {
				if got, w := ref.ec.Policy().Rand.Uint64(), model.Stream(sc.Seed, want[i].Stream).Uint64(); got != w {
					t.Errorf("scenario %x: %s replica %d edge %d draws from another stream than %s", b, s.name, s.rep, i, want[i].Stream)
				}
			}
		}
		_ = cl.Close(context.Background())
		tried++
	}
	if tried < 30 {
		t.Fatalf("only %d of 60 random scenarios were valid: the test compares too few", tried)
	}
}
