package live_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live"
)

// TestCloseWhileViewersConnect closes the view while viewers keep
// connecting to /events: Close must return without error or panic within
// its context. Close waits for the handlers running; a handler joining
// that count after the wait had begun could panic ("WaitGroup is reused
// before previous Wait has returned", seen once in a full suite run). The
// window is too narrow to hit on demand (400 closes of the old code here
// did not), so this test guards the path; the fix (no handler joins once
// Close has begun) is argued in serveEvents and Close.
func TestCloseWhileViewersConnect(t *testing.T) {
	for range 100 {
		srv, err := live.Start(live.Options{Addr: "127.0.0.1:0", Title: "race"})
		if err != nil {
			t.Fatal(err)
		}
		url := srv.URL() + "events"
		client := &http.Client{Timeout: 2 * time.Second}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i := 0; i < 200 && !stop.Load(); i++ {
					resp, err := client.Get(url)
					if err != nil {
						continue // closed under it
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		// Close with handlers running, so its wait starts above zero
		// and new viewers keep arriving as the running ones end.
		wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.WaitViewer(wctx)
		wcancel()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := srv.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		cancel()
		stop.Store(true)
		wg.Wait()
	}
}
