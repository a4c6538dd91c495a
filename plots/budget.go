package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/stormsim/stormsim/metrics"
)

// Budget plots each retry budget's level over time (tokens, or the
// fraction of the allowance left, as the policy reports it): a budget
// drained to zero is one that is refusing retries. Needs budget_level/A->B
// or budget_tokens/A->B columns.
func Budget(r *metrics.Result) (*plot.Plot, error) { return drawn(budgetFigure(r)) }

func budgetFigure(r *metrics.Result) (*figure, error) {
	ts, err := series(r)
	if err != nil {
		return nil, err
	}
	colors := NewColors(r)
	f := newFigure("Retry budget level", "time (s)", "budget left (tokens)")
	f.timeAxis(r)
	for _, e := range entities(r, metrics.MetricBudgetLevel) {
		if err := f.line(timeXYs(ts, ts.Values(metrics.Column(metrics.MetricBudgetLevel, e)), nil), e, colors.Of(e), vg.Points(2), false); err != nil {
			return nil, err
		}
	}
	if f.empty() {
		return nil, ErrNoData
	}
	f.headroom()
	return f, nil
}
