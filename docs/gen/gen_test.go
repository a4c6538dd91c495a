package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed docs must be what the generator makes of the current code:
// a changed model, scenario or plot shows up here as a stale file.
func TestDocsUpToDate(t *testing.T) {
	for _, part := range []string{"experiments", "validation", "cli", "collapse"} {
		t.Run(part, func(t *testing.T) {
			var out bytes.Buffer
			if err := run("../..", true, part, &out); err != nil {
				t.Fatalf("%v\nregenerate with `make docs` (go run ./docs/gen)", err)
			}
		})
	}
}

// Two generations from the same code must agree byte for byte, plots
// included, or the staleness check above could never pass.
func TestGenerationIsDeterministic(t *testing.T) {
	a, b := newOutput(), newOutput()
	for _, o := range []*output{a, b} {
		if err := genExperiment("../..", "five-layer-chain", o); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.files) == 0 {
		t.Fatal("no plot generated")
	}
	for p, x := range a.files {
		if !bytes.Equal(x, b.files[p]) {
			t.Errorf("%s differs between two generations", p)
		}
	}
	for p, x := range a.blocks {
		if x != b.blocks[p] {
			t.Errorf("%s: block differs between two generations", p)
		}
	}
}

// A stale file is reported by name, and a page without its markers is an error.
func TestStaleDetection(t *testing.T) {
	root := t.TempDir()
	o := newOutput()
	o.file("docs/x.png", []byte("new"))
	o.block("docs/p.md", "table\n", "# p\n"+beginMarker+"\n"+endMarker+"\n")
	stale, err := o.stale(root)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(stale, ",") != "docs/x.png,docs/p.md" {
		t.Errorf("stale = %v, want both files", stale)
	}
	var log bytes.Buffer
	if err := o.write(root, &log); err != nil {
		t.Fatal(err)
	}
	if stale, _ := o.stale(root); len(stale) != 0 {
		t.Errorf("after write, stale = %v", stale)
	}
	page, _ := os.ReadFile(filepath.Join(root, "docs/p.md"))
	if want := "# p\n" + beginMarker + "\ntable\n" + endMarker + "\n"; string(page) != want {
		t.Errorf("page = %q, want %q", page, want)
	}
	if err := os.WriteFile(filepath.Join(root, "docs/p.md"), []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := o.stale(root); err == nil {
		t.Error("a page without markers was accepted")
	}
}

func TestCommandNames(t *testing.T) {
	help := "stormsim dev: x\n\nUsage: y\n\nCommands:\n  compare      c\n  run          r\n\nRun 'stormsim help COMMAND'\n"
	if got := strings.Join(commandNames(help), ","); got != "compare,run" {
		t.Errorf("commandNames = %q", got)
	}
}

// Whatever a page holds, replacing its block never panics, and a page that
// has the markers keeps everything outside them.
func FuzzPage(f *testing.F) {
	f.Add("# t\n" + beginMarker + "\nold\n" + endMarker + "\nnotes\n")
	f.Add(endMarker + beginMarker)
	f.Add("")
	f.Fuzz(func(t *testing.T, page string) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "d/p.md"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		o := newOutput()
		o.block("d/p.md", "new\n", "")
		got, err := o.page(root, "d/p.md")
		i, j := strings.Index(page, beginMarker), strings.Index(page, endMarker)
		if i < 0 || j < i {
			if err == nil {
				t.Fatalf("page without ordered markers accepted: %q", page)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(got), page[:i+len(beginMarker)]) || !strings.HasSuffix(string(got), page[j:]) {
			t.Fatalf("text outside the markers changed: %q -> %q", page, got)
		}
	})
}
