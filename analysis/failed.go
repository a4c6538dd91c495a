package analysis

import (
	"errors"
	"fmt"
	"strings"
)

// StatusFailed is the status of a unit whose run failed: its row holds no
// measures, and the sweep goes on with the other units.
const StatusFailed = "failed"

// ErrUnitsFailed is wrapped by RunSweep's error when some units failed
// and every other one ran: the rows are all there, the failed ones marked.
var ErrUnitsFailed = errors.New("units failed")

// failedRow is the row of a unit whose run failed.
func failedRow(s *Sweep, u Unit) Row {
	return Row{Unit: u, Param: s.Param, Value: s.Values[u.Point], VariantName: s.Variants[u.Variant].Name,
		Measures: Measures{Status: StatusFailed}}
}

// failures is the error of a sweep some of whose units failed: it prints
// how many and the first few, and wraps ErrUnitsFailed and every one.
type failures struct {
	errs  []error
	total int
}

func unitsFailed(errs []error, total int) error { return &failures{errs, total} }

func (f *failures) Error() string {
	const shown = 3
	var b strings.Builder
	fmt.Fprintf(&b, "sweep: %d of %d units failed (status %s in their rows)", len(f.errs), f.total, StatusFailed)
	for _, err := range f.errs[:min(len(f.errs), shown)] {
		b.WriteString("\n" + err.Error())
	}
	if len(f.errs) > shown {
		fmt.Fprintf(&b, "\nand %d more", len(f.errs)-shown)
	}
	return b.String()
}

func (f *failures) Unwrap() []error { return append([]error{ErrUnitsFailed}, f.errs...) }

// MaxUnits bounds the runs of one sweep (values × variants × replicas):
// each is laid out before the first runs, and --replicas 1e9 ran out of
// memory instead of failing.
const MaxUnits = 1_000_000
