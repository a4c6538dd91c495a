package policies

import "fmt"

// Validate reports a field that cannot describe a retry policy, after
// expanding its preset.
func (c RetryConfig) Validate() error {
	c, err := c.WithPreset()
	if err != nil {
		return err
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("retry.max_attempts: must be ≥ 1, got %d", c.MaxAttempts)
	}
	if _, err := ParseOutcomeSet(c.On, DefaultRetryOn); err != nil {
		return fmt.Errorf("retry.on: %w", err)
	}
	for _, n := range c.On {
		if o, _ := ParseOutcome(n); o == OK || o == Conflict || o == BreakerOpen || o == Throttled {
			return fmt.Errorf("retry.on: %q cannot be retried (want unavailable, timeout, error or in_progress)", n)
		}
	}
	if err := c.Backoff.Validate(); err != nil {
		return fmt.Errorf("retry.%w", err)
	}
	return nil
}

// Validate reports a field that cannot describe a backoff.
func (c BackoffConfig) Validate() error {
	_, err := NewBackoff(c)
	return err
}
