package ranks_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/shm"
)

func wantClass(r *ranktest.R, err, class error, what string) {
	var e *ranks.Error
	if !errors.Is(err, class) || !errors.As(err, &e) {
		r.Errorf("%s: got %v, want %v", what, err, class)
	}
}

// Every misuse gets its own error class, and harms nothing: the rank
// communicates normally afterwards.
func TestBadInput(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		buf := make([]byte, 8)
		// Ranks.
		wantClass(r, ranks.Send(c, buf, 2, 0), ranks.ErrRank, "send to rank 2 of 2")
		wantClass(r, ranks.Send(c, buf, -7, 0), ranks.ErrRank, "send to rank -7")
		wantClass(r, ranks.Send(c, buf, ranks.AnySource, 0), ranks.ErrRank, "send to AnySource")
		_, err := ranks.Recv(c, buf, 5, 0)
		wantClass(r, err, ranks.ErrRank, "recv from rank 5")
		_, err = ranks.Irecv(c, buf, -9, 0)
		wantClass(r, err, ranks.ErrRank, "irecv from rank -9")
		_, err = c.Probe(3, 0)
		wantClass(r, err, ranks.ErrRank, "probe rank 3")
		// Tags.
		wantClass(r, ranks.Send(c, buf, 1-r.Rank, -5), ranks.ErrTag, "send tag -5")
		wantClass(r, ranks.Send(c, buf, 1-r.Rank, ranks.AnyTag), ranks.ErrTag, "send AnyTag")
		wantClass(r, ranks.Send(c, buf, 1-r.Rank, ranks.TagUB+1), ranks.ErrTag, "send tag above TagUB")
		_, err = ranks.Recv(c, buf, 0, -3)
		wantClass(r, err, ranks.ErrTag, "recv tag -3")
		// Counts and buffers (the raw-memory API).
		wantClass(r, ranks.SendPtr(c, unsafe.Pointer(&buf[0]), -1, 1, 1-r.Rank, 0), ranks.ErrCount, "negative count")
		wantClass(r, ranks.SendPtr(c, unsafe.Pointer(&buf[0]), 1, 0, 1-r.Rank, 0), ranks.ErrCount, "element size 0")
		wantClass(r, ranks.SendPtr(c, nil, 4, 1, 1-r.Rank, 0), ranks.ErrBuffer, "nil buffer")
		_, err = ranks.RecvPtr(c, nil, 4, 8, 0, 0)
		wantClass(r, err, ranks.ErrBuffer, "recv into nil buffer")
		_, err = ranks.IrecvPtr(c, unsafe.Pointer(&buf[0]), -2, 1, 0, 0)
		wantClass(r, err, ranks.ErrCount, "irecv negative count")
		// Element types that cannot cross processes.
		wantClass(r, ranks.Send(c, []*int{nil}, 1-r.Rank, 0), ranks.ErrType, "pointers")
		wantClass(r, ranks.Send(c, []string{"x"}, 1-r.Rank, 0), ranks.ErrType, "strings")
		type withSlice struct {
			A int
			B []byte
		}
		wantClass(r, ranks.Send(c, []withSlice{{}}, 1-r.Rank, 0), ranks.ErrType, "struct holding a slice")
		_, err = ranks.Recv(c, []map[int]int{nil}, 0, 0)
		wantClass(r, err, ranks.ErrType, "recv into maps")
		// Requests.
		var nilReq *ranks.Request
		_, err = nilReq.Wait()
		wantClass(r, err, ranks.ErrRequest, "wait on nil request")
		rq, err := ranks.Irecv(c, buf, 1-r.Rank, 1)
		r.Check(err, "irecv")
		wantClass(r, rq.Start(), ranks.ErrRequest, "start a nonblocking request")
		r.Check(ranks.Send(c, []byte("12345678"), 1-r.Rank, 1), "send")
		_, err = rq.Wait()
		r.Check(err, "wait")
		_, err = rq.Wait()
		wantClass(r, err, ranks.ErrRequest, "wait on a completed request")
		_, _, err = rq.Test()
		wantClass(r, err, ranks.ErrRequest, "test on a completed request")
		wantClass(r, rq.Free(), ranks.ErrRequest, "free a completed request")
		// Communicators.
		wantClass(r, c.Free(), ranks.ErrComm, "free the world")
		var nilComm *ranks.Comm
		wantClass(r, ranks.Send(nilComm, buf, 0, 0), ranks.ErrComm, "nil communicator")
		// None of it harmed anything.
		pingPong(r, 1-r.Rank, 20)
	})
}

// After Finalize every call reports ErrFinalized; Init cannot run twice.
func TestUseAfterFinalize(t *testing.T) {
	ranktest.Run(t, 1, func(r *ranktest.R) {
		c := r.Comm
		if _, err := ranks.Init(); !errors.Is(err, ranks.ErrInit) {
			r.Errorf("second Init: %v", err)
		}
		rq, err := ranks.Irecv(c, make([]byte, 1), 0, 1)
		r.Check(err, "irecv")
		r.Check(r.World.Finalize(), "finalize")
		wantClass(r, r.World.Finalize(), ranks.ErrFinalized, "second Finalize")
		wantClass(r, ranks.Send(c, []byte{1}, 0, 0), ranks.ErrFinalized, "send")
		_, err = ranks.Recv(c, make([]byte, 1), 0, 0)
		wantClass(r, err, ranks.ErrFinalized, "recv")
		_, err = ranks.Isend(c, []byte{1}, 0, 0)
		wantClass(r, err, ranks.ErrFinalized, "isend")
		_, err = rq.Wait()
		wantClass(r, err, ranks.ErrFinalized, "wait")
		_, err = c.Probe(0, 0)
		wantClass(r, err, ranks.ErrFinalized, "probe")
		wantClass(r, c.FailureAck(), ranks.ErrFinalized, "ack")
		if _, err := ranks.Init(); !errors.Is(err, ranks.ErrInit) {
			r.Errorf("Init after Finalize: %v", err)
		}
	})
}

// Init refuses a segment that is foreign, corrupt, of another layout
// version, of another job, or closed, with an error that says which.
func TestInitRefusesBadSegment(t *testing.T) {
	if os.Getenv("SHMPI_BADSEG_CHILD") == "1" {
		_, err := ranks.Init()
		fmt.Printf("ERR %v\n", err)
		os.Stdout.Sync()
		os.Exit(0)
	}
	dir := t.TempDir()
	seg, err := job.NewSegment(job.DefaultLayout(2), 2)
	if err != nil {
		t.Fatal(err)
	}
	image := append([]byte(nil), seg.Bytes(0, seg.Size())...)
	jobID := seg.JobID()
	seg.Close()
	write := func(name string, patch func(b []byte) []byte) string {
		b := patch(append([]byte(nil), image...))
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, rank string
		jobID      uint64
		patch      func([]byte) []byte
		want       []string
	}{
		{"foreign", "0", jobID, func(b []byte) []byte { return []byte(strings.Repeat("not a segment ", 1000)) },
			[]string{shm.ErrForeignSegment.Error(), "magic"}},
		{"tiny", "0", jobID, func(b []byte) []byte { return b[:100] }, []string{shm.ErrForeignSegment.Error(), "smaller than a header"}},
		{"version", "0", jobID, func(b []byte) []byte { b[8]++; return b }, []string{shm.ErrSegmentVersion.Error()}},
		{"corrupt", "0", jobID, func(b []byte) []byte { b[40] ^= 0xff; return b }, []string{shm.ErrSegmentCorrupt.Error()}},
		{"truncated", "0", jobID, func(b []byte) []byte { return b[:len(b)-4096] }, []string{shm.ErrSegmentCorrupt.Error()}},
		{"otherjob", "0", jobID + 2, func(b []byte) []byte { return b }, []string{shm.ErrForeignSegment.Error(), "expected"}},
		{"closed", "0", jobID, func(b []byte) []byte { b[448] = shm.StateClosed; return b }, []string{shm.ErrStaleSegment.Error()}},
		{"rank", "9", jobID, func(b []byte) []byte { return b }, []string{"outside a job of 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name, tc.patch)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestInitRefusesBadSegment$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SHMPI_BADSEG_CHILD=1", job.EnvFD+"=3",
				job.EnvJob+"="+strconv.FormatUint(tc.jobID, 16), job.EnvRank+"="+tc.rank)
			cmd.ExtraFiles = []*os.File{f}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			got := string(out)
			if !strings.Contains(got, "ERR ") || !strings.Contains(got, ranks.ErrInit.Error()) {
				t.Fatalf("Init did not fail with ErrInit: %s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("error %q does not say %q", strings.TrimSpace(got), w)
				}
			}
		})
	}
}
