package topology

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"
)

// secondDocument reports a file holding more than one YAML document: the
// parser reads the first and would ignore the rest silently, so a scenario
// pasted after another ("---") would never run.
func secondDocument(name string, data []byte) Problems {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first, second yaml.Node
	if dec.Decode(&first) != nil {
		return nil // an empty file, or the first document's error, reported already
	}
	err := dec.Decode(&second)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return Problems{{File: name, Line: max(lastLine(&first)+1, 1), Msg: "a second YAML document follows the scenario, and it is not valid YAML: a scenario file holds one document"}}
	}
	return Problems{{File: name, Line: max(second.Line, 1), Msg: "a second YAML document: a scenario file holds one document (remove the '---' and what follows, or split the file)"}}
}

// lastLine returns the highest line of a node tree.
func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}
