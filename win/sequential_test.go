package win_test

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/win"
)

// Every operation under every synchronization mode and window kind, at
// 1, 2, 4 and 8 ranks, against a sequential model. Every rank is origin
// to every rank (itself included) in one epoch; each target's memory,
// and what the origins read, is then checked. Target t's int64 slots:
//
//	[0, n)       Put from origin o: 1000*o + t
//	[n, 2n)      Rput from origin o: 2000*o + t
//	2n           Accumulate Sum of o+1 from every origin
//	2n+1         Raccumulate Sum of o+1 from every origin
//	2n+2         FetchAndOp Sum of 1 from every origin (olds: 0..n-1)
//	2n+3         CompareAndSwap 0 -> o+1 from every origin (one winner)
//	2n+4         GetAccumulate Sum of 10 (olds: distinct multiples of 10)
//	2n+5         RgetAccumulate Sum of 100
//	2n+6         7000 + t, set by t before the epoch: Get and Rget read it
func TestModel(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8} {
		for _, kind := range []string{"shared", "heap", "allocmem", "dynamic"} {
			t.Run(fmt.Sprintf("%d/%s", n, kind), func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
					for _, mode := range []string{"fence", "pscw", "lock", "lockall"} {
						modelRound(r, kind, mode)
					}
				})
			})
		}
	}
}

func modelRound(r *ranktest.R, kind, mode string) {
	c, me, n := r.Comm, r.Rank, r.Size
	slots := 2*n + 7
	what := func(s string) string { return fmt.Sprintf("%s window, %s: %s", kind, mode, s) }
	check := func(err error, s string) {
		if err != nil {
			r.Fatalf("%s: %v", what(s), err)
		}
	}
	// The window and this rank's own memory in it.
	var w *win.Win
	var own []int64
	var mem []byte
	var err error
	addrs := make([]int64, n)
	switch kind {
	case "shared":
		w, err = win.AllocateShared(c, 8*slots, 8)
		check(err, "AllocateShared")
		own, err = win.View[int64](w, me)
		check(err, "View")
	case "heap", "allocmem", "dynamic":
		mem = make([]byte, 8*slots)
		if kind == "allocmem" {
			mem, err = ranks.AllocMem(8 * slots)
			check(err, "AllocMem")
		}
		own = unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), slots)
		if kind == "dynamic" {
			w, err = win.CreateDynamic(c)
			check(err, "CreateDynamic")
			check(w.Attach(mem), "Attach")
			check(coll.Allgather(c, []int64{int64(win.Address(mem))}, addrs), "Allgather addresses")
		} else {
			w, err = win.Create(c, mem, 8)
			check(err, "Create")
		}
	}
	disp := func(t, slot int) int {
		if kind == "dynamic" {
			return int(addrs[t]) + 8*slot
		}
		return slot
	}
	clear(own)
	own[2*n+6] = int64(7000 + me)
	check(coll.Barrier(c), "barrier before the epoch")

	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	olds := make([]int64, n)    // FetchAndOp's olds, per target
	casOld := make([]int64, n)  // CompareAndSwap's olds, per target
	gaccOld := make([]int64, n) // GetAccumulate's olds, per target
	got := make([]int64, 2*n)   // Get and Rget of each target's slot 2n+6
	ops := func(t int) {
		check(win.Put(w, []int64{int64(1000*me + t)}, t, disp(t, me)), "Put")
		q, err := win.Rput(w, []int64{int64(2000*me + t)}, t, disp(t, n+me))
		check(err, "Rput")
		_, err = q.Wait()
		check(err, "Rput wait")
		check(win.Accumulate(w, []int64{int64(me + 1)}, t, disp(t, 2*n), coll.Sum[int64]), "Accumulate")
		q, err = win.Raccumulate(w, []int64{int64(me + 1)}, t, disp(t, 2*n+1), coll.Sum[int64])
		check(err, "Raccumulate")
		_, err = q.Wait()
		check(err, "Raccumulate wait")
		olds[t], err = win.FetchAndOp(w, int64(1), t, disp(t, 2*n+2), coll.Sum[int64])
		check(err, "FetchAndOp")
		casOld[t], err = win.CompareAndSwap(w, int64(0), int64(me+1), t, disp(t, 2*n+3))
		check(err, "CompareAndSwap")
		res := []int64{-1}
		check(win.GetAccumulate(w, []int64{10}, res, t, disp(t, 2*n+4), coll.Sum[int64]), "GetAccumulate")
		gaccOld[t] = res[0]
		q, err = win.RgetAccumulate(w, []int64{100}, res, t, disp(t, 2*n+5), coll.Sum[int64])
		check(err, "RgetAccumulate")
		_, err = q.Wait()
		check(err, "RgetAccumulate wait")
		check(win.Get(w, got[2*t:2*t+1], t, disp(t, 2*n+6)), "Get")
		q, err = win.Rget(w, got[2*t+1:2*t+2], t, disp(t, 2*n+6))
		check(err, "Rget")
		_, err = q.Wait()
		check(err, "Rget wait")
	}
	switch mode {
	case "fence":
		check(w.Fence(0), "opening Fence")
		for t := range n {
			ops(t)
		}
		check(w.Fence(0), "closing Fence")
	case "pscw":
		check(w.Post(all), "Post")
		check(w.Start(all), "Start")
		for t := range n {
			ops(t)
		}
		check(w.Complete(), "Complete")
		check(w.Wait(), "Wait")
		check(coll.Barrier(c), "barrier after the epoch")
	case "lock":
		for k := range n {
			t := (me + k) % n
			check(w.Lock(win.LockExclusive, t), "Lock")
			ops(t)
			check(w.Unlock(t), "Unlock")
		}
		check(coll.Barrier(c), "barrier after the epoch")
	case "lockall":
		check(w.LockAll(), "LockAll")
		for t := range n {
			ops(t)
		}
		check(w.FlushAll(), "FlushAll")
		check(w.UnlockAll(), "UnlockAll")
		check(coll.Barrier(c), "barrier after the epoch")
	}

	// This rank as a target.
	for o := range n {
		if own[o] != int64(1000*o+me) || own[n+o] != int64(2000*o+me) {
			r.Errorf("%s: slots of origin %d: %d, %d", what("Put/Rput"), o, own[o], own[n+o])
		}
	}
	if want := int64(n * (n + 1) / 2); own[2*n] != want || own[2*n+1] != want {
		r.Errorf("%s: %d, %d, want %d", what("Accumulate/Raccumulate sums"), own[2*n], own[2*n+1], want)
	}
	if own[2*n+2] != int64(n) || own[2*n+4] != int64(10*n) || own[2*n+5] != int64(100*n) {
		r.Errorf("%s: %d, %d, %d", what("FetchAndOp/GetAccumulate/RgetAccumulate totals"), own[2*n+2], own[2*n+4], own[2*n+5])
	}
	if v := own[2*n+3]; v < 1 || v > int64(n) {
		r.Errorf("%s: %d", what("CompareAndSwap result"), v)
	}
	if own[2*n+6] != int64(7000+me) {
		r.Errorf("%s: %d", what("the slot only read"), own[2*n+6])
	}
	// This rank as an origin.
	for t := range n {
		if got[2*t] != int64(7000+t) || got[2*t+1] != int64(7000+t) {
			r.Errorf("%s from %d: %d, %d", what("Get/Rget"), t, got[2*t], got[2*t+1])
		}
	}
	// Across origins: the olds of each target are 0..n-1 (FetchAndOp),
	// distinct multiples of 10 (GetAccumulate), and one CAS winner whose
	// value the target holds.
	allOlds := make([]int64, 3*n*n)
	mine := append(append(slices.Clone(olds), gaccOld...), casOld...)
	check(coll.Allgather(c, mine, allOlds), "Allgather olds")
	wantWinner := int64(0)
	for t := range n {
		var fo, ga []int64
		winners := 0
		for o := range n {
			row := allOlds[3*n*o : 3*n*(o+1)]
			fo = append(fo, row[t])
			ga = append(ga, row[n+t]/10)
			if row[2*n+t] == 0 {
				winners++
				if t == me {
					wantWinner = int64(o + 1)
				}
			}
		}
		slices.Sort(fo)
		slices.Sort(ga)
		for i := range n {
			if fo[i] != int64(i) || ga[i] != int64(i) {
				r.Errorf("%s at target %d: FetchAndOp %v, GetAccumulate/10 %v", what("olds"), t, fo, ga)
				break
			}
		}
		if winners != 1 {
			r.Errorf("%s at target %d: %d winners", what("CompareAndSwap"), t, winners)
		}
	}
	if own[2*n+3] != wantWinner {
		r.Errorf("%s: target holds %d, the winner wrote %d", what("CompareAndSwap"), own[2*n+3], wantWinner)
	}
	check(coll.Barrier(c), "barrier before Free")
	if kind == "dynamic" {
		check(w.Detach(mem), "Detach")
	}
	check(w.Free(), "Free")
	if kind == "allocmem" {
		check(ranks.FreeMem(mem), "FreeMem")
	}
}
