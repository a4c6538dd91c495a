package k8s

import (
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKustomizeBuilds builds deploy/kubernetes with kustomize's own library
// (what kubectl kustomize runs) — each mode's base and the documented
// overlay — and validates the output as TestRenderedManifestsAreValid does.
// This checks that the configMapGenerator's hashed name is what the Jobs
// mount, that images: rewrites the image, and that the overlay's patches
// keep the three shard counts in agreement.
func TestKustomizeBuilds(t *testing.T) {
	root := filepath.Join("..", "deploy", "kubernetes")
	for _, c := range []struct {
		dir, mode, image string
		shards           int
	}{
		{"sweep", "sweep", "stormsim:latest", 4},
		{"capacity", "capacity", "stormsim:latest", 4},
		{"load", "load", "stormsim:latest", 4},
		{filepath.Join("examples", "sweep-16-shards"), "sweep", "ghcr.io/example/stormsim:v1.0.0", 16},
	} {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, c.dir))
		if err != nil {
			t.Fatalf("%s: kustomize build: %v", c.dir, err)
		}
		y, err := m.AsYaml()
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		objs, err := decodeStrict(y)
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		if err := checkRun(objs, c.mode, c.shards); err != nil {
			t.Errorf("%s:\n%v", c.dir, err)
		}
		if len(objs.ConfigMaps) != 1 || len(objs.PVCs) != 1 {
			t.Fatalf("%s: %d ConfigMaps, %d claims; want 1 and 1", c.dir, len(objs.ConfigMaps), len(objs.PVCs))
		}
		cm := objs.ConfigMaps[0].Name
		for _, j := range objs.Jobs {
			if img := j.Spec.Template.Spec.Containers[0].Image; img != c.image {
				t.Errorf("%s: Job %s image %q, want %q", c.dir, j.Name, img, c.image)
			}
		}
		if v := objs.Jobs[0].Spec.Template.Spec.Volumes[0]; v.ConfigMap == nil || v.ConfigMap.Name != cm || cm == "stormsim-"+c.mode+"-scenario" {
			t.Errorf("%s: the Job must mount the generated, hash-suffixed ConfigMap %s", c.dir, cm)
		}
	}
}
