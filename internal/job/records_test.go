package job

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// RecordOp and OpOf carry the operation, its name (for OpColl, cut to
// OpNameMax bytes), peer, tag and whether the rank is in it now.
func TestOpRecord(t *testing.T) {
	var cb CtlBlock
	if r := cb.OpOf(); r.Op != OpNone || r.Name != "none" || r.Blocked || r.Count != 0 {
		t.Errorf("a fresh record: %+v", r)
	}
	cb.RecordOp(OpColl, "Win.Lock", NullPeer, AnyTag, 3, 42)
	if r := cb.OpOf(); r.Op != OpColl || r.Name != "Win.Lock" || !r.Blocked || r.Peer != NullPeer || r.Tag != AnyTag || r.Since != 42 || r.Count != 1 {
		t.Errorf("Win.Lock: %+v", r)
	}
	cb.EndOp(OpColl)
	if r := cb.OpOf(); r.Name != "Win.Lock" || r.Blocked {
		t.Errorf("after EndOp: %+v", r)
	}
	// A point-to-point op keeps its own name, whatever OpName holds.
	cb.RecordOp(OpRecv, "", 1, 5, 0, 43)
	if r := cb.OpOf(); r.Op != OpRecv || r.Name != "Recv" || r.Peer != 1 || r.Tag != 5 || r.Count != 2 {
		t.Errorf("Recv: %+v", r)
	}
	long := strings.Repeat("x", OpNameMax) + "tail"
	cb.RecordOp(OpColl, long, NullPeer, AnyTag, 0, 44)
	if r := cb.OpOf(); r.Name != long[:OpNameMax] {
		t.Errorf("a long name: %q, want %q", r.Name, long[:OpNameMax])
	}
	// A collective that records no name is a "Collective".
	cb.RecordOp(OpColl, "", NullPeer, AnyTag, 0, 45)
	if r := cb.OpOf(); r.Name != "Collective" {
		t.Errorf("no name: %q", r.Name)
	}
}

// A reader never sees a record half rewritten: a name with another
// record's peer, or a mix of two names. (The writer rewrites as fast as
// it can, a record per scheduling round; a rank writes one per sleep.)
func TestOpRecordConsistent(t *testing.T) {
	var cb CtlBlock
	names := []string{"Barrier", "Win.Lock", "ReduceScatterBlock", "Agree"}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			k := i % len(names)
			cb.RecordOp(OpColl, names[k], k, k, 0, int64(i))
			runtime.Gosched()
		}
	}()
	for range 200000 {
		r := cb.OpOf()
		if r.Count == 0 || r.Name == "Collective" { // none yet, or OpOf gave up
			continue
		}
		if r.Peer < 0 || r.Peer >= len(names) || r.Name != names[r.Peer] || r.Tag != r.Peer {
			t.Errorf("inconsistent record: %+v", r)
			break
		}
	}
	stop.Store(true)
	<-done
}
