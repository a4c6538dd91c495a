package driver

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
)

// fleet sets up the client instances beyond the first (Options.Instances),
// each an edge of its own with the simulator's streams (Options.Instance)
// and its own balancer over the target's replicas (Options.Replicas).
func (d *driver) fleet(root context.Context) error {
	opt := d.opt
	n := max(opt.Instances, 1)
	if n > 1 {
		d.ecs = append(make([]*edge.EdgeClient, 0, n), d.ec)
	}
	for k := 1; k < n; k++ {
		// Without the simulator's streams, each instance draws from
		// streams of its own derived from the seed.
		pr := rand.New(rand.NewPCG(opt.Seed, 0x6c6f6164+uint64(k)))
		br := rand.New(rand.NewPCG(opt.Seed, 0x62616c+uint64(k)))
		if opt.Instance != nil {
			pr, br = opt.Instance(k)
		}
		pe, err := policies.NewEdge(opt.Policy.EdgeConfig(), pr)
		if err != nil {
			return fmt.Errorf("load: client policy: %w", err)
		}
		reps, err := replicas(opt, k, br)
		if err != nil {
			return err
		}
		// One transport to the target for the whole fleet.
		d.ecs = append(d.ecs, d.ec.Sibling(pe, root, reps))
	}
	return nil
}

// replicas are client instance k's replicas of the target, its balancer
// drawing from br (nil: the stream derived from the seed), preferring the
// replicas Options.Local marks; nil when the target has one.
func replicas(opt Options, k int, br *rand.Rand) (*edge.Replicas, error) {
	if len(opt.Replicas) < 2 {
		return nil, nil
	}
	if br == nil {
		br = rand.New(rand.NewPCG(opt.Seed, 0x62616c))
	}
	var local []bool
	if opt.Local != nil {
		local = opt.Local(k)
	}
	reps, err := edge.NewReplicas(opt.Replicas, &opt.Policy, br, local)
	if err != nil {
		return nil, fmt.Errorf("load: client policy: %w", err)
	}
	return reps, nil
}

// clients are the client instances' edges (the one edge without a fleet).
func (d *driver) clients() []*edge.EdgeClient {
	if d.ecs == nil {
		return []*edge.EdgeClient{d.ec}
	}
	return d.ecs
}

// kinds sums the client instances' attempts by transport kind.
func (d *driver) kinds() [transport.NumKinds]int64 {
	var out [transport.NumKinds]int64
	for _, ec := range d.clients() {
		for i, n := range ec.Kinds() {
			out[i] += n
		}
	}
	return out
}

// statuses sums the client instances' answers by HTTP status.
func (d *driver) statuses() map[int]int64 {
	out := make(map[int]int64)
	for _, ec := range d.clients() {
		for code, n := range ec.Statuses() {
			out[code] += n
		}
	}
	return out
}

// clientEdge is the summary of the client's edge, its instances summed.
func (d *driver) clientEdge(to string) metrics.EdgeSummary {
	es := metrics.EdgeSummary{From: "client", To: to}
	for _, ec := range d.clients() {
		es.Add(ec.Summary("client", to))
	}
	return es
}
