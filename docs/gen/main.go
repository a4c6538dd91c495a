package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/stormsim/stormsim/metrics"
)

// Markers delimit the generated block of a hand-written page.
const (
	beginMarker = "<!-- gen:results -->"
	endMarker   = "<!-- /gen:results -->"
)

// output collects everything one generation produces, keyed by path
// relative to the repository root.
type output struct {
	mu sync.Mutex
	// files are written whole (PNGs, fully generated pages).
	files map[string][]byte
	// blocks replace the generated block of a page; fresh holds the page to
	// create when it does not exist yet.
	blocks map[string]string
	fresh  map[string]string
}

func newOutput() *output {
	return &output{files: map[string][]byte{}, blocks: map[string]string{}, fresh: map[string]string{}}
}

func (o *output) file(path string, b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.files[path] = b
}

func (o *output) block(path, content, freshPage string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.blocks[path] = content
	o.fresh[path] = freshPage
}

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "regenerate in memory and report stale files instead of writing")
	only := flag.String("only", "", "generate only this part: experiments, validation, cli or collapse")
	flag.Parse()
	if err := run(*root, *check, *only, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "docs/gen:", err)
		os.Exit(1)
	}
}

// run generates the docs under root and writes them, or with check
// compares them with what is on disk.
func run(root string, check bool, only string, w io.Writer) error {
	o, err := generate(root, only)
	if err != nil {
		return err
	}
	if check {
		stale, err := o.stale(root)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("stale (run `make docs`):\n  %s", strings.Join(stale, "\n  "))
		}
		fmt.Fprintln(w, "docs are up to date")
		return nil
	}
	return o.write(root, w)
}

// generate produces every part (or only one) of the docs.
func generate(root, only string) (*output, error) {
	o := newOutput()
	parts := []struct {
		name string
		fn   func(root string, o *output) error
	}{
		{"experiments", genExperiments},
		{"validation", genValidation},
		{"cli", genCLI},
		{"collapse", genCollapse},
	}
	found := false
	for _, p := range parts {
		if only != "" && only != p.name {
			continue
		}
		found = true
		if err := p.fn(root, o); err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	if !found {
		return nil, fmt.Errorf("-only: unknown part %q (want experiments, validation, cli or collapse)", only)
	}
	return o, nil
}

// page returns the page at path with its generated block replaced.
func (o *output) page(root, path string) ([]byte, error) {
	old, err := os.ReadFile(filepath.Join(root, path))
	if errors.Is(err, os.ErrNotExist) {
		old = []byte(o.fresh[path])
	} else if err != nil {
		return nil, err
	}
	s := string(old)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s: no %s … %s block", path, beginMarker, endMarker)
	}
	return []byte(s[:i+len(beginMarker)] + "\n" + o.blocks[path] + s[j:]), nil
}

// stale lists the paths whose content on disk differs from the generated one.
func (o *output) stale(root string) ([]string, error) {
	var out []string
	for _, p := range sortedKeys(o.files) {
		old, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || sha256.Sum256(old) != sha256.Sum256(o.files[p]) {
			out = append(out, p)
		}
	}
	for _, p := range sortedKeys(o.blocks) {
		want, err := o.page(root, p)
		if err != nil {
			return nil, err
		}
		old, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || !bytes.Equal(old, want) {
			out = append(out, p)
		}
	}
	return out, nil
}

// write writes every generated file and block, atomically, and reports
// the files that changed.
func (o *output) write(root string, w io.Writer) error {
	pages := map[string][]byte{}
	for _, p := range sortedKeys(o.blocks) {
		b, err := o.page(root, p)
		if err != nil {
			return err
		}
		pages[p] = b
	}
	all := map[string][]byte{}
	for p, b := range o.files {
		all[p] = b
	}
	for p, b := range pages {
		all[p] = b
	}
	for _, p := range sortedKeys(all) {
		full := filepath.Join(root, p)
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, all[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		b := all[p]
		if err := metrics.WriteFileAtomic(full, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return err
		}
		fmt.Fprintln(w, "wrote", p)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
