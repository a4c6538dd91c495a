package shard

import (
	"fmt"
	"time"
)

// StartAt is the wall-clock instant at which every shard of a distributed
// load run starts its schedule (t = 0). Pods of one Job start seconds apart
// and their clocks are kept in step by NTP; waiting for one agreed instant
// rather than each starting on its own keeps the shards' intended send times
// interleaved as the global schedule says. The zero StartAt means "start as
// soon as ready".
type StartAt struct {
	// T is the start instant; the zero time means none was given.
	T time.Time
}

// ParseStartAt parses an RFC 3339 timestamp such as
// 2026-12-01T10:00:00Z (fractional seconds allowed). The empty string gives
// the zero StartAt.
func ParseStartAt(s string) (StartAt, error) {
	if s == "" {
		return StartAt{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return StartAt{}, fmt.Errorf("start-at %q: want an RFC 3339 time such as 2026-12-01T10:00:00Z: %w", s, err)
	}
	return StartAt{T: t}, nil
}

// IsZero reports whether no start instant was given.
func (a StartAt) IsZero() bool { return a.T.IsZero() }

// Delay returns how long a shard whose clock reads now must wait before the
// shared start: a.T − now, or 0 when it is already past. A shard that is
// ready more than maxLate after the start is an error: its first requests
// would all be sent late in one burst, and the run would not be the
// requested schedule. A shard that is late by less starts at once and keeps
// a.T as its t = 0, so requests already due are sent immediately and their
// latency, measured from their intended time, includes the lateness. The
// zero StartAt returns 0 and no error.
func (a StartAt) Delay(now time.Time, maxLate time.Duration) (time.Duration, error) {
	if a.IsZero() {
		return 0, nil
	}
	d := a.T.Sub(now)
	if d >= 0 {
		return d, nil
	}
	if -d > maxLate {
		return 0, fmt.Errorf("start-at %s passed %v ago, more than the allowed %v: pick a later start (several minutes ahead of kubectl apply)", a, (-d).Round(time.Millisecond), maxLate)
	}
	return 0, nil
}

// Epoch returns the instant t = 0 of the run: a.T, or ready when no start
// was given. Intended send times are offsets from it.
func (a StartAt) Epoch(ready time.Time) time.Time {
	if a.IsZero() {
		return ready
	}
	return a.T
}

// String returns the instant in RFC 3339 (UTC, nanoseconds as needed), or
// "" for the zero StartAt.
func (a StartAt) String() string {
	if a.IsZero() {
		return ""
	}
	return a.T.UTC().Format(time.RFC3339Nano)
}

// Set parses a flag value; with Type and String it makes *StartAt a
// pflag.Value.
func (a *StartAt) Set(v string) error {
	p, err := ParseStartAt(v)
	if err != nil {
		return err
	}
	*a = p
	return nil
}

// Type names the flag value's kind in usage text.
func (a *StartAt) Type() string { return "RFC3339" }
