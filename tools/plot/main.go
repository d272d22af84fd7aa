// Command plot draws SVG charts from the JSON of shmpi's benchmark
// reports: latency and bandwidth by message size, collectives by job
// size, the fault-tolerance calls and the recovery by job size, memory by
// job size; shmpi against the system MPI measured in the same run, and
// against the references measured beside it.
//
//	go run ./tools/plot -o charts benchmarks/results/2026-11-26T101500Z.json
//	go run . -o ../../docs/figures ../../docs/figures/*.json   (in tools/plot)
//
// It reads benchmarks/all.sh's files and single reports' -json output
// alike; a later file's report of a kind replaces an earlier one's. It
// writes p2p.svg (from latency_report.sh), coll.svg (coll_report.sh),
// ulfm.svg (ulfm_report.sh) and footprint.svg (footprint_report.sh) for
// the reports it was given (or .png with -format png), each with a footer naming the date and the
// command (or the source) of its figures. It is a module of its own so
// that the runtime's dependencies stay three.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

func main() {
	out := flag.String("o", ".", "directory the charts are written to")
	format := flag.String("format", "svg", "svg, or png to look at them without a browser")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: plot [-o dir] report.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *format != "svg" && *format != "png" {
		fmt.Fprintf(os.Stderr, "plot: -format %s: svg or png\n", *format)
		os.Exit(2)
	}
	written, err := run(*out, *format, flag.Args())
	for _, w := range written {
		fmt.Println("wrote", w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

// run reads the files and writes the charts into dir in format (svg or
// png); it returns the files written.
func run(dir, format string, files []string) ([]string, error) {
	var rs Reports
	for _, f := range files {
		if err := rs.readFile(f); err != nil {
			return nil, err
		}
	}
	type figure struct {
		name   string
		env    *Envelope
		charts func() ([]*plot.Plot, error)
	}
	var figs []figure
	if rs.Latency != nil {
		figs = append(figs, figure{"p2p", &rs.Latency.Envelope, func() ([]*plot.Plot, error) { return p2pCharts(rs.Latency) }})
	}
	if rs.Coll != nil {
		figs = append(figs, figure{"coll", &rs.Coll.Envelope, func() ([]*plot.Plot, error) { return collCharts(rs.Coll) }})
	}
	if rs.ULFM != nil {
		figs = append(figs, figure{"ulfm", &rs.ULFM.Envelope, func() ([]*plot.Plot, error) { return ulfmCharts(rs.ULFM) }})
	}
	if rs.Footprint != nil {
		figs = append(figs, figure{"footprint", &rs.Footprint.Envelope, func() ([]*plot.Plot, error) { return footprintChart(rs.Footprint) }})
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("no report with a chart in %s", strings.Join(files, ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range figs {
		ps, err := f.charts()
		if err != nil {
			return written, fmt.Errorf("%s: %v", f.name, err)
		}
		if len(ps) == 0 {
			continue // the report had no figures for it
		}
		path := filepath.Join(dir, f.name+"."+format)
		if err := save(path, format, ps, footer(f.env)); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// footer says where the figures come from: the date and the command,
// then the source if the figures were not written by a report.
func footer(e *Envelope) []string {
	lines := []string{e.Date}
	if e.Command != "" {
		lines[0] += " · " + e.Command
	}
	if e.Source != "" {
		lines = append(lines, e.Source)
	}
	return lines
}

// wrap breaks lines at spaces so that none is wider than w in face.
func wrap(lines []string, face font.Face, w vg.Length) []string {
	var out []string
	for _, l := range lines {
		cur := ""
		for _, word := range strings.Fields(l) {
			if cur != "" && face.Width(cur+" "+word) > w {
				out = append(out, cur)
				cur = word
				continue
			}
			if cur != "" {
				cur += " "
			}
			cur += word
		}
		out = append(out, cur)
	}
	return out
}

// save draws the panels side by side, the footer below them.
func save(path, format string, ps []*plot.Plot, foot []string) error {
	const panelW, panelH, lineH = 5.5 * vg.Inch, 4 * vg.Inch, 11
	face := font.DefaultCache.Lookup(plot.DefaultFont, vg.Points(8))
	w := panelW * vg.Length(len(ps))
	foot = wrap(foot, face, w-vg.Inch/5)
	footH := vg.Length(len(foot))*lineH + 6
	h := panelH + footH
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if format == "png" {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))}
	} else {
		// Fonts are named, not embedded: a chart stays a few KiB.
		c = vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(false))
	}
	dc := draw.New(c)
	top := draw.Crop(dc, 0, 0, footH, 0)
	tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Inch / 4, PadTop: vg.Inch / 10, PadLeft: vg.Inch / 10, PadRight: vg.Inch / 10}
	canvases := plot.Align([][]*plot.Plot{ps}, tiles, top)
	for i, p := range ps {
		p.Draw(canvases[0][i])
	}
	for i, l := range foot {
		dc.FillString(face, vg.Point{X: vg.Inch / 10, Y: footH - vg.Length(i+1)*lineH}, l)
	}
	return writeFile(path, c)
}

func writeFile(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
