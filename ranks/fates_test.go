package ranks

import (
	"testing"

	"github.com/shmpi/shmpi/internal/job"
)

// TestFatesAllocs: World.Fates reads the failure table through the
// engine's map. Making a map per rank (as it did) cost an allocation and
// about a microsecond each, 4,096 at 64 ranks when every rank reads the
// table, and held ulfm_recovery's survivors back by milliseconds.
func TestFatesAllocs(t *testing.T) {
	seg, err := job.NewSegment(job.DefaultLayout(64), 64)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	e, err := newEngineWith(seg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	w := &World{e: e}
	var fs []Fate
	allocs := testing.AllocsPerRun(10, func() { fs = w.Fates() })
	if len(fs) != 64 || fs[63].Rank != 63 {
		t.Fatalf("Fates: %d fates, the last of rank %d", len(fs), fs[len(fs)-1].Rank)
	}
	if allocs > 2 {
		t.Errorf("Fates of 64 ranks: %v allocations, want at most 2 (the slice)", allocs)
	}
}

// TestRevokedErrAllocs: the error every survivor builds first after a
// failure is built without fmt (revokedErr): the error and its detail.
func TestRevokedErrAllocs(t *testing.T) {
	c0, _ := twoEngines(t)
	c0.name = ""
	var err error
	allocs := testing.AllocsPerRun(10, func() { err = revokedErr(c0, "Allreduce") })
	if want := "shmpi: Allreduce: communicator revoked: communicator context 0"; err.Error() != want {
		t.Errorf("revokedErr: %q, want %q", err.Error(), want)
	}
	if allocs > 3 {
		t.Errorf("revokedErr: %v allocations, want at most 3", allocs)
	}
}
