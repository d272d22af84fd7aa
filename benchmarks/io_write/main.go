// Command io_write measures collective file writes through package mpio
// against one process writing the same bytes sequentially, and against
// the members' own independent writes:
//
//	shmrun -n 8 ./io_write [-size 1073741824] [-piece 4096] [-small 268435456] [-i 3] [-fsync] [-dir /tmp]
//
// Rows, each a fresh file of its own in -dir (deleted after), timed from
// a barrier before the first write to a barrier after the last one (and
// after the fdatasync with -fsync), the median of -i runs:
//
//   - sequential: member 0 alone writes -size bytes with 4 MiB writes
//     (the reference: what the file system takes from one process);
//   - WriteAtAll blocks: every member writes its block of a
//     block-distributed array of -size bytes with one WriteAtAll (in
//     mpio's automatic mode, where a member writes the aggregator
//     domains that only its data reaches itself, and the aggregator the
//     domains where members' blocks meet);
//   - WriteAtAll blocks staged: the same with romio_cb_write "enable":
//     every byte through the staging buffer and the aggregator;
//   - WriteAt blocks: the same blocks, each with one WriteAt;
//   - WriteAt pieces: a block-cyclic array of -small bytes, each member
//     writing its -piece-byte pieces with one WriteAt each (many small
//     writes);
//   - WriteAll pieces: the same array, each member's pieces in one
//     WriteAll through a strided view (aggregated into large writes).
//
// Without -fsync the figures are the speed of writing into the page
// cache, which is what a program sees until the kernel writes the data
// back; with it every row also waits for the device, which then
// dominates every row alike. The last column is each row's speed over
// the sequential row's (for the rows of -size bytes), or over WriteAt
// pieces (for WriteAll pieces). With -check, the first run of each
// layout is compared byte for byte with a file member 0 writes
// sequentially.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
)

func main() {
	size := flag.Int64("size", 1<<30, "bytes of the block-distributed array")
	small := flag.Int64("small", 256<<20, "bytes of the block-cyclic array of small pieces")
	piece := flag.Int64("piece", 4096, "bytes per piece of the block-cyclic array")
	iters := flag.Int("i", 3, "runs of each row (the median is printed)")
	fsync := flag.Bool("fsync", false, "include an fdatasync of the file in every timed write")
	dir := flag.String("dir", os.TempDir(), "directory of the files")
	check := flag.Bool("check", false, "compare each layout's file with a sequential writer's once")
	aggs := flag.Int("cb_nodes", 0, "the cb_nodes hint: aggregators (0: mpio's default)")
	cbuf := flag.Int("cb_buffer_size", 0, "the cb_buffer_size hint: bytes per aggregator per round (0: mpio's default)")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	p, me := int64(c.Size()), int64(c.Rank())
	if *size <= 0 || *small <= 0 || *piece <= 0 || *iters <= 0 || *size%p != 0 || *small%(p**piece) != 0 {
		if me == 0 {
			log.Printf("-size must be a multiple of the members (%d), -small of members × -piece (%d)", p, p**piece)
		}
		w.Finalize()
		os.Exit(2)
	}
	b := &bench{c: c, dir: *dir, fsync: *fsync, info: ranks.NewInfo()}
	job := []int64{int64(os.Getppid())}
	must(coll.Bcast(c, job, 0))
	b.job = job[0]
	if *aggs > 0 {
		b.info.Set("cb_nodes", fmt.Sprint(*aggs))
	}
	if *cbuf > 0 {
		b.info.Set("cb_buffer_size", fmt.Sprint(*cbuf))
	}
	if me == 0 {
		fmt.Printf("# shmpi io_write: collective writes through shared memory\n")
		fmt.Printf("# %d ranks, array %d bytes, small-piece array %d bytes in pieces of %d, fdatasync %s, median of %d, dir %s\n",
			p, *size, *small, *piece, map[bool]string{true: "included", false: "not included"}[*fsync], *iters, *dir)
		fmt.Printf("%-24s%16s%14s%14s%10s\n", "# Method", "Bytes", "Time (s)", "MB/s", "Ratio")
	}

	// The data: this member's block of the array, and its pieces of the
	// block-cyclic one (each the bytes of its place in the array).
	per := *size / p
	block := fill(me*per, per)
	pieces := make([]byte, *small/p)
	for k := int64(0); k < int64(len(pieces)) / *piece; k++ {
		copy(pieces[k**piece:(k+1)**piece], fill((k*p+me)**piece, *piece))
	}

	var all []byte // member 0: the whole array, for the sequential row
	if me == 0 {
		all = fill(0, *size)
	}
	seq := b.row("sequential", *size, *iters, func(f *mpio.File) error {
		for at := int64(0); at < int64(len(all)); at += 4 << 20 {
			if _, err := mpio.WriteAt(f, at, all[at:min(at+4<<20, int64(len(all)))]); err != nil {
				return err
			}
		}
		return nil
	}, 0, nil)
	blocks := func(f *mpio.File) error {
		_, err := mpio.WriteAtAll(f, me*per, block)
		return err
	}
	var want []byte
	if *check {
		want = fill(0, *size)
	}
	all = nil
	b.row("WriteAtAll blocks", *size, *iters, blocks, seq, want)
	// The same, with every byte through the staging buffer (automatic
	// mode lets a member write the domains that hold its data alone).
	auto := b.info
	b.info, _ = auto.Dup()
	b.info.Set("romio_cb_write", "enable")
	b.row("WriteAtAll blocks staged", *size, *iters, blocks, seq, want)
	b.info = auto
	b.row("WriteAt blocks", *size, *iters, func(f *mpio.File) error {
		_, err := mpio.WriteAt(f, me*per, block)
		return err
	}, seq, want)
	if *check {
		want = fill(0, *small)
	}
	ind := b.row(fmt.Sprintf("WriteAt pieces %d", *piece), *small, *iters, func(f *mpio.File) error {
		for k := int64(0); k < int64(len(pieces)) / *piece; k++ {
			if _, err := mpio.WriteAt(f, (k*p+me)**piece, pieces[k**piece:(k+1)**piece]); err != nil {
				return err
			}
		}
		return nil
	}, 0, want)
	b.row(fmt.Sprintf("WriteAll pieces %d", *piece), *small, *iters, func(f *mpio.File) error {
		if err := f.SetView(me**piece, int(*piece), mpio.Filetype{Block: 1, Stride: int(p)}); err != nil {
			return err
		}
		_, err := mpio.WriteAll(f, pieces)
		return err
	}, ind, want)
}

// fill returns the bytes at positions [at, at+n) of the arrays.
func fill(at, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		x := uint64(at + int64(i))
		b[i] = byte(x ^ x>>8 ^ x>>16)
	}
	return b
}

type bench struct {
	c     *ranks.Comm
	job   int64 // rank 0's launcher's pid: names the files alike on every node
	dir   string
	fsync bool
	info  *ranks.Info
	runs  int
}

// row times write on a fresh file -i times and prints the median; ref
// is the time of the row to compare with (0: none). With want, the
// first run's file is compared with it. It returns the median.
func (b *bench) row(name string, bytesWritten int64, iters int, write func(*mpio.File) error, ref time.Duration, want []byte) time.Duration {
	var times []time.Duration
	for i := range iters {
		b.runs++
		path := filepath.Join(b.dir, fmt.Sprintf("io_write.%d.%d", b.job, b.runs))
		f, err := mpio.Open(b.c, path, mpio.ModeCreate|mpio.ModeWronly|mpio.ModeDeleteOnClose, b.info)
		must(err)
		must(coll.Barrier(b.c))
		t0 := time.Now()
		must(write(f))
		if b.fsync {
			must(f.Sync())
		}
		must(coll.Barrier(b.c))
		times = append(times, time.Since(t0))
		if i == 0 && want != nil && b.c.Rank() == 0 {
			got, err := os.ReadFile(path)
			must(err)
			if !bytes.Equal(got, want) {
				log.Fatalf("%s: the file differs from the sequential one", name)
			}
		}
		must(f.Close())
	}
	slices.Sort(times)
	t := times[len(times)/2]
	if b.c.Rank() == 0 {
		ratio := ""
		if ref > 0 {
			ratio = fmt.Sprintf("%.2f", ref.Seconds()/t.Seconds())
		}
		fmt.Printf("%-24s%16d%14.3f%14.1f%10s\n", name, bytesWritten, t.Seconds(), float64(bytesWritten)/t.Seconds()/1e6, ratio)
	}
	return t
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
