package coll

import (
	"encoding/binary"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// Large reductions through shared memory.
//
// Above the staging size, Allreduce does not move its data with messages
// (a reduce-scatter then an allgather of point-to-point transfers: each
// a rendezvous, with process_vm_readv's per-page pinning on heap memory)
// but through a shared area the communicator's members map, made at the
// first such call: member 0 creates a memfd, the others open it through
// /proc (as win does). In chunks of bigChunk bytes per member:
//
//  1. each member copies its chunk in, to its own part; barrier;
//  2. member r reduces slice r of the chunk over every member's part, in
//     rank order (so non-commutative ops are applied as MPI says), into
//     the result part; barrier;
//  3. each member copies the whole result out.
//
// Each member copies its data twice and reads every part once in step 2,
// so both cores work and nothing waits on a single copier. The barriers
// order the reuse: a part is rewritten (step 1 of the next chunk or call)
// only after every member passed step 2's barrier, and the result only
// after every member passed the next step 1's barrier, which follows its
// step 3.
//
// Area layout (one memfd, mapped MAP_SHARED by every member):
//
//	+r*chunk     member r's part (r < size), chunk bytes
//	+size*chunk  the result, chunk bytes
//
// chunk is the L2 cache size cpuid reports (1 MiB here), 1 MiB where it
// reports none, kept within 256 KiB to 4 MiB: the area is (size+1)
// chunks, 3 MiB at 2 members, 65 MiB at 64, 257 MiB at 256, made only
// for communicators that reduce large vectors. Measured on this machine
// kind (osu_allreduce 1 MiB, µs, 2026-11-24): chunks of 128 KiB / 256
// KiB / 512 KiB / 1 MiB / 2 MiB gave 712 / 665 / 119 / 79 / 115 at 2
// ranks, and 512 KiB against 1 MiB 4,311 against 2,731 at 16 ranks and
// 13,191 against 10,029 at 64; smaller chunks fall far behind, for
// reasons not pinned down (it is not the barriers: two a chunk).
func bigChunk() int {
	c := cpuid.CPU.Cache.L2
	if c <= 0 {
		c = 1 << 20
	}
	return max(256<<10, min(4<<20, c)) &^ 63
}

// bigArea returns the communicator's shared area for large reductions,
// making it at the first call (collectively: every member calls it in
// the same collective). ok is false, at every member alike, when it
// cannot be made; the caller then uses messages.
func (st *state) bigArea(name string) (ok bool, err error) {
	if st.big != nil {
		return true, nil
	}
	if st.bigOff {
		return false, nil
	}
	chunk := bigChunk()
	total := (st.size + 1) * chunk
	// Member 0 makes the memory and publishes its descriptor; the others
	// open it while member 0 keeps it open (until the second phase).
	var created *shm.Mem
	var word [8]byte
	if st.rank == 0 {
		fd := int64(-1)
		if m, err := shm.NewMem(total); err == nil {
			created, fd = m, int64(m.FD())
		}
		binary.LittleEndian.PutUint64(word[:], uint64(fd))
	}
	if err := st.publish(name, word[:]); err != nil {
		return false, st.dropBig(created, err)
	}
	if err := st.arrive(name); err != nil {
		return false, st.dropBig(created, err)
	}
	fd := int64(binary.LittleEndian.Uint64(st.read(0)))
	m := created
	if st.rank != 0 && fd >= 0 {
		if pid := ext.Pid(st.c, 0); pid > 0 {
			m, _ = shm.OpenMem(pid, int(fd), total)
		}
	}
	mine := [8]byte{}
	if m != nil {
		mine[0] = 1
		// Fresh pages cost a fault each in every process on first touch;
		// populating them now costs several times less.
		unix.Madvise(m.B, unix.MADV_POPULATE_WRITE)
	}
	if err := st.publish(name, mine[:]); err != nil {
		return false, st.dropBig(m, err)
	}
	if err := st.arrive(name); err != nil {
		return false, st.dropBig(m, err)
	}
	for r := range st.size {
		if d := st.read(r); len(d) == 0 || d[0] != 1 {
			st.bigOff = true // someone could not map it: messages from now on
			return false, st.dropBig(m, nil)
		}
	}
	m.CloseFD() // every member mapped it: the mappings keep it alive
	st.big, st.bigChunk = m, chunk
	return true, nil
}

func (st *state) dropBig(m *shm.Mem, err error) error {
	if m != nil {
		m.Close()
	}
	return err
}

// freeBig unmaps the area (the communicator is freed).
func (st *state) freeBig() {
	if st.big != nil {
		st.big.Close()
		st.big = nil
	}
}

// bigPart is part r of the area (r == size: the result) as elements of T.
func bigPart[T any](st *state, r, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(&st.big.B[r*st.bigChunk])), n)
}

// reduceShared is Allreduce (root noRoot) or Reduce through the shared
// area (see above). A member's own slice needs no trip through the area:
// it copies in only the other slices of its data, and reduces its slice
// reading its own data where it is. A member that gets the result (every
// one in Allreduce, the root in Reduce) reduces its slice straight into
// its receive buffer and copies out only the others' slices; Allreduce
// publishes each slice in the result part, Reduce's other members reduce
// theirs there. In place, the receive buffer holds the data, and the
// member copies it all in. The barriers order the reuse as above: the
// result part is rewritten only after the next chunk's first barrier,
// which every member joins after its step 3.
func reduceShared[T any](st *state, mine, recv []T, op Op[T], root int, name string) error {
	var z T
	per := st.bigChunk / int(unsafe.Sizeof(z)) // elements per member per chunk
	n := len(mine)
	all := root == noRoot
	gets := all || st.rank == root
	inPlace := gets && unsafe.SliceData(mine) == unsafe.SliceData(recv)
	for base := 0; base < n; base += per {
		m := min(per, n-base)
		lo, hi := st.rank*m/st.size, (st.rank+1)*m/st.size
		in := mine[base : base+m]
		part := bigPart[T](st, st.rank, m)
		if inPlace {
			copyCached(part, in)
		} else {
			copyCached(part[:lo], in[:lo])
			copyCached(part[hi:], in[hi:])
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if lo < hi {
			res := bigPart[T](st, st.size, m)[lo:hi]
			acc := res
			if gets {
				acc = recv[base+lo : base+hi]
			}
			for r := range st.size {
				x := bigPart[T](st, r, m)[lo:hi]
				if r == st.rank && !inPlace {
					x = in[lo:hi]
				}
				if r == 0 {
					copy(acc, x)
				} else {
					op(acc, x)
				}
			}
			if all {
				copy(res, acc)
			}
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if gets {
			res, out := bigPart[T](st, st.size, m), recv[base:base+m]
			copyCached(out[:lo], res[:lo])
			copyCached(out[hi:], res[hi:])
		}
	}
	return nil
}

// reduceBig tells whether a Reduce of nb bytes a member goes through the
// shared area rather than by message: where the non-roots' sends would
// wait for the root (rendezvous, above 128 KiB), and from 64 KiB at 2
// members, where the root's copy out of an eager message and its
// reduction came after each other (docs/performance.md, 2026-11-28).
func (st *state) reduceBig(nb int) bool {
	return st.size > 1 && (nb >= 128<<10 || st.size == 2 && nb >= 64<<10)
}

// useBig tells whether an Allreduce of nb bytes a member goes through
// the shared area.
func (st *state) useBig(nb int) bool { return st.size > 1 && nb > inlineMax && !st.staging(nb) }

// copyCached copies src into dst (of equal length) in cache-sized steps
// (spin.CopyCached): what is copied here is read again at once, by the
// peers (step 2) or by the caller.
func copyCached[T any](dst, src []T) {
	if len(src) == 0 {
		return
	}
	var z T
	spin.CopyCached(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), len(src)*int(unsafe.Sizeof(z)))
}

// exchangeShared is Alltoall, or Allgather (gather), through the shared
// area, for members that sleep. Each member copies its send buffer to
// its part and publishes its length in its line; after a barrier each
// copies its block out of every part (Allgather: every part whole); a
// length that differs from its own is ErrCount at every member alike; a
// last barrier keeps the parts until all have read them. A member with
// bad arguments (bad) takes its part all the same, so that nobody waits
// for it.
//
// A send buffer larger than a part goes in rounds, a slice of every
// block a round, through the two halves of each part in turn: one
// barrier a round suffices, since a half is rewritten (round j+2) only
// after every member passed round j+1's barrier, which it joins once it
// has copied out of round j. Slices are multiples of 64 bytes: no two
// members write one cache line. By message instead, every pair of
// members must be scheduled in turn: 8 ranks, 128 KiB blocks (a 1 MiB
// send buffer, above this machine's 512 KiB part), 1,022 µs against
// Open MPI's 699 (docs/performance.md, 2026-11-28).
func exchangeShared(st *state, send, recv []byte, gather bool, bad error, name string) error {
	n := len(send)
	blk, per := n, 1 // a member's block, and the blocks of its send buffer
	if !gather {
		blk, per = n/st.size, st.size
	}
	s, halves := blk, 1 // a round's slice of each block
	if blk*per > st.bigChunk {
		s, halves = (st.bigChunk/2/per)&^63, 2
	}
	rounds := 1
	if s > 0 && blk > s {
		rounds = (blk + s - 1) / s
	}
	var word [8]byte
	binary.LittleEndian.PutUint64(word[:], uint64(n))
	if err := st.publish(name, word[:]); err != nil {
		return err
	}
	var mismatch error
	for j := range rounds {
		off := j * s
		l := min(s, blk-off)
		h := (j % halves) * (st.bigChunk / 2)
		part := func(r int) []byte { return st.big.B[r*st.bigChunk+h : (r+1)*st.bigChunk] }
		mine := part(st.rank)
		for d := range per {
			copyCached(mine[d*s:d*s+l], send[d*blk+off:d*blk+off+l])
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if j == 0 {
			for r := range st.size {
				if d := st.read(r); len(d) != 8 || binary.LittleEndian.Uint64(d) != uint64(n) {
					mismatch = &ranks.Error{Class: ranks.ErrCount, Op: name, Rank: r, Detail: "a member sent a block of another size"}
					break
				}
			}
			// Every member decides alike here: the lengths and the
			// header's verdict were written before this barrier.
			if mismatch != nil || st.verdict(name) != nil {
				break
			}
		}
		if bad != nil {
			continue
		}
		at := 0 // where this member's slice lies in a part
		if !gather {
			at = st.rank * s
		}
		for r := range st.size {
			copy(recv[r*blk+off:r*blk+off+l], part(r)[at:at+l])
		}
	}
	if err := st.arrive(name); err != nil {
		return err
	}
	return st.conclude(name, bad, mismatch)
}

// exchangeFits tells whether Alltoall or Allgather (gather) of n bytes
// a member goes through the shared area: in one round, or in rounds
// whose slices are at least 32 KiB. With smaller slices the rounds'
// barriers (every member woken, each time) cost more than messages
// save: 64 ranks, Alltoall of 32 / 64 / 128 KiB blocks in 4 KiB slices,
// 35.4 / 72.0 / 129.1 ms against 33.0 / 52.8 / 91.9 by message
// (2026-11-28).
func (st *state) exchangeFits(n int, gather bool) bool {
	per := 1
	if !gather {
		per = st.size
	}
	return n <= bigChunk() || bigChunk()/2/per >= 32<<10
}
