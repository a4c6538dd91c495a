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
func (t *Trajectory) Fork(seed uint64) (*Trajectory, error) {
	m, err := cloneRun(t.m)
	if err != nil {
		return nil, err
	}
	m.reseed(seed)
	return &Trajectory{
		m:         m,
		path:      append(slices.Clip(t.path), branchPoint{at: t.m.eng.Now(), seed: seed}),
		inherited: m.eng.Events(),
	}, nil
}

// cloneRun returns a deep copy of m whose closures are bound to the copy.
// A Trajectory records no Result, so the latency counts of the copy start
// empty instead of being copied (about 180 KB each).
func cloneRun(m *run) (*run, error) {
	sk, err := build(m.sc)
	if err != nil {
		return nil, err
	}
	sk.eachCounts((*latencyCounts).useScratch) // a trajectory's: nobody reads them
	c := &cloner{
		seen:   map[blockKey]int{},
		paired: map[blockKey]unsafe.Pointer{},
		taken:  map[unsafe.Pointer]bool{},
		common: map[unsafe.Pointer]bool{},
		funcs:  map[unsafe.Pointer]unsafe.Pointer{},
		maps:   map[unsafe.Pointer]reflect.Value{},
	}
	rt := reflect.TypeFor[run]()
	// Pair the skeleton's records with the run's by place. The engine is
	// left out: it holds only events, whose places differ between runs and
	// whose handlers are the run's bound closures, paired where the run
	// keeps them.
	root := blockKey{uintptr(unsafe.Pointer(m)), rt}
	c.paired[root], c.taken[unsafe.Pointer(sk)] = unsafe.Pointer(sk), true
	for i := range rt.NumField() {
		if f := rt.Field(i); f.Name != "eng" {
			c.pair(unsafe.Add(unsafe.Pointer(m), f.Offset), unsafe.Add(unsafe.Pointer(sk), f.Offset), f.Type)
		}
	}
	if c.paired[blockKey{uintptr(unsafe.Pointer(m.eng)), reflect.TypeFor[Engine]()}] == nil {
		c.paired[blockKey{uintptr(unsafe.Pointer(m.eng)), reflect.TypeFor[Engine]()}] = unsafe.Pointer(sk.eng)
	}

	c.block(unsafe.Pointer(m), rt, 1)
	if c.err == nil {
		c.place()
	}
	if c.err == nil {
		for _, i := range c.tops {
			b := &c.blocks[i]
			if b.fresh {
				continue
			}
			for k := range b.n {
				c.fix(unsafe.Add(b.dst, uintptr(k)*b.typ.Size()), b.typ)
			}
		}
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

// blockKey names a block of the original state: its address and the type
// of its elements.
type blockKey struct {
	addr uintptr
	typ  reflect.Type
}

// block is a piece of memory the state points to: a pointer's target
// (n = 1) or a slice's backing array (n = its capacity). Blocks lying
// inside another (a field, an element) are copied with it; top is the
// index of the block holding them all.
type block struct {
	src   unsafe.Pointer // the original (addr, kept as a pointer)
	addr  uintptr
	typ   reflect.Type
	n     int
	size  uintptr
	dst   unsafe.Pointer
	top   int
	fresh bool // latency counts: a new empty one instead of a copy
}

// cloner copies one run. The original's memory stays reachable (from the
// trajectory being forked) while it works, so addresses are stable.
type cloner struct {
	seen   map[blockKey]int
	blocks []block
	tops   []int // top blocks, by address
	paired map[blockKey]unsafe.Pointer
	taken  map[unsafe.Pointer]bool
	common map[unsafe.Pointer]bool           // records both builds point to, shared
	funcs  map[unsafe.Pointer]unsafe.Pointer // closure of the run → the skeleton's
	maps   map[unsafe.Pointer]reflect.Value  // map of the run → its copy
	err    error
	// mapsSeen holds the maps the walk met; collectFuncs walks without
	// checking functions (tests list a state's records with it).
	mapsSeen     map[unsafe.Pointer]bool
	collectFuncs bool
	// share, when set, replaces shared in the walk (tests walk with a
	// stricter rule, to catch shared being widened).
	share func(reflect.Type) bool
}

func (c *cloner) skip(t reflect.Type) bool {
	if c.share != nil {
		return c.share(t)
	}
	return shared(t)
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

// pointerful caches whether values of a type hold pointers that the copy
// must follow (strings are immutable and shared).
var pointerful sync.Map

func hasPointers(t reflect.Type) bool {
	if v, ok := pointerful.Load(t); ok {
		return v.(bool)
	}
	var r bool
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		r = true
	case reflect.Array:
		r = t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				r = true
				break
			}
		}
	}
	pointerful.Store(t, r)
	return r
}

// slot is a place in a value that holds a pointer the copy follows: at
// off, of type typ; an array of n > 0 such values is one slot.
type slot struct {
	off  uintptr
	typ  reflect.Type
	kind reflect.Kind
}

// plans caches each type's slots.
var plans sync.Map

// slots returns where values of type t hold pointers: the leaves of its
// structs, with arrays of pointerful elements kept whole.
func slots(t reflect.Type) []slot {
	if v, ok := plans.Load(t); ok {
		return v.([]slot)
	}
	var out []slot
	var walk func(off uintptr, t reflect.Type)
	walk = func(off uintptr, t reflect.Type) {
		if !hasPointers(t) {
			return
		}
		if t.Kind() == reflect.Struct {
			for i := range t.NumField() {
				f := t.Field(i)
				walk(off+f.Offset, f.Type)
			}
			return
		}
		out = append(out, slot{off, t, t.Kind()})
	}
	walk(0, t)
	plans.Store(t, out)
	return out
}

// pair walks the run's value at o and the skeleton's at n, both of type t,
// and records which skeleton record stands at the place of which run
// record, and which skeleton closure at the place of which run closure.
func (c *cloner) pair(o, n unsafe.Pointer, t reflect.Type) {
	for _, sl := range slots(t) {
		c.pairSlot(unsafe.Add(o, sl.off), unsafe.Add(n, sl.off), sl.typ)
	}
}

func (c *cloner) pairSlot(o, n unsafe.Pointer, t reflect.Type) {
	switch t.Kind() {
	case reflect.Pointer:
		c.pairTarget(*(*unsafe.Pointer)(o), *(*unsafe.Pointer)(n), t.Elem())
	case reflect.Slice:
		ho, hn := (*sliceHeader)(o), (*sliceHeader)(n)
		if ho.data == nil || hn.data == nil || shared(t.Elem()) {
			return
		}
		if ho.cap == hn.cap && ho.len == hn.len {
			c.pairTarget(ho.data, hn.data, reflect.ArrayOf(ho.cap, t.Elem()))
			return
		}
		es, sl := t.Elem().Size(), slots(t.Elem())
		for i := range min(ho.len, hn.len) {
			for _, s := range sl {
				c.pairSlot(unsafe.Add(ho.data, uintptr(i)*es+s.off), unsafe.Add(hn.data, uintptr(i)*es+s.off), s.typ)
			}
		}
	case reflect.Array:
		es, sl := t.Elem().Size(), slots(t.Elem())
		for i := range t.Len() {
			for _, s := range sl {
				c.pairSlot(unsafe.Add(o, uintptr(i)*es+s.off), unsafe.Add(n, uintptr(i)*es+s.off), s.typ)
			}
		}
	case reflect.Interface:
		vo, vn := reflect.NewAt(t, o).Elem(), reflect.NewAt(t, n).Elem()
		if vo.IsNil() || vn.IsNil() || vo.Elem().Type() != vn.Elem().Type() || vo.Elem().Kind() != reflect.Pointer {
			return
		}
		c.pairTarget(vo.Elem().UnsafePointer(), vn.Elem().UnsafePointer(), vo.Elem().Type().Elem())
	case reflect.Map:
		vo, vn := reflect.NewAt(t, o).Elem(), reflect.NewAt(t, n).Elem()
		if vo.IsNil() || vn.IsNil() || t.Elem().Kind() != reflect.Pointer {
			return
		}
		for it := vo.MapRange(); it.Next(); {
			if w := vn.MapIndex(it.Key()); w.IsValid() && !it.Value().IsNil() && !w.IsNil() {
				c.pairTarget(it.Value().UnsafePointer(), w.UnsafePointer(), t.Elem().Elem())
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

func (c *cloner) pairTarget(o, n unsafe.Pointer, t reflect.Type) {
	if o == nil || n == nil || shared(t) {
		return
	}
	if t == latencyCountsType {
		c.paired[blockKey{uintptr(o), t}] = n
		return
	}
	if o == n {
		// Both builds point to it: it is the scenario's, not the run's
		// (two runs of one scenario share it, so no run writes it).
		c.common[o] = true
		return
	}
	k := blockKey{uintptr(o), t}
	if _, ok := c.paired[k]; ok || c.taken[n] {
		return
	}
	c.paired[k], c.taken[n] = n, true
	c.pair(o, n, t)
}

// block records the block at p of n elements of type t and walks it for
// the blocks it points to.
func (c *cloner) block(p unsafe.Pointer, t reflect.Type, n int) {
	if p == nil || n == 0 || c.skip(t) || c.common[p] || c.err != nil {
		return
	}
	k := blockKey{uintptr(p), t}
	from := 0
	if i, ok := c.seen[k]; ok {
		if c.blocks[i].n >= n {
			return
		}
		from = c.blocks[i].n
		c.blocks[i].n, c.blocks[i].size = n, uintptr(n)*t.Size()
	} else {
		c.seen[k] = len(c.blocks)
		c.blocks = append(c.blocks, block{src: p, addr: uintptr(p), typ: t, n: n, size: uintptr(n) * t.Size(), fresh: t == latencyCountsType})
		if t == latencyCountsType {
			return
		}
	}
	for i := from; i < n; i++ {
		c.visit(unsafe.Add(p, uintptr(i)*t.Size()), t)
	}
}

// visit walks the value at p of type t for the blocks it points to.
func (c *cloner) visit(p unsafe.Pointer, t reflect.Type) {
	for _, sl := range slots(t) {
		c.visitSlot(unsafe.Add(p, sl.off), sl.typ)
	}
}

func (c *cloner) visitSlot(p unsafe.Pointer, t reflect.Type) {
	if c.err != nil {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		c.block(*(*unsafe.Pointer)(p), t.Elem(), 1)
	case reflect.Slice:
		h := (*sliceHeader)(p)
		c.block(h.data, t.Elem(), h.cap)
	case reflect.Array:
		es, sl := t.Elem().Size(), slots(t.Elem())
		for i := range t.Len() {
			q := unsafe.Add(p, uintptr(i)*es)
			for _, s := range sl {
				c.visitSlot(unsafe.Add(q, s.off), s.typ)
			}
		}
	case reflect.Interface:
		v := reflect.NewAt(t, p).Elem()
		if v.IsNil() {
			return
		}
		d := v.Elem()
		if d.Kind() == reflect.Pointer {
			c.block(d.UnsafePointer(), d.Type().Elem(), 1)
			return
		}
		tmp := reflect.New(d.Type())
		tmp.Elem().Set(d)
		c.visit(tmp.UnsafePointer(), d.Type())
	case reflect.Map:
		v := reflect.NewAt(t, p).Elem()
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
				c.fail("a function of type %v not bound when the run was built", t)
			}
		}
	default: // channels, unsafe pointers
		c.fail("a value of type %v", t)
	}
}

func (c *cloner) visitValue(v reflect.Value) {
	tmp := reflect.New(v.Type())
	tmp.Elem().Set(v)
	c.visit(tmp.UnsafePointer(), v.Type())
}

// place finds the top blocks, gives each its destination (the skeleton's
// record paired with it, or new memory) and copies its bytes there.
func (c *cloner) place() {
	order := make([]int, len(c.blocks))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		x, y := &c.blocks[order[a]], &c.blocks[order[b]]
		return x.addr < y.addr || (x.addr == y.addr && x.size > y.size)
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
	for _, i := range c.tops {
		b := &c.blocks[i]
		old := b.src
		d, ok := c.paired[blockKey{b.addr, b.typ}]
		if !ok {
			d, ok = c.paired[blockKey{b.addr, reflect.ArrayOf(b.n, b.typ)}]
		}
		switch {
		case b.fresh:
			// The skeleton's own empty counts when it has them at this place.
			if b.n != 1 {
				c.fail("an array of latency counts")
				return
			}
			if !ok {
				lc := newLatencyCounts()
				lc.useScratch()
				d = unsafe.Pointer(lc)
			}
			b.dst = d
		case b.n == 1:
			if !ok {
				d = reflect.New(b.typ).UnsafePointer()
			}
			b.dst = d
			reflect.NewAt(b.typ, b.dst).Elem().Set(reflect.NewAt(b.typ, old).Elem())
		default:
			if !ok {
				d = reflect.MakeSlice(reflect.SliceOf(b.typ), b.n, b.n).UnsafePointer()
			}
			b.dst = d
			reflect.Copy(reflect.SliceAt(b.typ, b.dst, b.n), reflect.SliceAt(b.typ, old, b.n))
		}
	}
}

// translate returns where the copy holds what p points to in the original.
func (c *cloner) translate(p unsafe.Pointer) unsafe.Pointer {
	if c.common[p] {
		return p
	}
	a := uintptr(p)
	i := sort.Search(len(c.tops), func(i int) bool { return c.blocks[c.tops[i]].addr > a }) - 1
	if i < 0 {
		c.fail("a pointer outside the state")
		return nil
	}
	b := &c.blocks[c.tops[i]]
	if a >= b.addr+max(b.size, 1) {
		c.fail("a pointer outside the state (to %v)", b.typ)
		return nil
	}
	return unsafe.Add(b.dst, a-b.addr)
}

// fix rewrites the copied value at p of type t: its pointers, slices,
// interfaces, maps and functions, which still name the original's memory,
// to name the copy's.
func (c *cloner) fix(p unsafe.Pointer, t reflect.Type) {
	for _, sl := range slots(t) {
		c.fixSlot(unsafe.Add(p, sl.off), sl.typ)
	}
}

func (c *cloner) fixSlot(p unsafe.Pointer, t reflect.Type) {
	if c.err != nil {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		q := (*unsafe.Pointer)(p)
		if *q != nil && !shared(t.Elem()) {
			*q = c.translate(*q)
		}
	case reflect.Slice:
		h := (*sliceHeader)(p)
		if h.data != nil && h.cap > 0 && !shared(t.Elem()) {
			h.data = c.translate(h.data)
		}
	case reflect.Array:
		es, sl := t.Elem().Size(), slots(t.Elem())
		for i := range t.Len() {
			q := unsafe.Add(p, uintptr(i)*es)
			for _, s := range sl {
				c.fixSlot(unsafe.Add(q, s.off), s.typ)
			}
		}
	case reflect.Interface:
		v := reflect.NewAt(t, p).Elem()
		if v.IsNil() {
			return
		}
		v.Set(c.copyValue(v.Elem()))
	case reflect.Map:
		v := reflect.NewAt(t, p).Elem()
		if !v.IsNil() {
			v.Set(c.copyMap(v))
		}
	case reflect.Func:
		q := (*unsafe.Pointer)(p)
		if *q != nil {
			f, ok := c.funcs[*q]
			if !ok {
				c.fail("a function of type %v not bound when the run was built", t)
				return
			}
			*q = f
		}
	}
}

// copyValue returns the copy of a value held in an interface or a map.
func (c *cloner) copyValue(d reflect.Value) reflect.Value {
	if !hasPointers(d.Type()) {
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
	c.fix(tmp.UnsafePointer(), d.Type())
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
