package transport

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPhaseHistQuantiles: quantiles read from the log buckets lie within
// one bucket (a factor 2^(1/8), +9%) above the exact ones, and never above
// the largest sample.
func TestPhaseHistQuantiles(t *testing.T) {
	var h phaseHist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * 10 * time.Microsecond) // 0.01ms … 10ms
	}
	s := h.stat()
	require.Equal(t, int64(1000), s.Count)
	require.InDelta(t, 5.005, s.MeanMs, 1e-9)
	// 0.01 ms × 1…1000: variance 0.01² × (1000² − 1)/12.
	require.InDelta(t, 0.01*math.Sqrt((1000*1000-1)/12.0), s.SDMs, 1e-9)
	for _, c := range []struct{ got, exact float64 }{{s.P50Ms, 5}, {s.P99Ms, 9.9}} {
		require.GreaterOrEqual(t, c.got, c.exact)
		require.LessOrEqual(t, c.got, c.exact*1.0906)
	}
	require.Equal(t, 10.0, s.MaxMs)
	require.LessOrEqual(t, s.P99Ms, s.MaxMs)
}
