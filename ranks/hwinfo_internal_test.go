package ranks

import (
	"strings"
	"testing"
)

// TestHWResourceInfo: one hwloc:// key per level, true or false, the
// whole machine always true, and the names are ones TypeHWGuided takes.
func TestHWResourceInfo(t *testing.T) {
	in := HWResourceInfo()
	keys := in.Keys()
	if len(keys) != numLevels {
		t.Fatalf("%d keys, want %d: %v", len(keys), numLevels, keys)
	}
	res := resourcesOf(affinity())
	for l, k := range keys {
		v, _, _ := in.Get(k)
		if !strings.HasPrefix(k, HWResourcePrefix) || (v != "true" && v != "false") {
			t.Fatalf("key %q = %q", k, v)
		}
		if got := levelOf(k); got != l {
			t.Fatalf("levelOf(%q) = %d, want %d", k, got, l)
		}
		if (v == "true") != (res[l] >= 0) {
			t.Fatalf("%s = %s, but the resources at that level are %v", k, v, res)
		}
	}
	if v, _, _ := in.Get("hwloc://Machine"); v != "true" {
		t.Fatalf("hwloc://Machine = %q", v)
	}
	if levelOf("HWLOC://numanode") != lvNUMA || levelOf("hwloc://PU") != lvHWThread {
		t.Fatal("the hwloc:// prefix is not taken in any case")
	}
}
