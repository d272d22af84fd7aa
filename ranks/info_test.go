package ranks_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

func TestInfo(t *testing.T) {
	in := ranks.NewInfo()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(in.Set("b", "1"))
	must(in.Set("a", "2"))
	must(in.Set("c", "3"))
	must(in.Set("b", "4")) // a new value keeps the key's place
	if got := in.Keys(); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("keys %v", got)
	}
	if v, ok, err := in.Get("b"); v != "4" || !ok || err != nil {
		t.Errorf("Get(b) = %q %v %v", v, ok, err)
	}
	if v, ok, err := in.Get("zz"); v != "" || ok || err != nil {
		t.Errorf("Get(zz) = %q %v %v", v, ok, err)
	}
	dup, err := in.Dup()
	must(err)
	must(in.Delete("a"))
	if n, _ := in.NKeys(); n != 2 {
		t.Errorf("NKeys %d after a delete", n)
	}
	for i, want := range []string{"b", "c"} {
		if k, err := in.Nthkey(i); k != want || err != nil {
			t.Errorf("Nthkey(%d) = %q %v", i, k, err)
		}
	}
	for _, n := range []int{-1, 2} {
		if _, err := in.Nthkey(n); !errors.Is(err, ranks.ErrArg) {
			t.Errorf("Nthkey(%d): %v", n, err)
		}
	}
	if err := in.Delete("a"); !errors.Is(err, ranks.ErrInfoNoKey) {
		t.Errorf("Delete of a missing key: %v", err)
	}
	// The copy is independent and keeps the order.
	if got := dup.Keys(); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("dup keys %v", got)
	}
	must(dup.Set("d", "5"))
	if n, _ := in.NKeys(); n != 2 {
		t.Errorf("the original changed with its copy: %d keys", n)
	}
	keys := dup.Keys()
	keys[0] = "x"
	if k, _ := dup.Nthkey(0); k != "b" {
		t.Errorf("Keys shares its slice")
	}

	// Limits.
	long := func(n int) string { return strings.Repeat("k", n) }
	must(in.Set(long(ranks.MaxInfoKey), long(ranks.MaxInfoVal)))
	for _, c := range []struct {
		key, val string
		class    error
	}{
		{long(ranks.MaxInfoKey + 1), "v", ranks.ErrInfoKey},
		{"", "v", ranks.ErrInfoKey},
		{"k", long(ranks.MaxInfoVal + 1), ranks.ErrInfoValue},
		{"k", "", ranks.ErrInfoValue},
	} {
		if err := in.Set(c.key, c.val); !errors.Is(err, c.class) {
			t.Errorf("Set(%d bytes, %d bytes): %v; want %v", len(c.key), len(c.val), err, c.class)
		}
	}
	if _, _, err := in.Get(long(ranks.MaxInfoKey + 1)); !errors.Is(err, ranks.ErrInfoKey) {
		t.Errorf("Get of a long key: %v", err)
	}

	// MPI_INFO_NULL.
	var null *ranks.Info
	if err := null.Set("a", "b"); !errors.Is(err, ranks.ErrInfo) {
		t.Errorf("Set on nil: %v", err)
	}
	if _, _, err := null.Get("a"); !errors.Is(err, ranks.ErrInfo) {
		t.Errorf("Get on nil: %v", err)
	}
	if _, err := null.NKeys(); !errors.Is(err, ranks.ErrInfo) {
		t.Errorf("NKeys on nil: %v", err)
	}
	if _, err := null.Dup(); !errors.Is(err, ranks.ErrInfo) {
		t.Errorf("Dup of nil: %v", err)
	}
	if null.Keys() != nil {
		t.Errorf("Keys of nil")
	}
}

// hints reads a communicator's hints as a map.
func hints(r *ranktest.R, c *ranks.Comm) map[string]string {
	in, err := c.Info()
	r.Check(err, "Info")
	out := map[string]string{}
	for _, k := range in.Keys() {
		v, _, _ := in.Get(k)
		out[k] = v
	}
	return out
}

var noHints = map[string]string{
	"mpi_assert_no_any_tag":                            "false",
	"mpi_assert_no_any_source":                         "false",
	"mpi_assert_exact_length":                          "false",
	"mpi_assert_allow_overtaking":                      "false",
	"mpi_assert_strict_persistent_collective_ordering": "false",
}

func withHints(kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range noHints {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func sameHints(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// DupWithInfo, SetInfo and Info: the assertions are kept as set, other
// keys and non-boolean values are ignored, and Dup does not copy hints
// (MPI 4.0).
func TestCommInfo(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		w := r.Comm
		if h := hints(r, w); !sameHints(h, noHints) {
			r.Errorf("world's hints %v", h)
		}
		in := ranks.NewInfo()
		r.Check(in.Set("mpi_assert_no_any_tag", "true"), "set")
		r.Check(in.Set("mpi_assert_allow_overtaking", "maybe"), "set")
		r.Check(in.Set("shmpi_unknown", "x"), "set")
		d, err := w.DupWithInfo(in)
		r.Check(err, "DupWithInfo")
		r.Check(in.Set("mpi_assert_no_any_source", "true"), "set") // after the call: not d's
		if h := hints(r, d); !sameHints(h, withHints("mpi_assert_no_any_tag", "true")) {
			r.Errorf("DupWithInfo's hints %v", h)
		}
		up := ranks.NewInfo()
		r.Check(up.Set("mpi_assert_exact_length", "true"), "set")
		r.Check(d.SetInfo(up), "SetInfo")
		r.Check(d.SetInfo(nil), "SetInfo(nil)")
		want := withHints("mpi_assert_no_any_tag", "true", "mpi_assert_exact_length", "true")
		if h := hints(r, d); !sameHints(h, want) {
			r.Errorf("hints after SetInfo %v; want %v", h, want)
		}
		r.Check(up.Set("mpi_assert_no_any_tag", "false"), "set")
		r.Check(d.SetInfo(up), "SetInfo")
		if h := hints(r, d); !sameHints(h, withHints("mpi_assert_exact_length", "true")) {
			r.Errorf("hints after clearing one %v", h)
		}
		// Changing what Info returned changes nothing.
		got, _ := d.Info()
		r.Check(got.Set("mpi_assert_no_any_source", "true"), "set")
		if h := hints(r, d); h["mpi_assert_no_any_source"] != "false" {
			r.Errorf("Info's result is shared")
		}
		e, err := d.Dup()
		r.Check(err, "Dup")
		if h := hints(r, e); !sameHints(h, noHints) {
			r.Errorf("Dup copied hints: %v", h)
		}
		e2, err := d.DupWithInfo(nil)
		r.Check(err, "DupWithInfo(nil)")
		if h := hints(r, e2); !sameHints(h, noHints) {
			r.Errorf("DupWithInfo(nil)'s hints: %v", h)
		}
		// The duplicates work.
		peer := 1 - r.Rank
		for _, c := range []*ranks.Comm{d, e, e2} {
			got := make([]int, 1)
			_, err := ranks.Sendrecv(c, []int{r.Rank}, peer, 3, got, peer, 3)
			r.Check(err, "sendrecv")
			if got[0] != peer {
				r.Errorf("got %d from %d", got[0], peer)
			}
		}
		for _, c := range []*ranks.Comm{e2, e, d} {
			r.Check(c.Free(), "free")
		}
		if _, err := d.Info(); !errors.Is(err, ranks.ErrComm) {
			r.Errorf("Info of a freed communicator: %v", err)
		}
		if err := d.SetInfo(in); !errors.Is(err, ranks.ErrComm) {
			r.Errorf("SetInfo of a freed communicator: %v", err)
		}
		if _, err := d.DupWithInfo(in); !errors.Is(err, ranks.ErrComm) {
			r.Errorf("DupWithInfo of a freed communicator: %v", err)
		}
	})
}
