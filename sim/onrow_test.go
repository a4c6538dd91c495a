package sim

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// OnRow sees every row of the series as its interval closes, in order,
// with the series' columns, and the run with the hook is the run without
// it, byte for byte: watching changes nothing.
func TestOnRowSeesEveryRowAndChangesNothing(t *testing.T) {
	plain := runScenario(t, goldenScenario())
	var starts []time.Duration
	var rows [][]float64
	var cols []string
	var progressAt []time.Duration
	res, err := Run(context.Background(), goldenScenario(), Options{
		OnRow: func(start time.Duration, c []string, row []float64) {
			starts, rows = append(starts, start), append(rows, slices.Clone(row))
			cols = c
		},
		Progress: func(now, _ time.Duration) { progressAt = append(progressAt, now) },
	})
	require.NoError(t, err)
	require.Equal(t, res.Series.Columns, cols)
	require.Equal(t, res.Series.Rows, rows)
	for i, s := range starts {
		require.Equal(t, res.Series.Start+time.Duration(i)*res.Series.Interval, s, "row %d", i)
	}
	// A row is sent before the progress report of the time it closes.
	for i, at := range progressAt {
		require.Less(t, starts[i], at)
	}
	a, _ := json.Marshal(plain.Summary)
	b, _ := json.Marshal(res.Summary)
	require.JSONEq(t, string(a), string(b))
	a, _ = json.Marshal(plain.Series)
	b, _ = json.Marshal(res.Series)
	require.Equal(t, string(a), string(b))
}
