package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A series is one line of a chart: points at x, each a Value. Series of
// one operation share a colour and a glyph (style); shmpi's are solid,
// a comparison's (Open MPI) dashed, a reference's measured beside it
// (a barrier, the kernel's futex wake) dotted and grey.
type series struct {
	label string // the operation, in the legend; series of another kind share one entry
	style int
	kind  seriesKind
	x     []float64
	y     []Value
}

type seriesKind int

const (
	ours seriesKind = iota
	other
	reference
)

func (s *series) add(x float64, v Value) {
	if v.OK && v.Lo > 0 {
		s.x = append(s.x, x)
		s.y = append(s.y, v)
	}
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

var (
	grey   = color.Gray{Y: 0x80}
	dashed = []vg.Length{vg.Points(5), vg.Points(3)}
	dotted = []vg.Length{vg.Points(1), vg.Points(2)}
)

// chart is one panel: series on log-log axes (x in powers of two).
// otherName and refName label the dashed and the dotted series in the
// legend.
func chart(title, xlabel, ylabel string, ss []*series, otherName, refName string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.Y.Scale = plot.LogScale{}
	p.X.Tick.Marker = powersOfTwo{}
	p.Y.Tick.Marker = logTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	ymin, ymax := math.Inf(1), math.Inf(-1)
	entries := 0
	haveKind := map[seriesKind]bool{}
	for _, s := range ss {
		if len(s.x) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.x))
		errs := make(plotter.YErrors, len(s.x))
		ranged := false
		for i := range s.x {
			m := s.y[i].Mid()
			xys[i] = plotter.XY{X: s.x[i], Y: m}
			errs[i].Low, errs[i].High = m-s.y[i].Lo, s.y[i].Hi-m
			ranged = ranged || s.y[i].IsRange()
			ymin, ymax = min(ymin, s.y[i].Lo), max(ymax, s.y[i].Hi)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := palette[s.style%len(palette)]
		line.Color, points.Color = c, c
		points.Shape = shapes[s.style%len(shapes)]
		line.Width = vg.Points(1.5)
		switch s.kind {
		case reference:
			line.Color, points.Color = grey, grey
			line.Dashes = dotted
			line.Width = vg.Points(1)
		case other:
			line.Dashes = dashed
			points.Shape = draw.CircleGlyph{}
		}
		p.Add(line, points)
		if ranged {
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{xys, errs})
			if err != nil {
				return nil, err
			}
			bars.Color = line.Color
			p.Add(bars)
		}
		if s.kind == ours {
			p.Legend.Add(s.label, line, points)
			entries++
		}
		haveKind[s.kind] = true
	}
	if entries == 0 && !haveKind[other] {
		return nil, nil
	}
	if haveKind[other] {
		p.Legend.Add(otherName+" (dashed)", &plotter.Line{LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1.5), Dashes: dashed}})
		entries++
	}
	if haveKind[reference] {
		p.Legend.Add(refName+" (dotted)", &plotter.Line{LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1), Dashes: dotted}})
		entries++
	}
	// Room above the data for the legend: its share of the height, in
	// log space.
	if f := min(0.35, 0.065*float64(entries)); ymax > ymin {
		p.Y.Min = ymin / 1.15
		p.Y.Max = p.Y.Min * math.Pow(ymax*1.15/p.Y.Min, 1/(1-f))
	}
	return p, nil
}

// logTicks labels 1, 2 and 5 times the powers of ten, or only the powers
// of ten over a wide range.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	steps := []float64{1, 2, 5}
	if hi/lo > 1e3 {
		steps = []float64{1}
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, k := range steps {
			v := k * math.Pow(10, e)
			if v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v, Label: number(v)})
			}
		}
	}
	return ts
}

var shapes = []draw.GlyphDrawer{
	draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// powersOfTwo marks sizes and rank counts: 1, 2, 4, ..., written 1 KiB
// and 1 MiB past 1024.
type powersOfTwo struct{}

func (powersOfTwo) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log2(lo)); math.Pow(2, e) <= hi*1.0001; e++ {
		v := math.Pow(2, e)
		if v < lo*0.9999 {
			continue
		}
		ts = append(ts, plot.Tick{Value: v, Label: sizeLabel(v)})
	}
	return ts
}

// number writes a tick's value: 0.5, 20, 1000, 10k, 2M.
func number(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func sizeLabel(v float64) string {
	switch {
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'g', -1, 64) + "M"
	case v >= 1<<10:
		return strconv.FormatFloat(v/(1<<10), 'g', -1, 64) + "K"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// mpiName is how the system MPI appears in legends.
func mpiName(e Envelope) string {
	if e.SystemMPI != "" {
		return e.SystemMPI
	}
	return "Open MPI"
}

// p2pCharts: latency by message size, and small-message bandwidth.
func p2pCharts(l *Latency) ([]*plot.Plot, error) {
	// The placement with the most kept runs: figures of one placement
	// only, since the hand-off sets the floor.
	runs := map[string]int{}
	for _, s := range l.Summary {
		runs[s.Placement] += s.Runs
	}
	place := ""
	for p, n := range runs {
		if place == "" || n > runs[place] || n == runs[place] && p < place {
			place = p
		}
	}
	mpi := mpiName(l.Envelope)
	kinds := []struct {
		kind, label string
		style       int
		k           seriesKind
	}{
		{"ours_default", "shmpi", 0, ours},
		{"ours_single", "shmpi, ThreadSingle", 2, ours},
		{"ompi", mpi, 0, other},
	}
	var lat []*series
	handoff := Value{}
	for _, k := range kinds {
		s := &series{label: k.label, style: k.style, kind: k.k}
		for _, e := range l.Summary {
			if e.Kind == k.kind && e.Placement == place {
				s.add(8, scale(e.Lat8, 1e-3))
				s.add(1024, scale(e.Lat1k, 1e-3))
				s.add(8192, scale(e.Lat8k, 1e-3))
				if e.Handoff.OK {
					handoff = e.Handoff
				}
			}
		}
		lat = append(lat, s)
	}
	title := "One-way latency, 2 ranks"
	if handoff.OK {
		title += fmt.Sprintf(" (hand-off %.0f ns)", handoff.Mid())
	}
	p1, err := chart(title, "message size (bytes)", "µs", lat, mpi, "")
	if err != nil {
		return nil, err
	}
	bw := &series{label: "shmpi", style: 0}
	theirs := &series{label: mpi, style: 0, kind: other}
	for _, m := range l.SmallMessages {
		switch m.Kind {
		case "ours_bw":
			bw.add(float64(m.Size), m.Value)
		case "ompi_bw":
			theirs.add(float64(m.Size), m.Value)
		}
	}
	p2, err := chart("Bandwidth, small messages (osu_bw)", "message size (bytes)", "MB/s", []*series{bw, theirs}, mpi, "")
	if err != nil {
		return nil, err
	}
	return nonNil(p1, p2), nil
}

// collCharts: µs per call by job size, ours and the system MPI's.
func collCharts(c *Coll) ([]*plot.Plot, error) {
	mpi := mpiName(c.Envelope)
	panel := func(title string, whats []string, labels []string) (*plot.Plot, error) {
		var ss []*series
		for i, w := range whats {
			mine := &series{label: labels[i], style: i}
			theirs := &series{label: labels[i], style: i, kind: other}
			for _, e := range c.Summary {
				if e.What == w {
					mine.add(float64(e.Ranks), e.Shmpi)
					theirs.add(float64(e.Ranks), e.OMPI)
				}
			}
			ss = append(ss, mine, theirs)
		}
		return chart(title, "ranks (on "+cores(c.Envelope)+")", "µs per call", ss, mpi, "")
	}
	p1, err := panel("Barrier and Allreduce of 8 bytes", []string{"barrier", "allreduce_8B"}, []string{"barrier", "allreduce 8 B"})
	if err != nil {
		return nil, err
	}
	p2, err := panel("Allreduce of 1 MiB, communicator Dup", []string{"allreduce_1MiB", "dup"}, []string{"allreduce 1 MiB", "dup"})
	if err != nil {
		return nil, err
	}
	return nonNil(p1, p2), nil
}

// ulfmCharts: the calls by job size beside their references (and Open
// MPI 5's figures where recorded), and the recovery after a SIGKILL, in
// phases when a report measured them.
func ulfmCharts(u *ULFM) ([]*plot.Plot, error) {
	ompi := u.OMPIName
	if ompi == "" {
		ompi = "Open MPI 5 (ULFM)"
	}
	ops := []struct {
		label     string
		get, rget func(f *ULFMFigures) Value
	}{
		{"agree", func(f *ULFMFigures) Value { return f.Agree }, func(f *ULFMFigures) Value { return f.Barrier }},
		{"shrink", func(f *ULFMFigures) Value { return f.Shrink }, func(f *ULFMFigures) Value { return f.Dup }},
		{"revoke", func(f *ULFMFigures) Value { return f.Revoke }, func(f *ULFMFigures) Value { return f.FutexFloor }},
	}
	var ss []*series
	for i, o := range ops {
		mine := &series{label: o.label, style: i}
		ref := &series{label: o.label, style: i, kind: reference}
		theirs := &series{label: o.label, style: i, kind: other}
		for j := range u.Summary {
			e := &u.Summary[j]
			x := float64(e.Ranks)
			mine.add(x, o.get(&e.ULFMFigures))
			ref.add(x, o.rget(&e.ULFMFigures))
			if e.OMPI != nil {
				theirs.add(x, o.get(e.OMPI))
			}
		}
		ss = append(ss, mine, ref, theirs)
	}
	p1, err := chart("Agree, shrink, revoke", "ranks (on "+cores(u.Envelope)+")", "µs", ss, ompi,
		"references: barrier, dup, futex wake of the sleepers")
	if err != nil {
		return nil, err
	}
	if p, err := phaseChart(u); p != nil || err != nil {
		return nonNil(p1, p), err
	}
	mine := &series{label: "shmpi", style: 0}
	theirs := &series{label: ompi, style: 0, kind: other}
	for _, e := range u.Summary {
		mine.add(float64(e.Ranks), scale(e.RecoveryTotal, 1e-3))
		if e.OMPI != nil {
			theirs.add(float64(e.Ranks), scale(e.OMPI.RecoveryTotal, 1e-3))
		}
	}
	p2, err := chart("Recovery after a SIGKILL, to the first allreduce", "ranks (on "+cores(u.Envelope)+")",
		"ms", []*series{mine, theirs}, ompi, "")
	if err != nil {
		return nil, err
	}
	return nonNil(p1, p2), nil
}

// phaseChart stacks the recovery's phases by job size, or returns nil if
// the report has no phases.
func phaseChart(u *ULFM) (*plot.Plot, error) {
	phases := []struct {
		label string
		get   func(f *ULFMFigures) Value
	}{
		{"to the error", func(f *ULFMFigures) Value { return f.RecoveryError }},
		{"revoke", func(f *ULFMFigures) Value { return f.RecoveryRevoke }},
		{"agree", func(f *ULFMFigures) Value { return f.RecoveryAgree }},
		{"shrink", func(f *ULFMFigures) Value { return f.RecoveryShrink }},
		{"first allreduce", func(f *ULFMFigures) Value { return f.RecoveryAllreduce }},
	}
	var ranks []int
	for _, e := range u.Summary {
		if e.RecoveryError.OK {
			ranks = append(ranks, e.Ranks)
		}
	}
	if len(ranks) == 0 {
		return nil, nil
	}
	slices.Sort(ranks)
	p := plot.New()
	p.Title.Text = "Recovery after a SIGKILL, by phase"
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = "ranks (on " + cores(u.Envelope) + ")"
	p.Y.Label.Text = "ms, slowest survivor"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	var below *plotter.BarChart
	top := 0.0
	stacked := make([]float64, len(ranks)) // the phases so far, by job size
	for i, ph := range phases {
		vs := make(plotter.Values, len(ranks))
		for j, n := range ranks {
			for _, e := range u.Summary {
				if e.Ranks == n {
					if v := ph.get(&e.ULFMFigures); v.OK {
						vs[j] = v.Mid() / 1e3
					}
				}
			}
		}
		for j, v := range vs {
			stacked[j] += v
			top = max(top, stacked[j])
		}
		b, err := plotter.NewBarChart(vs, vg.Points(24))
		if err != nil {
			return nil, err
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(ph.label, b)
	}
	names := make([]string, len(ranks))
	for i, n := range ranks {
		names[i] = strconv.Itoa(n)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(ranks))-0.4
	p.Y.Min = 0
	if top > 0 {
		p.Y.Max = top / (1 - 0.085*float64(len(phases))) // room for the legend
	}
	return p, nil
}

// footprintChart: the segment and each rank's memory by job size.
func footprintChart(f *Footprint) ([]*plot.Plot, error) {
	seg := &series{label: "segment per rank", style: 0}
	rss := &series{label: "RSS per rank", style: 1}
	pss := &series{label: "PSS per rank", style: 2}
	for _, r := range f.Rows {
		x := float64(r.Ranks)
		seg.add(x, scale(r.SegmentByRank, 1.0/1024))
		rss.add(x, scale(r.RSS, 1.0/1024))
		pss.add(x, scale(r.PSS, 1.0/1024))
	}
	p, err := chart("Memory per rank", "ranks", "MiB", []*series{seg, rss, pss}, "", "")
	return nonNil(p), err
}

func scale(v Value, k float64) Value {
	v.Lo *= k
	v.Hi *= k
	return v
}

// cores names the job's CPUs for an axis label: oversubscribed jobs
// wait differently (docs/design.md).
func cores(e Envelope) string {
	if e.Host.CPUs > 0 {
		return fmt.Sprintf("%d cores", e.Host.CPUs)
	}
	return "this machine"
}

func nonNil(ps ...*plot.Plot) []*plot.Plot {
	var out []*plot.Plot
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}
