package sim

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"unsafe"
)

// Fork returns a new trajectory in the state t has reached, every random
// stream reseeded from seed; t is left as it was and may go on or fork
// again. It is Resume(t.Snapshot(), seed) without the replay: the state is
// copied instead of rebuilt, so a splitting estimator that restarts many
// runs from one crossing state pays for each a copy of the run's records
// rather than a re-simulation of its whole past.
//
// The copy is generic: it follows every field of the run's records by
// reflection, so a field added to the model is copied without anyone
// listing it. Handler closures bound to the run cannot be copied that way;
// they are taken from a freshly built run of the same scenario, whose
// records at the same places become the copies (fork's skeleton). When
// the state holds something the copy cannot follow (a channel, an unsafe
// pointer, a function not bound at build), Fork reports it and the caller
// can fall back on Resume, which is always exact.
//
// Forks of one state share the walk of it: the first finds the state's
// records and every pointer between them (the plan of the copy), and
// later forks, until t steps on, only copy the records and rewrite those
// pointers.
func (t *Trajectory) Fork(seed uint64) (*Trajectory, error) {
	t.forkMu.Lock()
	defer t.forkMu.Unlock()
	if t.forker == nil {
		t.forker = cloners.Get().(*cloner)
	}
	m, err := t.forker.cloneRun(t.m)
	if err != nil {
		t.forker = nil
		return nil, err
	}
	m.reseed(seed)
	return &Trajectory{
		m:         m,
		path:      append(slices.Clip(t.path), branchPoint{at: t.m.eng.Now(), seed: seed}),
		inherited: m.eng.Events(),
	}, nil
}

func newCloner() *cloner {
	return &cloner{
		seen:    map[uintptr]int{},
		paired:  map[blockKey]unsafe.Pointer{},
		taken:   map[unsafe.Pointer]bool{},
		common:  map[unsafe.Pointer]bool{},
		funcs:   map[unsafe.Pointer]unsafe.Pointer{},
		maps:    map[unsafe.Pointer]reflect.Value{},
		groupOf: map[reflect.Type]int{},
	}
}

// cloneRun returns a deep copy of m whose closures are bound to the copy,
// planning the copy first if c has not yet (c plans one state of m, the
// one it first sees). A Trajectory records no Result, so the latency
// counts of the copy start empty instead of being copied (about 180 KB
// each).
func (c *cloner) cloneRun(m *run) (*run, error) {
	sk, err := build(m.sc)
	if err != nil {
		return nil, err
	}
	sk.eachCounts((*latencyCounts).useScratch) // a trajectory's: nobody reads them
	defer c.endFork()
	rl := runLayout()
	// Pair the skeleton's records with the run's by place. The engine is
	// left out: it holds only events, whose places differ between runs and
	// whose handlers are the run's bound closures, paired where the run
	// keeps them.
	root := blockKey{uintptr(unsafe.Pointer(m)), rl, 1}
	c.paired[root], c.taken[unsafe.Pointer(sk)] = unsafe.Pointer(sk), true
	for _, s := range rl.slots {
		if s.off != unsafe.Offsetof(m.eng) {
			c.pairSlot(unsafe.Add(unsafe.Pointer(m), s.off), unsafe.Add(unsafe.Pointer(sk), s.off), &s)
		}
	}
	if k := (blockKey{uintptr(unsafe.Pointer(m.eng)), engineLayout(), 1}); c.paired[k] == nil {
		c.paired[k] = unsafe.Pointer(sk.eng)
	}

	if !c.planned {
		c.walk(unsafe.Pointer(m), rl, 1)
		if c.err == nil {
			c.plan()
		}
		if c.err == nil {
			c.group()
		}
		c.planned = c.err == nil
	}
	if c.err == nil {
		c.place()
	}
	if c.err == nil {
		c.apply()
	}
	if c.err != nil {
		sk.releaseCounts()
		return nil, fmt.Errorf("sim: cannot copy the run's state: %w", c.err)
	}
	out := (*run)(c.translate(unsafe.Pointer(m)))
	if out != sk {
		return nil, fmt.Errorf("sim: cannot copy the run's state: the copy is not the skeleton")
	}
	return out, nil
}

// reset forgets the plan, keeping the room of its slices and maps, for
// another state.
func (c *cloner) reset() {
	c.endFork()
	clear(c.seen)
	c.blocks, c.tops, c.relocs = emptied(c.blocks), c.tops[:0], c.relocs[:0]
	c.fnSrc, c.values = emptied(c.fnSrc), emptied(c.values)
	clear(c.common)
	clear(c.fnIndex)
	clear(c.mapsSeen)
	c.groups = c.groups[:0]
	clear(c.groupOf)
	c.planned, c.err = false, nil
}

// cloners recycles the cloners of trajectories closed, so that planning
// a copy seldom allocates.
var cloners = sync.Pool{New: func() any { return newCloner() }}

// endFork forgets what one copy made, keeping the plan (and the maps'
// room), so that the cloner holds nothing of the copy.
func (c *cloner) endFork() {
	clear(c.paired)
	clear(c.taken)
	clear(c.funcs)
	clear(c.maps)
	c.dst, c.fnDst, c.bases = emptied(c.dst), emptied(c.fnDst), emptied(c.bases)
}

// emptied returns s with no elements, its room kept and cleared (so that
// it holds on to nothing).
func emptied[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// blockKey names a block of the original state: its address, the layout
// of its elements and, when pairing, their number.
type blockKey struct {
	addr uintptr
	l    *layout
	n    int
}

// block is a piece of memory the state points to: a pointer's target
// (n = 1) or a slice's backing array (n = its capacity). Blocks lying
// inside another (a field, an element) are copied with it; top is the
// index of the block holding them all.
type block struct {
	src  unsafe.Pointer // the original (addr, kept as a pointer)
	addr uintptr
	typ  reflect.Type
	l    *layout
	n    int
	size uintptr
	top  int
	next int // 1 + the index of the next block at addr, 0 for none
	// group is 1 + the index of the allocGroup whose memory holds its
	// copy (slot-th of the group's), 0 when its copy has memory of its own.
	group, slot int
	// arr is the type of the whole block (typ or an array of n typ),
	// for a top block, so that its copy is one typed move.
	arr reflect.Type
}

// reloc is a pointer of the state to rewrite in each copy: the one at
// off in the top block at (a position in tops). A relocPointer points
// toff into the top block to; a relocFunc holds the run's closure
// fnSrc[to], which becomes the skeleton's; a relocValue is an interface
// or a map of type values[to], whose contents are copied each time.
type reloc struct {
	kind      uint8
	at, to    int32
	off, toff uintptr
}

const (
	relocPointer = iota
	relocFunc
	relocValue
)

// cloner copies one state of a run, as often as asked. The original's
// memory stays reachable (from the trajectory being forked) while it
// works, so addresses are stable. The plan (blocks, tops, relocs, common)
// is made by the first copy; the rest is each copy's own.
type cloner struct {
	seen    map[uintptr]int // 1 + the index of the last block found at each address
	blocks  []block
	tops    []int // top blocks, by address
	relocs  []reloc
	common  map[unsafe.Pointer]bool // records both builds point to, shared
	planned bool
	// fnSrc are the run's closures the state holds, each once; a
	// relocFunc's to indexes them, and fnDst, each copy's, like them.
	fnSrc   []unsafe.Pointer
	fnIndex map[unsafe.Pointer]int
	fnDst   []unsafe.Pointer
	values  []reflect.Type // the types of relocValues
	order   []int          // plan's scratch
	groups  []allocGroup
	groupOf map[reflect.Type]int
	bases   []unsafe.Pointer // each group's memory in a copy

	paired map[blockKey]unsafe.Pointer
	taken  map[unsafe.Pointer]bool
	funcs  map[unsafe.Pointer]unsafe.Pointer // closure of the run → the skeleton's
	maps   map[unsafe.Pointer]reflect.Value  // map of the run → its copy
	dst    []unsafe.Pointer                  // where each top block is copied, by position in tops
	err    error
	// mapsSeen holds the maps the walk met; collectFuncs walks without
	// checking functions (tests list a state's records with it).
	mapsSeen     map[unsafe.Pointer]bool
	dyn          map[unsafe.Pointer]*layout // the layout of each type word met
	collectFuncs bool
	// share, when set, replaces shared in the walk (tests walk with a
	// stricter rule, to catch shared being widened).
	share func(reflect.Type) bool
}

func (c *cloner) skip(l *layout) bool {
	if c.share != nil {
		return c.share(l.typ)
	}
	return l.shared
}

func (c *cloner) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// topologyPath is the package of the scenario's types: validated once and
// never written by a run, they are shared by the copy.
const topologyPath = "github.com/stormsim/stormsim/topology"

func shared(t reflect.Type) bool { return t.PkgPath() == topologyPath || t.Size() == 0 }

var latencyCountsType = reflect.TypeFor[latencyCounts]()

var (
	runLayout    = sync.OnceValue(func() *layout { return layoutOf(reflect.TypeFor[run]()) })
	engineLayout = sync.OnceValue(func() *layout { return layoutOf(reflect.TypeFor[Engine]()) })
)

// hasPointers reports whether values of a type hold pointers that the
// copy must follow (strings are immutable and shared).
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// layout is what the copy needs of a type, worked out once: where its
// values hold pointers (slots), each with the layout of what it points to,
// so that walking a value takes neither reflection nor a lookup.
type layout struct {
	typ    reflect.Type
	size   uintptr
	ptrs   bool // values hold pointers the copy follows
	shared bool // shared by the copy (shared)
	fresh  bool // latency counts: a new empty one instead of a copy
	slots  []slot
}

// slot is a place in a value that holds a pointer the copy follows: at
// off, of type typ; an array of n > 0 such values is one slot. elem is
// the layout of a pointer's target, a slice's elements or an array's.
type slot struct {
	off  uintptr
	typ  reflect.Type
	kind reflect.Kind
	elem *layout
	n    int
	// eface: an interface without methods (any), whose type word is the
	// dynamic type's.
	eface bool
}

// layouts holds the layouts made, each published whole; making them is
// serialized so that those of recursive types are made once.
var (
	layouts  sync.Map
	layoutMu sync.Mutex
)

func layoutOf(t reflect.Type) *layout {
	if l, ok := layouts.Load(t); ok {
		return l.(*layout)
	}
	layoutMu.Lock()
	defer layoutMu.Unlock()
	made := map[reflect.Type]*layout{}
	l := makeLayout(t, made)
	for t, l := range made {
		layouts.Store(t, l)
	}
	return l
}

func makeLayout(t reflect.Type, made map[reflect.Type]*layout) *layout {
	if l, ok := layouts.Load(t); ok {
		return l.(*layout)
	}
	if l := made[t]; l != nil {
		return l
	}
	l := &layout{typ: t, size: t.Size(), ptrs: hasPointers(t), shared: shared(t), fresh: t == latencyCountsType}
	made[t] = l
	// The leaves of its structs, with arrays of pointerful elements kept
	// whole.
	var walk func(off uintptr, t reflect.Type)
	walk = func(off uintptr, t reflect.Type) {
		if !hasPointers(t) {
			return
		}
		s := slot{off: off, typ: t, kind: t.Kind()}
		switch s.kind {
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				walk(off+f.Offset, f.Type)
			}
			return
		case reflect.Pointer, reflect.Slice:
			s.elem = makeLayout(t.Elem(), made)
		case reflect.Array:
			s.elem, s.n = makeLayout(t.Elem(), made), t.Len()
		case reflect.Interface:
			s.eface = t.NumMethod() == 0
		}
		l.slots = append(l.slots, s)
	}
	walk(0, t)
	return l
}

// pair walks the run's value at o and the skeleton's at n, both of layout
// l, and records which skeleton record stands at the place of which run
// record, and which skeleton closure at the place of which run closure.
func (c *cloner) pair(o, n unsafe.Pointer, l *layout) {
	for i := range l.slots {
		s := &l.slots[i]
		c.pairSlot(unsafe.Add(o, s.off), unsafe.Add(n, s.off), s)
	}
}

func (c *cloner) pairSlot(o, n unsafe.Pointer, s *slot) {
	switch s.kind {
	case reflect.Pointer:
		c.pairTarget(*(*unsafe.Pointer)(o), *(*unsafe.Pointer)(n), s.elem, 1)
	case reflect.Slice:
		ho, hn := (*sliceHeader)(o), (*sliceHeader)(n)
		if ho.data == nil || hn.data == nil || s.elem.shared {
			return
		}
		if ho.cap == hn.cap && ho.len == hn.len {
			c.pairTarget(ho.data, hn.data, s.elem, ho.cap)
			return
		}
		for i := range min(ho.len, hn.len) {
			c.pair(unsafe.Add(ho.data, uintptr(i)*s.elem.size), unsafe.Add(hn.data, uintptr(i)*s.elem.size), s.elem)
		}
	case reflect.Array:
		for i := range s.n {
			c.pair(unsafe.Add(o, uintptr(i)*s.elem.size), unsafe.Add(n, uintptr(i)*s.elem.size), s.elem)
		}
	case reflect.Interface:
		vo, vn := reflect.NewAt(s.typ, o).Elem(), reflect.NewAt(s.typ, n).Elem()
		if vo.IsNil() || vn.IsNil() || vo.Elem().Type() != vn.Elem().Type() || vo.Elem().Kind() != reflect.Pointer {
			return
		}
		c.pairTarget(vo.Elem().UnsafePointer(), vn.Elem().UnsafePointer(), layoutOf(vo.Elem().Type().Elem()), 1)
	case reflect.Map:
		vo, vn := reflect.NewAt(s.typ, o).Elem(), reflect.NewAt(s.typ, n).Elem()
		if vo.IsNil() || vn.IsNil() || s.typ.Elem().Kind() != reflect.Pointer {
			return
		}
		el := layoutOf(s.typ.Elem().Elem())
		for it := vo.MapRange(); it.Next(); {
			if w := vn.MapIndex(it.Key()); w.IsValid() && !it.Value().IsNil() && !w.IsNil() {
				c.pairTarget(it.Value().UnsafePointer(), w.UnsafePointer(), el, 1)
			}
		}
	case reflect.Func:
		fo, fn := *(*unsafe.Pointer)(o), *(*unsafe.Pointer)(n)
		if fo != nil && fn != nil {
			if _, ok := c.funcs[fo]; !ok {
				c.funcs[fo] = fn
			}
		}
	}
}

// pairTarget pairs the blocks of cnt elements of layout l at o (the run's)
// and n (the skeleton's).
func (c *cloner) pairTarget(o, n unsafe.Pointer, l *layout, cnt int) {
	if o == nil || n == nil || l.shared {
		return
	}
	k := blockKey{uintptr(o), l, cnt}
	if l.fresh {
		c.paired[k] = n
		return
	}
	if o == n {
		// Both builds point to it: it is the scenario's, not the run's
		// (two runs of one scenario share it, so no run writes it).
		c.common[o] = true
		return
	}
	if _, ok := c.paired[k]; ok || c.taken[n] {
		return
	}
	c.paired[k], c.taken[n] = n, true
	for i := range cnt {
		c.pair(unsafe.Add(o, uintptr(i)*l.size), unsafe.Add(n, uintptr(i)*l.size), l)
	}
}

// block records the block at p of n elements of type t and walks it for
// the blocks it points to.
func (c *cloner) block(p unsafe.Pointer, t reflect.Type, n int) { c.walk(p, layoutOf(t), n) }

// walk is block with t's layout.
func (c *cloner) walk(p unsafe.Pointer, l *layout, n int) {
	if p == nil || n == 0 || c.err != nil || c.skip(l) || c.common[p] {
		return
	}
	// The blocks at one address, of different layouts, are chained
	// (a record and its first field).
	first, ok := c.seen[uintptr(p)]
	i := first - 1
	for ok && i >= 0 && c.blocks[i].l != l {
		i = c.blocks[i].next - 1
	}
	from := 0
	if ok && i >= 0 {
		if c.blocks[i].n >= n {
			return
		}
		from = c.blocks[i].n
		c.blocks[i].n, c.blocks[i].size = n, uintptr(n)*l.size
	} else {
		c.seen[uintptr(p)] = len(c.blocks) + 1
		c.blocks = append(c.blocks, block{src: p, addr: uintptr(p), typ: l.typ, l: l, n: n, size: uintptr(n) * l.size, next: first})
	}
	if l.fresh || !l.ptrs {
		return
	}
	for i := from; i < n; i++ {
		c.visit(unsafe.Add(p, uintptr(i)*l.size), l)
	}
}

// visit walks the value at p of layout l for the blocks it points to.
func (c *cloner) visit(p unsafe.Pointer, l *layout) {
	for i := range l.slots {
		s := &l.slots[i]
		q := unsafe.Add(p, s.off)
		if s.kind == reflect.Pointer {
			// Inline: most pointers of a big state are nil (an engine's
			// empty buckets).
			if t := *(*unsafe.Pointer)(q); t != nil {
				c.walk(t, s.elem, 1)
			}
			continue
		}
		c.visitSlot(q, s)
	}
}

func (c *cloner) visitSlot(p unsafe.Pointer, s *slot) {
	if c.err != nil {
		return
	}
	switch s.kind {
	case reflect.Pointer:
		c.walk(*(*unsafe.Pointer)(p), s.elem, 1)
	case reflect.Slice:
		h := (*sliceHeader)(p)
		c.walk(h.data, s.elem, h.cap)
	case reflect.Array:
		if e := s.elem; len(e.slots) == 1 && e.slots[0].kind == reflect.Pointer {
			for i := range s.n {
				if t := *(*unsafe.Pointer)(unsafe.Add(p, uintptr(i)*e.size+e.slots[0].off)); t != nil {
					c.walk(t, e.slots[0].elem, 1)
				}
			}
			return
		}
		for i := range s.n {
			c.visit(unsafe.Add(p, uintptr(i)*s.elem.size), s.elem)
		}
	case reflect.Interface:
		d, data := c.dynamic(p, s)
		switch {
		case d == nil:
		case d.typ.Kind() == reflect.Pointer:
			c.walk(data, d.slots[0].elem, 1)
		default:
			c.visitValue(reflect.NewAt(s.typ, p).Elem().Elem())
		}
	case reflect.Map:
		v := reflect.NewAt(s.typ, p).Elem()
		if v.IsNil() {
			return
		}
		if c.mapsSeen == nil {
			c.mapsSeen = map[unsafe.Pointer]bool{}
		}
		if c.mapsSeen[v.UnsafePointer()] {
			return
		}
		c.mapsSeen[v.UnsafePointer()] = true
		for it := v.MapRange(); it.Next(); {
			c.visitValue(it.Key())
			c.visitValue(it.Value())
		}
	case reflect.Func:
		if f := *(*unsafe.Pointer)(p); f != nil && !c.collectFuncs {
			if _, ok := c.funcs[f]; !ok {
				c.fail("a function of type %v not bound when the run was built", s.typ)
			}
		}
	default: // channels, unsafe pointers
		c.fail("a value of type %v", s.typ)
	}
}

// dynamic returns the layout of the value the interface at p (slot s)
// holds and the interface's data word, or nil when it is nil.
func (c *cloner) dynamic(p unsafe.Pointer, s *slot) (*layout, unsafe.Pointer) {
	w := *(*unsafe.Pointer)(p) // the type word (an itab for non-empty interfaces)
	if w == nil {
		return nil, nil
	}
	data := *(*unsafe.Pointer)(unsafe.Add(p, unsafe.Sizeof(w)))
	if l := c.dyn[w]; l != nil {
		return l, data
	}
	var t reflect.Type
	if s.eface {
		t = reflect.TypeOf(*(*any)(p))
	} else {
		t = reflect.NewAt(s.typ, p).Elem().Elem().Type()
	}
	if c.dyn == nil {
		c.dyn = map[unsafe.Pointer]*layout{}
	}
	l := layoutOf(t)
	c.dyn[w] = l
	return l, data
}

func (c *cloner) visitValue(v reflect.Value) {
	tmp := reflect.New(v.Type())
	tmp.Elem().Set(v)
	c.visit(tmp.UnsafePointer(), layoutOf(v.Type()))
}

// plan finds the top blocks and the pointers in them that each copy must
// rewrite.
func (c *cloner) plan() {
	order := c.order[:0]
	for i := range c.blocks {
		order = append(order, i)
	}
	c.order = order
	slices.SortFunc(order, func(a, b int) int {
		x, y := &c.blocks[a], &c.blocks[b]
		switch {
		case x.addr != y.addr:
			return cmpAddr(x.addr, y.addr)
		default:
			return cmpAddr(y.size, x.size)
		}
	})
	var end uintptr
	cur := -1
	for _, i := range order {
		b := &c.blocks[i]
		if cur >= 0 && b.addr < end {
			if b.addr+b.size > end {
				c.fail("overlapping records of types %v and %v", c.blocks[cur].typ, b.typ)
				return
			}
			b.top = cur
			continue
		}
		cur, end, b.top = i, b.addr+b.size, i
		c.tops = append(c.tops, i)
	}
	for at, i := range c.tops {
		b := &c.blocks[i]
		if b.arr = b.typ; b.n != 1 {
			b.arr = reflect.ArrayOf(b.n, b.typ)
		}
		if b.l.fresh {
			if b.n != 1 {
				c.fail("an array of latency counts")
				return
			}
			continue
		}
		if !b.l.ptrs {
			continue
		}
		for k := range b.n {
			c.relocations(unsafe.Add(b.src, uintptr(k)*b.l.size), b.l, at, b.addr)
		}
	}
}

func cmpAddr(a, b uintptr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// relocations records the pointers of the value at p, of layout l, that a
// copy must rewrite; the value lies in the top block at (position in
// tops), which begins at base.
func (c *cloner) relocations(p unsafe.Pointer, l *layout, at int, base uintptr) {
	for i := range l.slots {
		if c.err != nil {
			return
		}
		s := &l.slots[i]
		q := unsafe.Add(p, s.off)
		off := uintptr(q) - base
		switch s.kind {
		case reflect.Pointer:
			if t := *(*unsafe.Pointer)(q); t != nil {
				c.addPointer(t, s.elem, at, off)
			}
		case reflect.Slice:
			if h := (*sliceHeader)(q); h.cap > 0 {
				c.addPointer(h.data, s.elem, at, off)
			}
		case reflect.Array:
			if e := s.elem; len(e.slots) == 1 && e.slots[0].kind == reflect.Pointer {
				// Inline: an array of pointers, or of records with one
				// (an engine's buckets), is mostly nil.
				for k := range s.n {
					r := unsafe.Add(q, uintptr(k)*e.size+e.slots[0].off)
					if t := *(*unsafe.Pointer)(r); t != nil {
						c.addPointer(t, e.slots[0].elem, at, uintptr(r)-base)
					}
				}
				continue
			}
			for k := range s.n {
				c.relocations(unsafe.Add(q, uintptr(k)*s.elem.size), s.elem, at, base)
			}
		case reflect.Interface:
			// A pointer held is rewritten in place (the type word stays); a
			// value held without pointers is immutable and shared, one with
			// pointers copied each time.
			switch d, data := c.dynamic(q, s); {
			case d == nil || !d.ptrs:
			case d.typ.Kind() == reflect.Pointer:
				c.addPointer(data, d.slots[0].elem, at, off+unsafe.Sizeof(data))
			default:
				c.addValue(at, off, s.typ)
			}
		case reflect.Map:
			if *(*unsafe.Pointer)(q) != nil {
				c.addValue(at, off, s.typ)
			}
		case reflect.Func:
			if f := *(*unsafe.Pointer)(q); f != nil {
				i, ok := c.fnIndex[f]
				if !ok {
					if c.fnIndex == nil {
						c.fnIndex = map[unsafe.Pointer]int{}
					}
					i = len(c.fnSrc)
					c.fnIndex[f], c.fnSrc = i, append(c.fnSrc, f)
				}
				c.relocs = append(c.relocs, reloc{kind: relocFunc, at: int32(at), off: off, to: int32(i)})
			}
		}
	}
}

// addPointer records that the pointer at off in top block at, to p (to
// elements of layout l), must point to the copy of what it points to.
func (c *cloner) addPointer(p unsafe.Pointer, l *layout, at int, off uintptr) {
	if p == nil || l.shared || c.common[p] {
		return
	}
	to, ok := c.locate(p)
	if !ok {
		return
	}
	c.relocs = append(c.relocs, reloc{kind: relocPointer, at: int32(at), off: off, to: int32(to), toff: uintptr(p) - c.blocks[c.tops[to]].addr})
}

// addValue records that the interface or map at off in top block at, of
// type t, must be copied.
func (c *cloner) addValue(at int, off uintptr, t reflect.Type) {
	c.relocs = append(c.relocs, reloc{kind: relocValue, at: int32(at), off: off, to: int32(len(c.values))})
	c.values = append(c.values, t)
}

// locate returns the position in tops of the block holding p.
func (c *cloner) locate(p unsafe.Pointer) (int, bool) {
	a := uintptr(p)
	i := sort.Search(len(c.tops), func(i int) bool { return c.blocks[c.tops[i]].addr > a }) - 1
	if i < 0 {
		c.fail("a pointer outside the state")
		return 0, false
	}
	b := &c.blocks[c.tops[i]]
	if a >= b.addr+max(b.size, 1) {
		c.fail("a pointer outside the state (to %v)", b.typ)
		return 0, false
	}
	return i, true
}

// place gives each top block its destination (the skeleton's record
// paired with it, or new memory) and copies its bytes there.
func (c *cloner) place() {
	for _, g := range c.groups {
		c.bases = append(c.bases, reflect.MakeSlice(g.slice, g.n, g.n).UnsafePointer())
	}
	for _, i := range c.tops {
		b := &c.blocks[i]
		d, ok := c.paired[blockKey{b.addr, b.l, b.n}]
		switch {
		case b.l.fresh:
			// The skeleton's own empty counts when it has them at this place.
			if !ok {
				lc := newLatencyCounts()
				lc.useScratch()
				d = unsafe.Pointer(lc)
			}
		case !b.l.ptrs:
			if !ok {
				d = c.alloc(b)
			}
			copy(unsafe.Slice((*byte)(d), b.size), unsafe.Slice((*byte)(b.src), b.size))
		default:
			if !ok {
				d = c.alloc(b)
			}
			// A typed move, so that the collector sees the pointers written.
			reflect.NewAt(b.arr, d).Elem().Set(reflect.NewAt(b.arr, b.src).Elem())
		}
		c.dst = append(c.dst, d)
	}
}

// alloc returns new memory for top block b: its place in its group's, or
// its own when the skeleton had a record for it when the copy was planned.
func (c *cloner) alloc(b *block) unsafe.Pointer {
	if b.group == 0 {
		return reflect.New(b.arr).UnsafePointer()
	}
	return unsafe.Add(c.bases[b.group-1], uintptr(b.slot)*b.size)
}

// allocGroup is the memory, allocated at once for each copy, of the top
// blocks of one type the skeleton has no record for (the records alive
// in a run's pools: attempts, requests).
type allocGroup struct {
	slice reflect.Type // a slice of the blocks' type
	n     int
}

// group gathers the top blocks the skeleton has no record for by type.
func (c *cloner) group() {
	for _, i := range c.tops {
		b := &c.blocks[i]
		if b.l.fresh {
			continue
		}
		if _, ok := c.paired[blockKey{b.addr, b.l, b.n}]; ok {
			continue
		}
		g, ok := c.groupOf[b.arr]
		if !ok {
			g = len(c.groups)
			c.groupOf[b.arr] = g
			c.groups = append(c.groups, allocGroup{slice: reflect.SliceOf(b.arr)})
		}
		b.group, b.slot = g+1, c.groups[g].n
		c.groups[g].n++
	}
}

// apply rewrites the copy's pointers, which still name the original's
// memory, to name the copy's.
func (c *cloner) apply() {
	for _, f := range c.fnSrc {
		g, ok := c.funcs[f]
		if !ok {
			c.fail("a function not bound when the run was built")
			return
		}
		c.fnDst = append(c.fnDst, g)
	}
	for i := range c.relocs {
		r := &c.relocs[i]
		p := unsafe.Add(c.dst[r.at], r.off)
		switch r.kind {
		case relocPointer:
			*(*unsafe.Pointer)(p) = unsafe.Add(c.dst[r.to], r.toff)
		case relocFunc:
			*(*unsafe.Pointer)(p) = c.fnDst[r.to]
		case relocValue:
			c.fixValue(p, c.values[r.to])
		}
		if c.err != nil {
			return
		}
	}
}

// translate returns where the copy holds what p points to in the original.
func (c *cloner) translate(p unsafe.Pointer) unsafe.Pointer {
	if c.common[p] {
		return p
	}
	i, ok := c.locate(p)
	if !ok {
		return nil
	}
	return unsafe.Add(c.dst[i], uintptr(p)-c.blocks[c.tops[i]].addr)
}

// fix rewrites the copied value at p of layout l (one held in an
// interface or a map): its pointers, slices, interfaces, maps and
// functions, which still name the original's memory, to name the copy's.
func (c *cloner) fix(p unsafe.Pointer, l *layout) {
	for i := range l.slots {
		c.fixSlot(unsafe.Add(p, l.slots[i].off), &l.slots[i])
	}
}

func (c *cloner) fixSlot(p unsafe.Pointer, s *slot) {
	if c.err != nil {
		return
	}
	switch s.kind {
	case reflect.Pointer:
		q := (*unsafe.Pointer)(p)
		if *q != nil && !s.elem.shared {
			*q = c.translate(*q)
		}
	case reflect.Slice:
		h := (*sliceHeader)(p)
		if h.data != nil && h.cap > 0 && !s.elem.shared {
			h.data = c.translate(h.data)
		}
	case reflect.Array:
		for i := range s.n {
			c.fix(unsafe.Add(p, uintptr(i)*s.elem.size), s.elem)
		}
	case reflect.Interface, reflect.Map:
		c.fixValue(p, s.typ)
	case reflect.Func:
		q := (*unsafe.Pointer)(p)
		if *q != nil {
			f, ok := c.funcs[*q]
			if !ok {
				c.fail("a function of type %v not bound when the run was built", s.typ)
				return
			}
			*q = f
		}
	}
}

// fixValue rewrites the interface or map at p, of type t.
func (c *cloner) fixValue(p unsafe.Pointer, t reflect.Type) {
	v := reflect.NewAt(t, p).Elem()
	if v.IsNil() {
		return
	}
	if t.Kind() == reflect.Map {
		v.Set(c.copyMap(v))
		return
	}
	v.Set(c.copyValue(v.Elem()))
}

// copyValue returns the copy of a value held in an interface or a map.
func (c *cloner) copyValue(d reflect.Value) reflect.Value {
	l := layoutOf(d.Type())
	if !l.ptrs {
		return d
	}
	if d.Kind() == reflect.Pointer {
		if d.IsNil() || shared(d.Type().Elem()) {
			return d
		}
		return reflect.NewAt(d.Type().Elem(), c.translate(d.UnsafePointer()))
	}
	tmp := reflect.New(d.Type())
	tmp.Elem().Set(d)
	c.fix(tmp.UnsafePointer(), l)
	return tmp.Elem()
}

func (c *cloner) copyMap(v reflect.Value) reflect.Value {
	key := v.UnsafePointer()
	if w, ok := c.maps[key]; ok {
		return w
	}
	w := reflect.MakeMapWithSize(v.Type(), v.Len())
	c.maps[key] = w
	for it := v.MapRange(); it.Next(); {
		w.SetMapIndex(c.copyValue(it.Key()), c.copyValue(it.Value()))
	}
	return w
}
