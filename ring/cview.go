package ring

import (
	"sync/atomic"
	"unsafe"
)

// The C view: what a second writer and reader of the ring's common case
// needs (the C library's fast paths, cabi/fastpath.h, which send and
// receive a small message without entering Go). It mirrors
// Producer.claimFast and Claimed.PublishGuarded for full and short
// records, and Consumer.PeekRecord and Release for records that need no
// guard restore and no pad; anything else it leaves to this package.
// The words come from here, not from constants copied into C, so that
// the two cannot drift apart.

// CWire is the control and announcement words' encoding.
type CWire struct {
	SeqShift, SeqMask, FormShift, FormMask, HiShift, HiMask, Written uint64
	FormFull, FormShort                                              uint64
	AnnFull, AnnPosMask                                              uint64
	PrefetchAhead                                                    uint64
}

// Wire returns the encoding.
func Wire() CWire {
	return CWire{
		SeqShift: seqShift, SeqMask: seqMask, FormShift: formShift, FormMask: formMask,
		HiShift: hiShift, HiMask: hiMask, Written: written,
		FormFull: formFull, FormShort: formShort,
		AnnFull: annFull, AnnPosMask: annPosMask,
		PrefetchAhead: prefetchAhead,
	}
}

// CRing is where a ring lives: its tail and head words, its units, and
// the mask of a unit's position.
type CRing struct {
	Tail, Head *atomic.Uint64
	Units      unsafe.Pointer
	Mask       uint64
}

// C returns r's view.
func (r *Ring) C() CRing { return CRing{Tail: r.tail, Head: r.head, Units: r.slots, Mask: r.mask} }

// CProducer is a producer's view: its ring, its announcement word, the
// announcement's constant part, and its control words' producer id. A
// C writer keeps a cached head of its own: any value the head once had
// is a safe bound.
type CProducer struct {
	Ring   CRing
	Ann    *atomic.Uint64
	AnnTop uint64
	ID     uint64
}

// C returns p's view.
func (p *Producer) C() CProducer {
	return CProducer{Ring: p.r.C(), Ann: p.ann, AnnTop: p.annTop, ID: p.id}
}

// CConsumer is the consumer's view: its ring, and the words that hold
// its position and the position it last published, which a C reader
// advances in place of Release (the consumer is pinned by its owner).
type CConsumer struct {
	Ring           CRing
	Pos, Published *uint64
}

// C returns c's view.
func (c *Consumer) C() CConsumer {
	return CConsumer{Ring: c.r.C(), Pos: &c.pos, Published: &c.published}
}
