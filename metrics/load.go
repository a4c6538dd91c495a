package metrics

// LoadReport is the load driver's own account of a real-HTTP run: how well
// it kept its schedule and how attempts failed at the transport level. It
// appears in Summary.Load only for runs of `stormsim load`.
type LoadReport struct {
	// Target is the URL driven (or the entry service of a scenario).
	Target string `json:"target"`
	// TargetRPS is the scheduled rate (mean over the run); OfferedRPS is
	// the rate at which logical requests were actually dispatched.
	TargetRPS  float64 `json:"target_rps"`
	OfferedRPS float64 `json:"offered_rps"`
	// Scheduled counts logical requests due during the run, warm-up
	// included; Sent those dispatched to a sender.
	Scheduled int64 `json:"scheduled"`
	Sent      int64 `json:"sent"`
	// Late counts requests dispatched more than LateThresholdMs after their
	// intended time (every sender was busy); their latency includes it.
	Late            int64   `json:"late"`
	LateThresholdMs float64 `json:"late_threshold_ms"`
	// Unsent counts requests that were due but never dispatched: no sender
	// came free within the allowed lateness, or the run was interrupted.
	// They count as failed logical requests.
	Unsent int64 `json:"unsent"`
	// Workers and Connections are the sender and connection pool sizes;
	// MaxInFlight is the most logical requests in flight at once.
	Workers     int   `json:"workers"`
	Connections int   `json:"connections"`
	MaxInFlight int64 `json:"max_in_flight"`
	// Attempts counts the attempts sent after the warm-up (the same as the
	// client edge's attempts), each once, when it ended: Answered got an
	// HTTP answer (Statuses splits them by code); the Kind fields split
	// the rest by how they ended without one, Canceled being those their
	// call or the run let go of (a hedge's loser, a call given up).
	// Attempts = Answered + ConnectFailures + Timeouts + Resets +
	// Canceled + OtherErrors (docs/concepts.md, "Counting in load mode").
	Attempts        int64 `json:"attempts"`
	Answered        int64 `json:"answered"`
	ConnectFailures int64 `json:"connect_failures"`
	Timeouts        int64 `json:"timeouts"`
	Resets          int64 `json:"resets"`
	Canceled        int64 `json:"canceled"`
	OtherErrors     int64 `json:"other_errors"`
	// Statuses counts HTTP answers by status code; they add up to Answered.
	Statuses map[string]int64 `json:"statuses,omitempty"`
	// Unmeasured names the services whose server-side figures the driver
	// cannot see (a --target: its utilization, queue and attempt
	// latency): they are shown as "-", not 0.
	Unmeasured []string `json:"unmeasured,omitempty"`
}
