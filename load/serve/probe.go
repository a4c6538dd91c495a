package serve

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
)

// probeEdge is a plan edge whose calls are probes — status queries by key
// (the client's, HeaderQuery) or fact queries (recovery's, HeaderFact) —
// answered with a 2xx status that names what the callee's records say.
// The edge's OnAttempt hook keeps the last such status per request id, so
// a probe's call reads the answer its succeeding attempt carried.
type probeEdge struct {
	ec  *edge.EdgeClient
	url string
	hdr http.Header
	mu  sync.Mutex
	// last holds the status of the last probe answered per request id.
	last map[string]int
}

// newProbeEdge binds plan edge pe (its call policy, on its own stream of
// seed) to url over tr on clk, marking its attempts with header.
func newProbeEdge(pe *model.Edge, seed uint64, tr transport.Transport, clk clock.Clock, root context.Context, url, header string) (*probeEdge, error) {
	pol, err := policies.NewEdge(pe.Call.EdgeConfig(), model.Stream(seed, pe.Stream))
	if err != nil {
		return nil, fmt.Errorf("load: %s.%w", pe.Field, err)
	}
	p := &probeEdge{url: url, hdr: http.Header{header: {"1"}}, last: map[string]int{}}
	p.ec = edge.NewEdgeClient(edge.EdgeConfig{Edge: pol, Transport: tr, Root: root, Clock: clk,
		OnAttempt: func(a *transport.Attempt, _ time.Time, _ time.Duration, ans transport.Answer) {
			if ans.Outcome == policies.OK {
				p.mu.Lock()
				p.last[a.RequestID] = ans.Status
				p.mu.Unlock()
			}
		}})
	return p, nil
}

// call sends one probe for request id (and key, for a status query) and
// returns the status that answered it; ok is false when the probe's call
// did not succeed (it failed or timed out).
func (p *probeEdge) call(ctx context.Context, id, key, keyHeader string, counted bool) (status int, ok bool) {
	att := transport.Attempt{Method: http.MethodGet, URL: p.url, Header: p.hdr, RequestID: id,
		IdempotencyKey: key, KeyHeader: keyHeader, Warmup: !counted}
	r := p.ec.Do(ctx, policies.CallOptions{Counted: counted}, &att, nil)
	p.mu.Lock()
	status, ok = p.last[id]
	delete(p.last, id)
	p.mu.Unlock()
	return status, ok && r.Result == policies.Succeeded
}
