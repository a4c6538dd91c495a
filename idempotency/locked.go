package idempotency

import (
	"sync"
	"time"
)

// Locked is a Store guarded by a mutex, for concurrent HTTP handlers. Its
// methods are those of Store and are safe for concurrent use. Callers that
// read their clock before calling may arrive slightly out of time order; the
// store treats an earlier now as the latest seen.
//
// The zero Locked is ready to use with the default Config.
type Locked struct {
	mu sync.Mutex
	s  Store
}

// NewLocked returns an empty store safe for concurrent use.
func NewLocked(c Config) (*Locked, error) {
	s, err := NewStore(c)
	if err != nil {
		return nil, err
	}
	return &Locked{s: *s}, nil
}

// Begin is Store.Begin under the lock.
func (l *Locked) Begin(now time.Duration, scope, key string, digest uint64) (Decision, uint64, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Begin(now, scope, key, digest)
}

// Commit is Store.Commit under the lock.
func (l *Locked) Commit(now time.Duration, scope, key string, fence uint64, result Result) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Commit(now, scope, key, fence, result)
}

// Abort is Store.Abort under the lock.
func (l *Locked) Abort(now time.Duration, scope, key string, fence uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Abort(now, scope, key, fence)
}

// Stats is Store.Stats under the lock.
func (l *Locked) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Stats()
}

// Config returns the store's configuration with defaults applied.
func (l *Locked) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Config()
}
