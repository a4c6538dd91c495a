package topology

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// journal records the nodes an override changes, as they were, so that the
// changes can be undone: variants are checked one after another on one tree.
type journal []journalEntry

type journalEntry struct {
	n   *yaml.Node
	old yaml.Node
}

// touch records n as it is now; a nil journal records nothing.
func (j *journal) touch(n *yaml.Node) {
	if j != nil {
		*j = append(*j, journalEntry{n, *n})
	}
}

// undo restores every recorded node, latest first, and empties j.
func (j *journal) undo() {
	for i := len(*j) - 1; i >= 0; i-- {
		e := (*j)[i]
		*e.n = e.old
	}
	*j = (*j)[:0]
}

// privatize returns the node an override may change in place of child, a
// value held in parent.Content: child itself, unless it is shared, being an
// alias or the anchor aliases point at. Then parent gets a copy of what
// child stands for, and the other places that share it keep the original.
func privatize(parent, child *yaml.Node, j *journal) *yaml.Node {
	if child == nil || (child.Kind != yaml.AliasNode && child.Anchor == "") {
		return child
	}
	i := slices.Index(parent.Content, child)
	if i < 0 {
		return child
	}
	cp := cloneNode(resolve(child))
	cp.Anchor = ""
	j.touch(parent)
	parent.Content = slices.Clone(parent.Content) // the journal keeps the old array
	parent.Content[i] = cp
	return cp
}

// mergedValue returns the value of key that mapping m gets through its <<
// merge keys (the first merge that has it wins, as in YAML), or nil.
func mergedValue(m *yaml.Node, key string, depth int) *yaml.Node {
	if depth > maxDecodeDepth {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if resolve(m.Content[i]).Value != "<<" {
			continue
		}
		srcs := []*yaml.Node{resolve(m.Content[i+1])}
		if srcs[0].Kind == yaml.SequenceNode {
			srcs = srcs[0].Content
		}
		for _, s := range srcs {
			s = resolve(s)
			if s == nil || s.Kind != yaml.MappingNode {
				continue
			}
			if v := mappingValue(s, key); v != nil {
				return v
			}
			if v := mergedValue(s, key, depth+1); v != nil {
				return v
			}
		}
	}
	return nil
}
