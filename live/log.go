package live

import (
	"strconv"
	"sync"
)

// eventLog is the shared, bounded log of encoded events. The publisher
// appends and never waits; each viewer reads from its own cursor. Events
// are immutable once appended, so readers hold them without copying.
type eventLog struct {
	mu        sync.Mutex
	maxEvents int
	maxBytes  int
	// ring holds the retained events, oldest at head; first is the
	// sequence number of the oldest, next the one the next event gets.
	ring        [][]byte
	head, count int
	bytes       int
	first, next uint64
	ended       bool
	// wake is closed (and replaced) when an event arrives or the log ends.
	wake    chan struct{}
	dropped int64
}

// cursor is one viewer's position: the sequence number it reads next.
type cursor struct{ seq uint64 }

func (l *eventLog) init(maxEvents, maxBytes int) {
	l.maxEvents, l.maxBytes = maxEvents, maxBytes
	l.ring = make([][]byte, maxEvents)
	l.wake = make(chan struct{})
}

// append adds an event (its "event:" and "data:" lines), headed by an
// "id:" line with its sequence number, so that a browser reconnecting
// says where it stopped (Last-Event-ID); it drops the oldest events past
// the bounds.
func (l *eventLog) append(frame []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	ev := make([]byte, 0, len(frame)+24)
	ev = append(ev, "id: "...)
	ev = strconv.AppendUint(ev, l.next, 10)
	ev = append(ev, '\n')
	ev = append(ev, frame...)
	for l.count > 0 && (l.count == l.maxEvents || l.bytes+len(ev) > l.maxBytes) {
		l.bytes -= len(l.ring[l.head])
		l.ring[l.head] = nil
		l.head = (l.head + 1) % l.maxEvents
		l.count--
		l.first++
	}
	l.ring[(l.head+l.count)%l.maxEvents] = ev
	l.count++
	l.bytes += len(ev)
	l.next++
	close(l.wake)
	l.wake = make(chan struct{})
}

// oldest returns a cursor at the oldest event the log holds: where a new
// viewer starts, so that it is not told of events lost before it came.
func (l *eventLog) oldest() cursor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cursor{seq: l.first}
}

// after returns a cursor just after event id, for a viewer that
// reconnects having read up to it: what it has not read, as far as the
// log reaches back (read reports what it can no longer have).
func (l *eventLog) after(id uint64) cursor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cursor{seq: min(id+1, l.next)}
}

// end marks the log complete and wakes every reader.
func (l *eventLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		close(l.wake)
	}
}

// read appends to batch the events after c (at most 64), moving c past
// them. skipped counts the events c had missed because they left the log;
// ended reports that the log is complete and c has read all of it; wake is
// closed when there may be more to read.
func (l *eventLog) read(c *cursor, batch [][]byte) (out [][]byte, skipped int64, ended bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.seq < l.first {
		skipped = int64(l.first - c.seq)
		l.dropped += skipped
		c.seq = l.first
	}
	for c.seq < l.next && len(batch) < 64 {
		batch = append(batch, l.ring[(l.head+int(c.seq-l.first))%l.maxEvents])
		c.seq++
	}
	return batch, skipped, l.ended && c.seq == l.next, l.wake
}

func (l *eventLog) droppedTotal() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}
