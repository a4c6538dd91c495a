package main

import (
	"context"
	"time"

	"github.com/stormsim/stormsim/load"
)

// openTracing starts tracing into path; "" traces nothing (nil).
func openTracing(path string) (*load.Tracing, error) {
	if path == "" {
		return nil, nil
	}
	return load.NewTracing(path)
}

// closeTracing writes the trace file, giving the exporter a bounded time.
func closeTracing(t *load.Tracing) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return t.Close(ctx)
}
