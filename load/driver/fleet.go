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

// fleet sets up the client side beyond one instance toward one target:
// the balancer over the target's replicas (Options.Replicas) and the
// other client instances (Options.Instances), each an edge of its own with
// the simulator's streams (Options.Instance).
func (d *driver) fleet(root context.Context) error {
	opt := d.opt
	n := max(opt.Instances, 1)
	if n > 1 {
		d.ecs = append(make([]*edge.EdgeClient, 0, n), d.ec)
	}
	for k := range n {
		ec, br := d.ec, opt.BalanceRand
		if k > 0 {
			// Without the simulator's streams, each instance draws from
			// streams of its own derived from the seed.
			pr := rand.New(rand.NewPCG(opt.Seed, 0x6c6f6164+uint64(k)))
			br = rand.New(rand.NewPCG(opt.Seed, 0x62616c+uint64(k)))
			if opt.Instance != nil {
				pr, br = opt.Instance(k)
			}
			pe, err := policies.NewEdge(opt.Policy.EdgeConfig(), pr)
			if err != nil {
				return fmt.Errorf("load: client policy: %w", err)
			}
			// One transport to the target for the whole fleet.
			ec = d.ec.Sibling(pe, root)
			d.ecs = append(d.ecs, ec)
		}
		if len(opt.Replicas) > 1 {
			if br == nil {
				br = rand.New(rand.NewPCG(opt.Seed, 0x62616c))
			}
			if err := ec.SetReplicas(opt.Replicas, &opt.Policy, br); err != nil {
				return fmt.Errorf("load: client policy: %w", err)
			}
			if opt.Local != nil {
				ec.PreferLocal(opt.Local(k))
			}
		}
	}
	return nil
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
