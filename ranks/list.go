package ranks

import "unsafe"

// link is embedded as the first field of a type whose values go on
// ilists (request, umsg), so that a *T and its *link[T] share an address:
// the list needs no method of T and no interface call.
type link[T any] struct {
	next, prev *T
	list       *ilist[T] // the list it is on, or nil
}

// ilist is an intrusive doubly linked list: O(1) push and remove with no
// allocation. Every operation runs under the engine lock.
type ilist[T any] struct {
	head, tail *T
	n          int
}

func linkOf[T any](x *T) *link[T] { return (*link[T])(unsafe.Pointer(x)) }

// Compile-time checks that link is the first field.
var (
	_ [0]struct{} = [unsafe.Offsetof(request{}.link)]struct{}{}
	_ [0]struct{} = [unsafe.Offsetof(umsg{}.link)]struct{}{}
)

func (l *ilist[T]) push(x *T) {
	k := linkOf(x)
	k.list, k.next, k.prev = l, nil, l.tail
	if l.tail != nil {
		linkOf(l.tail).next = x
	} else {
		l.head = x
	}
	l.tail = x
	l.n++
}

func (l *ilist[T]) pushFront(x *T) {
	k := linkOf(x)
	k.list, k.prev, k.next = l, nil, l.head
	if l.head != nil {
		linkOf(l.head).prev = x
	} else {
		l.tail = x
	}
	l.head = x
	l.n++
}

func (l *ilist[T]) remove(x *T) {
	k := linkOf(x)
	if k.prev != nil {
		linkOf(k.prev).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		linkOf(k.next).prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.next, k.prev, k.list = nil, nil, nil
	l.n--
}
