package serve

import (
	"net/http"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
)

// TestServiceRateLimitOverHTTP: a local rate limit of 3 tokens refilled
// once an hour answers a burst of 5 requests with 3 successes and two 429s
// whose Retry-After points at the next fill (whole seconds, rounded up) and
// which the driver classifies as unavailable.
func TestServiceRateLimitOverHTTP(t *testing.T) {
	sc := oneService(4, 10, time.Millisecond)
	sc.Services[0].Overload.RateLimit = &policies.RateLimitConfig{MaxTokens: 3, FillInterval: time.Hour}
	_, srv := startService(t, sc, false)
	var codes []int
	var last http.Header
	for range 5 {
		resp, err := http.Get(srv.URL + "/svc")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		last = resp.Header
	}
	want := []int{200, 200, 200, http.StatusTooManyRequests, http.StatusTooManyRequests}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes %v, want %v", codes, want)
		}
	}
	a := transport.ClassifyStatus(http.StatusTooManyRequests, last)
	if a.Outcome != policies.Unavailable {
		t.Errorf("429 classified %v, want unavailable", a.Outcome)
	}
	if a.RetryAfter < 59*time.Minute || a.RetryAfter > time.Hour {
		t.Errorf("Retry-After %v, want just under an hour (the next fill)", a.RetryAfter)
	}
	if st := getStats(t, srv.URL); st.All.Rejected != 2 {
		t.Errorf("rejected %d, want 2", st.All.Rejected)
	}
}
