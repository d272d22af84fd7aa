package ranks

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/ring"
)

// The inbox record of every inline message keeps bit 63 of its guard
// words clear (ring.PublishGuarded): were it set, a later lap could take
// those payload bytes for a published control word. Messages of all
// 0xff bytes, of every length a full or double record carries, by
// blocking and nonblocking sends; the record is read raw before the
// receive consumes it, and the receive must still get every byte.
func TestInlineRecordsKeepGuardBitsClear(t *testing.T) {
	c0, c1 := twoEngines(t)
	e1 := c1.e
	base, _ := e1.t.Inbox(1)
	units := uint64(2 * e1.lay.InboxSlots)
	tail := (*atomic.Uint64)(base)
	unit := func(u uint64) *uint64 {
		return (*uint64)(unsafe.Add(base, ring.HeaderSize+int(u%units)*ring.UnitSize))
	}
	got := make([]byte, doubleMax)
	for _, blocking := range []bool{true, false} {
		for n := shortMax + 1; n <= doubleMax; n++ {
			msg := make([]byte, n)
			for i := range msg {
				msg[i] = 0xff
			}
			start := tail.Load()
			if blocking {
				if err := Send(c0, msg, 1, 5); err != nil {
					t.Fatal(err)
				}
			} else {
				rq, err := Isend(c0, msg, 1, 5)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := rq.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			guards := 1
			if n > inlineMax {
				guards = 3
				if start%units > units-4 {
					start += units - start%units // the pad to the ring's start
				}
			}
			if start%2 != 0 {
				t.Fatalf("%d bytes: record at odd unit %d", n, start)
			}
			for k := 1; k <= guards; k++ {
				if w := *unit(start + uint64(k)); w>>63 != 0 {
					t.Fatalf("%d bytes (blocking %v): guard word %d of the record at unit %d is %#x, bit 63 set", n, blocking, k-1, start, w)
				}
			}
			st, err := Recv(c1, got, 0, 5)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range got[:st.Bytes] {
				if b != 0xff || st.Bytes != n {
					t.Fatalf("%d bytes: received %d, byte %d is %#x", n, st.Bytes, i, b)
				}
			}
		}
	}
}
