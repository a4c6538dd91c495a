package main

import (
	"context"
	"time"

	"github.com/stormsim/stormsim/load/edge"
)

// openTracing starts tracing into path; "" traces nothing (nil).
func openTracing(path string) (*edge.Tracing, error) {
	if path == "" {
		return nil, nil
	}
	return edge.NewTracing(path)
}

// closeTracing writes the trace file, giving the exporter a bounded time.
func closeTracing(t *edge.Tracing) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return t.Close(ctx)
}
